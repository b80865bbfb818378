"""``pyverify lean setup|build|manifest`` and ``pyverify trace``: the proofs and their tests."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyverify.output import check_output_dir, check_output_file, progress

if TYPE_CHECKING:
    from pyverify.lean.build import BuildResult
    from pyverify.lean.toolchain import Toolchain


def _lean_project(args: argparse.Namespace) -> Path:
    from pyverify.errors import ProjectError
    from pyverify.paths import repo_root

    if not args.project:
        return repo_root() / "lean"
    project = Path(args.project)
    if not project.is_dir():
        what = "is a file, not a folder" if project.exists() else "does not exist"
        raise ProjectError(f"lean {args.lean_command} --project: {project} {what}")
    return project


def _lean_home(args: argparse.Namespace) -> Path | None:
    """The ``--home`` folder, checked (one-line error for a file) before any work."""
    if not args.home:
        return None
    return check_output_dir(args.home, f"lean {args.lean_command} --home")


def cmd_lean_setup(args: argparse.Namespace) -> int:
    """Install or repair the embedded Lean toolchain."""
    from pyverify.lean.install import setup

    setup(_lean_home(args), progress)
    return 0


def _build(args: argparse.Namespace) -> tuple[Toolchain, Path, BuildResult]:
    from pyverify.lean.build import build, clean
    from pyverify.lean.install import find_toolchain

    project = _lean_project(args)
    tc = find_toolchain(args.toolchain, _lean_home(args), progress)
    if getattr(args, "clean", False):
        clean(project, tc)
    result = build(project, tc, jobs=args.jobs, progress=progress)
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

    if args.output:
        check_output_file(args.output, "lean manifest -o/--output")
    tc, project, result = _build(args)
    if not result.ok:
        _print_build(result)
        return 1
    data = manifest(project, tc, progress)
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


def cmd_trace(args: argparse.Namespace) -> int:
    """Print the trace matrix; fail on gaps."""
    from pyverify.paths import repo_root
    from pyverify.report.trace import run_trace

    return run_trace(repo_root())


def register_lean(sub: Any) -> None:
    """Add ``pyverify lean setup|build|manifest`` and ``pyverify trace``."""
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
