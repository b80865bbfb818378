"""The ``pyverify`` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyverify.errors import InputValueError, UserError
from pyverify.output import check_output_dir, check_output_file, progress, write_json

if TYPE_CHECKING:
    from pyverify.collapse.config import RunConfig
    from pyverify.lean.build import BuildResult
    from pyverify.lean.toolchain import Toolchain


def _int_at_least(low: int, why: str = "") -> Callable[[str], int]:
    """An ``argparse`` type: an integer >= ``low`` (``why`` is added to the error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer; got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}{why}; got {value}")
        return value

    return parse


_seed = _int_at_least(0, " (a NumPy seed)")


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

    _register_crosscheck(sub)
    _register_diagnose(sub)
    _register_report(sub)
    _register_collapse(sub)
    _register_check(sub)
    _register_claims(sub)

    p = sub.add_parser("bench", help="benchmark ratios P1-P3, measured side by side")
    p.add_argument("--quick", action="store_true", help="a few shapes only")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("-o", "--output", help="also save the JSON here")
    p.set_defaults(func=cmd_bench)

    return parser


def cmd_trace(args: argparse.Namespace) -> int:
    """Print the trace matrix; fail on gaps."""
    from pyverify.paths import repo_root
    from pyverify.theorems.trace import run_trace

    return run_trace(repo_root())


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the benchmarks and print the ratio table."""
    from pyverify.bench import check_device, format_table, run_bench

    check_device(args.device)  # an unknown or absent device is the user's error
    out = check_output_file(args.output, "bench -o/--output") if args.output else None
    result = run_bench(device=args.device, quick=args.quick, out_json=out, progress=progress)
    print(format_table(result))
    for msg in result["meta"].get("skipped", []):
        print(msg)
    return 0


def _cmd_crosscheck(args: argparse.Namespace) -> int:
    """Run ``pyverify crosscheck``."""
    from pyverify.crosscheck import format_crosscheck, parse_shard, run_crosscheck

    if args.json:
        check_output_file(args.json, "crosscheck --json")
    result = run_crosscheck(
        devices=args.device,
        dtypes=args.dtype,
        quick=args.quick,
        shard=parse_shard(args.shard),
        progress=None if args.no_progress else progress,
    )
    print(format_crosscheck(result))
    if args.json:
        write_json(Path(args.json), result.to_dict())
    return 0 if result.ok else 1


def _register_crosscheck(sub: Any) -> None:
    """Add the ``crosscheck`` sub-command to an ``argparse`` sub-parsers object.

    ``pyverify crosscheck [--device D ...] [--dtype T ...] [--quick] [--shard k/n]
    [--json FILE]``; exit status 0 when every comparison passed, 1 otherwise.
    """
    p = sub.add_parser(
        "crosscheck",
        help="kernels vs float64 reference vs mpmath, every stage, dtype and device",
    )
    p.add_argument(
        "--device",
        action="append",
        default=None,
        help="torch device (repeatable; default: every available one)",
    )
    p.add_argument(
        "--dtype",
        action="append",
        default=None,
        help="float64, float32, bfloat16, float16 (repeatable; default: all)",
    )
    p.add_argument("--quick", action="store_true", help="the quick sweep (about a minute)")
    p.add_argument("--shard", default="1/1", help="run shard k of n (k/n), for CI matrices")
    p.add_argument("--json", default=None, help="also write the rows as JSON to this file")
    p.add_argument("--no-progress", action="store_true", help="no per-case lines on stderr")
    p.set_defaults(func=_cmd_crosscheck)


def _cmd_diagnose(args: argparse.Namespace) -> int:
    """Run ``pyverify diagnose``."""
    from pyverify.diagnose import format_diagnostics, run_diagnose, run_model_diagnose

    prog = None if args.no_progress else progress
    if args.json:
        check_output_file(args.json, "diagnose --json")
    results = []
    if getattr(args, "checkpoint", None):
        from pyverify.diagnose.checkpoint import format_checkpoint, run_checkpoint_diagnose

        d = run_checkpoint_diagnose(args.checkpoint, args.tokens, inputs=args.inputs,
                                    seed=args.seed, n_new=args.new_tokens,
                                    n_cont=args.continuation, progress=prog)  # fmt: skip
        results.append(d)
        print(format_checkpoint(d))
        print()
    elif getattr(args, "tokens", None) or getattr(args, "inputs", None):
        raise InputValueError(f"{'--tokens' if args.tokens else '--inputs'} needs --checkpoint")
    for name in args.files or (["trained"] if not (args.model or results) else []):
        d = run_diagnose(name, prog)
        results.append(d)
        print(format_diagnostics(d))
        print()
    if args.model:
        d = run_model_diagnose(seed=args.seed, progress=prog)
        results.append(d)
        print(format_diagnostics(d))
    if args.json:
        write_json(Path(args.json), results if len(results) != 1 else results[0])
    return 0


def _register_diagnose(sub: Any) -> None:
    """Add the ``diagnose`` sub-command to an ``argparse`` sub-parsers object.

    ``pyverify diagnose [FILE_OR_NAME ...] [--model] [--seed N] [--json FILE]``.
    """
    p = sub.add_parser("diagnose", help="diagnostics of G-cache files (and of a live model)")
    p.add_argument(
        "files",
        nargs="*",
        help="trained, identity, random_normal or a path to an .npz with G_LM (default: trained)",
    )
    p.add_argument("--model", action="store_true", help="order parameter / eps_G of a live model")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the live model (with --model)")
    p.add_argument("--checkpoint", help="a pldr_model_v510 state dict (torch.save file)")
    p.add_argument("--tokens", help="prompts for --checkpoint (.npy, .json or text lines)")
    p.add_argument(
        "--inputs",
        help="--checkpoint: a study's saved inputs (reports/collapse/runs/NAME/inputs.json)",
    )
    p.add_argument(
        "--new-tokens",
        type=_int_at_least(1),
        default=16,
        help="--checkpoint: greedy tokens per prompt for cache fidelity (E2, E8)",
    )
    p.add_argument(
        "--continuation",
        type=_int_at_least(1),
        default=16,
        help="--checkpoint: sampled tokens per continuation (pairwise order param.)",
    )
    p.add_argument("--json", default=None, help="also write the diagnostics as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=_cmd_diagnose)


def _cmd_report(args: argparse.Namespace) -> int:
    """Run ``pyverify report``."""
    from pyverify.paths import repo_root
    from pyverify.report import OUTPUT_FILES, generate_report

    out = Path(args.output) if args.output else repo_root() / "reports"
    check_output_dir(out, "report -o/--output", OUTPUT_FILES)
    return generate_report(
        out,
        lean=not args.no_lean,
        tests=not args.no_tests,
        bench=not args.no_bench,
        quick=args.quick,
        bench_anyway=args.bench_anyway,
        collapse=args.collapse,
    )


def _register_report(sub: Any) -> None:
    """Add the ``report`` sub-command to an ``argparse`` sub-parsers object.

    ``pyverify report [-o DIR] [--no-lean] [--no-tests] [--no-bench] [--quick]``;
    exit status 0 when everything passed.
    """
    p = sub.add_parser("report", help="regenerate reports/ (proofs, tests, cross-checks, ...)")
    p.add_argument("-o", "--output", default=None, help="report folder (default: <repo>/reports)")
    p.add_argument("--no-lean", action="store_true", help="skip the Lean build")
    p.add_argument("--no-tests", action="store_true", help="skip the property tests")
    p.add_argument("--no-bench", action="store_true", help="skip the benchmarks")
    p.add_argument(
        "--bench-anyway", action="store_true", help="keep benchmark figures taken under load"
    )
    p.add_argument("--quick", action="store_true", help="the quick cross-check sweep")
    p.add_argument("--collapse", action="store_true", help="rerun `pyverify collapse` first")
    p.set_defaults(func=_cmd_report)


def _collapse_config(args: argparse.Namespace) -> tuple[RunConfig, str]:
    """The settings and their name: ``--settings``, or ``--preset``/``--small``, ``--corpus``.

    ``--steps`` and ``--batch`` (the global batch) apply last.
    """
    from dataclasses import replace

    from pyverify.collapse.config import preset_config, small_config
    from pyverify.collapse.corpus import load_corpus
    from pyverify.collapse.job import read_settings

    if args.small and args.preset:
        raise InputValueError("--small (the one-minute test) and --preset exclude each other")
    if args.settings:
        if args.small or args.preset or args.corpus:
            raise InputValueError(
                "--settings and --small/--preset/--corpus exclude each other (the file "
                "carries the settings)"
            )
        cfg, name = read_settings(Path(args.settings)), f"settings of {args.settings}"
    else:
        vocab = load_corpus(args.corpus).vocab if args.corpus else None
        if args.small:
            name, cfg = "small (test size)", small_config()
            if args.corpus:
                cfg = replace(cfg, model=replace(cfg.model, vocab=vocab), corpus=args.corpus)
        else:
            name = args.preset or "small"
            cfg = preset_config(name, vocab=vocab, corpus=args.corpus)
    if args.steps is not None:
        cfg = replace(cfg, steps=args.steps)
    if args.batch is not None:
        cfg, name = replace(cfg, batch=args.batch), f"{name}, global batch {args.batch}"
    return cfg.validate(), name


def _collapse_device(args: argparse.Namespace) -> Any:
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise InputValueError("collapse --device cuda: CUDA is not available on this machine")
    return torch.device(args.device)


def _cmd_collapse(args: argparse.Namespace) -> int:
    """Run ``pyverify collapse``: one run's job (``--run``) or the whole study.

    Or only its estimate (``--dry-run``), or the recipe check (``--check-recipe``).
    """
    from pyverify.collapse.config import RUNS
    from pyverify.collapse.merge import RUNS_DIR
    from pyverify.paths import repo_root

    study_dir = repo_root() / "reports" / "collapse"
    if args.plots_only:
        if args.run:
            raise InputValueError("--plots-only draws a study's figures; it takes no --run")
        from pyverify.collapse.plots import draw_all

        out = check_output_dir(args.output or study_dir, "collapse -o/--output")
        for path in draw_all(out):
            print(f"wrote {path}")
        return 0
    if args.run and args.run not in RUNS:
        raise InputValueError(f"--run: unknown run {args.run!r} (known: {', '.join(RUNS)})")
    cfg, name = _collapse_config(args)
    device = _collapse_device(args)
    say = None if args.no_progress else progress
    if args.check_recipe:
        import torch

        from pyverify.collapse.recipe import check_recipe, format_recipe

        torch.set_num_threads(args.threads)
        res = check_recipe(cfg, preset=name, device=device, progress=say)
        print(format_recipe(res))
        return 0 if res.verdict == "PASS" else 1
    main_rank = os.environ.get("RANK", "0") == "0"
    if main_rank and (args.dry_run or not args.no_estimate):
        from pyverify.collapse.corpus import load_corpus
        from pyverify.collapse.estimate import estimate, format_estimate

        runs = (args.run,) if args.run else tuple(RUNS)
        est = estimate(cfg, device, preset=name, runs=runs)
        print(format_estimate(est, corpus_tokens=len(load_corpus(cfg.corpus).train)), flush=True)
    if args.dry_run:
        return 0
    if args.run:
        from pyverify.collapse.distributed import dist_env
        from pyverify.collapse.job import run_job

        if args.jobs is not None:
            raise InputValueError(
                "--jobs is the whole study's; one run's job takes its processes from its "
                "launcher (torchrun --nproc_per_node N)"
            )
        out = Path(args.output) if args.output else study_dir / RUNS_DIR / args.run
        env = dist_env(args.device)
        check_output_dir(out, "collapse -o/--output")
        done = run_job(
            cfg,
            args.run,
            out,
            env=env,
            resume=args.resume,
            restart=args.restart,
            threads=args.threads,
            progress=say,
        )
        if done is not None:
            print(f"wrote {out}")
        return 0
    from pyverify.collapse.runner import JobFailedError, run_collapse

    out = check_output_dir(args.output or study_dir, "collapse -o/--output")
    try:
        run_collapse(
            cfg,
            out,
            resume=args.resume,
            restart=args.restart,
            jobs=args.jobs or 2,
            threads=args.threads,
            device=args.device,
            progress=say is not None,
            log=progress,
        )
    except JobFailedError as exc:
        print(f"pyverify: error: {exc}", file=sys.stderr)
        return exc.status
    print(f"wrote {out}")
    return 0


_COLLAPSE_EPILOG = """\
one run, one job (a folder of its own; launchable by torchrun, a Slurm array or any
scheduler; rank 0 measures and writes):
  pyverify collapse --run author -o runs/author
  torchrun --standalone --nproc_per_node 2 -m pyverify.cli -- collapse --run author -o runs/author
  (the -- keeps torchrun from taking --run for its own --run-path)
the whole study on this machine (each run's job as a subprocess, --jobs at a time,
then merged into -o): pyverify collapse [-o DIR] [--jobs N]
merge run folders into one ledger: pyverify claims -i runs/*

presets (--preset): small (the study, the default), gpu-day (sized for about one
GPU-day), paper (the author's 110M model and recipe); each line of --dry-run says how.
Before training the estimate is printed (parameters, tokens, FLOPs, a step timed on the
device); --dry-run prints only that.
--corpus FILE: token ids (.npy, or raw uint16/uint32) with FILE.json {"vocab_size": N,
"dtype": ...}; the vendored byte corpus by default.

--check-recipe: the study's trainer against the author's (PYVERIFY_AUTHOR_SRC = a checkout
of burcgokden/PLDR-LLM-with-KVG-cache; torchtune importable). Exit status: 0 PASS;
1 FAIL, or INCONCLUSIVE (clipping never exercised); 2 a user error in one line, among
them PYVERIFY_AUTHOR_SRC unset (nothing is checked then).
"""


def _register_collapse(sub: Any) -> None:
    """Add the ``collapse`` sub-command to an ``argparse`` sub-parsers object.

    ``pyverify collapse [--run NAME] [-o DIR] [--preset P | --small | --settings FILE]
    [--corpus FILE] [--steps N] [--resume | --restart] [--jobs N] [--threads N]
    [--device D] [--dry-run | --check-recipe | --plots-only]``.
    """
    from pyverify.collapse.config import PRESETS, RUNS

    p = sub.add_parser(
        "collapse",
        help="the ablation study of the paper's empirical collapse",
        epilog=_COLLAPSE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--run", metavar="NAME", help=f"train and measure one run as one job: {', '.join(RUNS)}"
    )
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="the study's folder (default reports/collapse), or with --run the run's "
        "(default <study>/runs/NAME)",
    )
    p.add_argument("--study", choices=("ablation",), default="ablation", help="the study to run")
    p.add_argument("--preset", choices=PRESETS, default=None, help="settings (default small)")
    p.add_argument("--small", action="store_true", help="the small study (a test, ~1 min)")
    p.add_argument(
        "--settings",
        metavar="FILE",
        help="settings from a JSON file (settings.json, run.json, collapse.json)",
    )
    p.add_argument("--corpus", metavar="FILE", default=None, help="a tokenised corpus (epilog)")
    p.add_argument("--steps", type=_int_at_least(1), default=None, help="training steps per run")
    p.add_argument(
        "--batch",
        type=_int_at_least(1),
        default=None,
        help="global batch (rows a step; each of N torchrun processes trains batch / N; "
        "the author's BATCH_SIZE=16 is per GPU: 16 N on N GPUs)",
    )
    again = p.add_mutually_exclusive_group()
    again.add_argument(
        "--resume", action="store_true", help="continue the saved work (finished runs are kept)"
    )
    again.add_argument("--restart", action="store_true", help="discard the saved work")
    p.add_argument(
        "--jobs",
        type=_int_at_least(1),
        default=None,
        help="the whole study: runs trained at once (default 2)",
    )
    p.add_argument("--threads", type=_int_at_least(1), default=1, help="torch threads per process")
    p.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="training device (under torchrun: cuda:LOCAL_RANK, NCCL)",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument("--dry-run", action="store_true", help="print the estimate and stop")
    what.add_argument(
        "--check-recipe", action="store_true", help="the trainer against the author's (epilog)"
    )
    what.add_argument("--plots-only", action="store_true", help="redraw the figures from the JSON")
    p.add_argument(
        "--no-estimate", action="store_true", help="no estimate before training (the study's jobs)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress lines")
    p.set_defaults(func=_cmd_collapse)


def _cmd_check(args: argparse.Namespace) -> int:
    """Run ``pyverify check``: the theorem suite on one implementation."""
    from pyverify.conformance.run import parse_ids, run_check
    from pyverify.conformance.verdict import format_table, verdict, write_junit, write_reports

    ids = parse_ids(args.ids)
    folder = check_output_dir(args.output, "check -o/--output")
    junit = check_output_file(args.junit_xml, "check --junit-xml") if args.junit_xml else None
    run = run_check(
        args.impl,
        ids=ids,
        devices=args.device,
        dtypes=args.dtype,
        quick=args.quick,
        progress=None if args.no_progress else progress,
    )
    v = verdict(run)
    print(format_table(v))
    for path in write_reports(run, v, folder):
        print(f"wrote {path}")
    if junit is not None:
        write_junit(v, junit)
        print(f"wrote {junit}")
    if v["suite"] != "ran":
        print(run.log_tail, file=sys.stderr)
    return 0 if v["ok"] else 1


_CHECK_EPILOG = """\
exit status:
  0  no theorem ID failed (each passed, is not applicable or was not run) and the sweep
     passed
  1  a theorem ID failed (a smallest failing example is shown), the sweep failed, or the
     property suite did not run cleanly
  2  a user error, in one line: the module does not import, the factory is missing or
     raises, a declaration is missing or wrong, a declared group lacks a required method,
     an unknown or empty --ids, an undeclared --dtype/--device, an unwritable -o/--junit-xml

Writes DIR/<name>.md, DIR/<name>.json (deterministic), DIR/<name>.measured.json and the
--junit-xml FILE, nothing else (the property suite runs in a temporary folder).
Protocol and verdict rule: docs/conformance.md; the mathematics: docs/plga-spec.md.
"""


def _register_check(sub: Any) -> None:
    """Add ``pyverify check --impl module:factory [--ids ...] [--dtype T] [--device D] ...``.

    Exit 0 when no ID failed, 1 on a failure, 2 on a user error (the implementation cannot
    be loaded or breaks the protocol).
    """
    p = sub.add_parser(
        "check",
        help="run the theorem suite on your PLGA implementation",
        description="Run the property tests of every theorem ID, and a cross-check sweep "
        "against the float64 reference, on your implementation; one verdict per ID.",
        epilog=_CHECK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--impl",
        required=True,
        metavar="MODULE:FACTORY",
        help="the implementation (imported from the working directory or PYTHONPATH)",
    )
    p.add_argument(
        "--ids",
        action="append",
        metavar="ID,...",
        help="only these theorem IDs, comma-separated (repeatable; default: every "
        "ID, and then the sweep runs too)",
    )
    p.add_argument(
        "--dtype",
        action="append",
        help="only this declared dtype (repeatable; default: every declared one)",
    )
    p.add_argument(
        "--device",
        action="append",
        help="only this declared device (repeatable; default: every declared one)",
    )
    p.add_argument(
        "--quick", action="store_true", help="5 examples a test (default 30) and the short sweep"
    )
    p.add_argument(
        "-o",
        "--output",
        default="reports/conformance",
        metavar="DIR",
        help="report folder (default: reports/conformance under the working directory)",
    )
    p.add_argument(
        "--junit-xml",
        metavar="FILE",
        default=None,
        help="also write the verdict as JUnit XML (one test case per ID)",
    )
    p.add_argument("--no-progress", action="store_true",
                   help="no progress lines on stderr (default: one per test and sweep case, "
                   "with an ETA)")  # fmt: skip
    p.set_defaults(func=_cmd_check)


def _cmd_claims(args: argparse.Namespace) -> int:
    """Print the claims ledger computed from the saved study (or merged run folders)."""
    from pyverify.claims.ledger import format_ledger, ledger_json, load_ledger
    from pyverify.paths import repo_root

    srcs = [Path(p) for p in args.input] if args.input else [repo_root() / "reports" / "collapse"]
    result, ledger = load_ledger(srcs)
    if args.json:
        check_output_file(Path(args.json), "claims --json")
        write_json(Path(args.json), ledger_json(result, ledger))
    print(format_ledger(result, ledger))
    return 0


def _register_claims(sub: Any) -> None:
    """Add ``pyverify claims [-i DIR [DIR ...]] [--json FILE]`` (the claims ledger)."""
    p = sub.add_parser("claims", help="the claims ledger (E, N and F rows), each by a rule")
    p.add_argument(
        "-i",
        "--input",
        nargs="+",
        metavar="DIR",
        default=None,
        help="a study folder (default reports/collapse), or run folders to merge "
        "(runs of one study: their settings must agree)",
    )
    p.add_argument("--json", default=None, help="also write the float-free ledger here")
    p.set_defaults(func=_cmd_claims)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pyverify``; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("pyverify: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if not isinstance(exc, UserError):
            raise  # a bug in pyverify: show its traceback
        print(f"pyverify{_rank_tag()}: error: {exc}", file=sys.stderr)
        return 2


def _rank_tag() -> str:
    """`` [rank r/W]`` under a launcher of several processes (torchrun), else nothing.

    Every rank reports its own error; the tag says which printed it, since one that
    only some ranks meet (a missing CUDA device) must not be hidden behind rank 0.
    """
    world, rank = os.environ.get("WORLD_SIZE", "1"), os.environ.get("RANK", "0")
    return f" [rank {rank}/{world}]" if world.isdigit() and int(world) > 1 else ""


if __name__ == "__main__":
    sys.exit(main())
