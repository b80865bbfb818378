"""The ``pyverify`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pyverify import crosscheck, diagnose, report
from pyverify.lean.project import ProjectError
from pyverify.lean.toolchain import ToolchainError

if TYPE_CHECKING:
    from pyverify.lean.build import BuildResult
    from pyverify.lean.toolchain import Toolchain


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _lean_project(args: argparse.Namespace) -> Path:
    from pyverify.paths import repo_root

    return Path(args.project) if args.project else repo_root() / "lean"


def cmd_lean_setup(args: argparse.Namespace) -> int:
    """Install or repair the embedded Lean toolchain."""
    from pyverify.lean.toolchain import setup

    setup(Path(args.home) if args.home else None, _progress)
    return 0


def _build(args: argparse.Namespace) -> tuple[Toolchain, Path, BuildResult]:
    from pyverify.lean.build import build, clean
    from pyverify.lean.toolchain import find_toolchain

    project = _lean_project(args)
    tc = find_toolchain(args.toolchain, Path(args.home) if args.home else None, _progress)
    if getattr(args, "clean", False):
        clean(project, tc)
    result = build(project, tc, jobs=args.jobs, progress=_progress)
    return tc, project, result


def _print_build(result: BuildResult) -> None:
    for m in result.modules:
        if m.status == "built":
            print(f"  {m.name:<40} built   {m.seconds:7.1f} s")
        else:
            print(f"  {m.name:<40} {m.status}")
    for f in result.all_findings():
        print(f.format())
    verdict = "passed" if result.ok else "FAILED"
    print(f"lean build {verdict} ({result.toolchain}) in {result.seconds:.1f} s")


def cmd_lean_build(args: argparse.Namespace) -> int:
    """Build and audit the Lean library."""
    _tc, _project, result = _build(args)
    _print_build(result)
    return 0 if result.ok else 1


def cmd_lean_manifest(args: argparse.Namespace) -> int:
    """Build, then write the theorem manifest."""
    from pyverify.lean.manifest import dumps, id_problems, manifest, parse_theorems
    from pyverify.lean.project import load_package
    from pyverify.paths import repo_root

    tc, project, result = _build(args)
    if not result.ok:
        _print_build(result)
        return 1
    data = manifest(project, tc, _progress)
    out = Path(args.output) if args.output else repo_root() / "reports" / "lean_manifest.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(data), encoding="utf-8")
    theorems = data["theorems"]
    if not isinstance(theorems, list):  # pragma: no cover - manifest() always gives a list
        raise TypeError("manifest theorems must be a list")
    tagged = sum(1 for t in theorems if t["theorem_id"])
    print(f"wrote {out}: {len(theorems)} theorems, {tagged} tagged with a theorem ID")
    problems = id_problems(parse_theorems(load_package(project)))
    for p in problems:
        print(f"error: {p}")
    return 1 if problems else 0


def _add_lean_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--project", help="the Lean package folder (default: <repo>/lean)")
    p.add_argument("--home", help="embedded toolchain folder (default: $PYVERIFY_LEAN_HOME)")
    p.add_argument(
        "--toolchain",
        choices=("auto", "native", "wasm"),
        default="auto",
        help="auto: native lake when on PATH, else the embedded WebAssembly Lean",
    )
    p.add_argument("--jobs", type=int, default=None, help="parallel lean processes")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pyverify``."""
    parser = argparse.ArgumentParser(
        prog="pyverify",
        description="Lean 4 proofs about Power Law Graph Attention, tied to executable code.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    lean = sub.add_parser("lean", help="the Lean bridge: setup, build, manifest")
    lsub = lean.add_subparsers(dest="lean_command", required=True)
    p = lsub.add_parser("setup", help="install or repair the embedded Lean toolchain")
    p.add_argument("--home", help="toolchain folder (default: $PYVERIFY_LEAN_HOME)")
    p.set_defaults(func=cmd_lean_setup)
    p = lsub.add_parser("build", help="build and audit the Lean library")
    _add_lean_options(p)
    p.add_argument("--clean", action="store_true", help="forget cached object files first")
    p.set_defaults(func=cmd_lean_build)
    p = lsub.add_parser("manifest", help="build, then write the theorem manifest JSON")
    _add_lean_options(p)
    p.add_argument("-o", "--output", help="default: reports/lean_manifest.json")
    p.set_defaults(func=cmd_lean_manifest)

    p = sub.add_parser("trace", help="theorem ID x implementation matrix of the property tests")
    p.set_defaults(func=cmd_trace)

    for module in (crosscheck, diagnose, report):
        module.register_cli(sub)

    p = sub.add_parser("bench", help="benchmark ratios P1-P3, measured side by side")
    p.add_argument("--quick", action="store_true", help="a few shapes only")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("-o", "--output", help="also save the JSON here")
    p.set_defaults(func=cmd_bench)

    return parser


def cmd_trace(args: argparse.Namespace) -> int:
    """Print the trace matrix; fail on gaps."""
    from pyverify.paths import repo_root
    from pyverify.trace import run_trace

    return run_trace(repo_root())


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the benchmarks and print the ratio table."""
    from pyverify.bench import format_table, run_bench

    out = Path(args.output) if args.output else None
    result = run_bench(device=args.device, quick=args.quick, out_json=out, progress=_progress)
    print(format_table(result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pyverify``; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (ToolchainError, ProjectError, FileNotFoundError, ValueError, TypeError) as exc:
        print(f"pyverify: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pyverify: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
