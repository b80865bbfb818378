"""``pyverify collapse`` and ``claims``: the ablation study and the claims ledger."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyverify.cli.args import int_at_least
from pyverify.errors import InputValueError, MissingInputError
from pyverify.output import check_output_dir, check_output_file, progress, write_json

if TYPE_CHECKING:
    from pyverify.collapse.config import RunConfig


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


def _job_options(args: argparse.Namespace) -> dict[str, Any]:
    """The study runner's job options (``run_collapse``, ``run_studies``) from the flags."""
    return {
        "resume": args.resume,
        "restart": args.restart,
        "jobs": args.jobs or 2,
        "threads": args.threads,
        "device": args.device,
    }


def _cmd_collapse(args: argparse.Namespace) -> int:
    """Run ``pyverify collapse``: one run's job (``--run``) or the whole study.

    Or only its estimate (``--dry-run``), or the recipe check (``--check-recipe``).
    """
    from pyverify.collapse.config import STUDY_RUNS
    from pyverify.collapse.merge import RUNS_DIR
    from pyverify.paths import repo_root

    study_dir = repo_root() / "reports" / "collapse"
    if args.regime:
        return _cmd_regime(args)
    if args.plots_only:
        if args.run:
            raise InputValueError("--plots-only draws a study's figures; it takes no --run")
        from pyverify.report.collapse_plots import draw_all

        out = check_output_dir(args.output or study_dir, "collapse -o/--output")
        for path in draw_all(out):
            print(f"wrote {path}")
        return 0
    cfg, name = _collapse_config(args)
    if args.run:
        from pyverify.collapse.job import check_run

        check_run(args.run, cfg)  # before the estimate: no timing for a run refused
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

        runs = (args.run,) if args.run else STUDY_RUNS
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
        run_collapse(cfg, out, progress=say is not None, log=progress, **_job_options(args))
    except JobFailedError as exc:
        print(f"pyverify: error: {exc}", file=sys.stderr)
        return exc.status
    from pyverify.report.collapse_plots import draw_all

    draw_all(out)
    print(f"wrote {out} (collapse.json, timings.json and figures)")
    return 0


def _cmd_regime(args: argparse.Namespace) -> int:
    """``pyverify collapse --regime NAME``: every seed's study of a regime, in one schedule."""
    from pyverify.collapse.regimes import regime, regime_studies
    from pyverify.collapse.runner import JobFailedError, run_studies
    from pyverify.paths import repo_root

    reg = regime(args.regime)
    for opt in ("run", "preset", "small", "settings", "corpus", "steps", "batch", "check_recipe"):
        if getattr(args, opt):
            flag = "--" + opt.replace("_", "-")
            raise InputValueError(
                f"--regime and {flag} exclude each other (a regime's settings are fixed in "
                "pyverify.collapse.regimes)"
            )
    base = check_output_dir(args.output or repo_root() / "reports" / reg.folder,
                            "collapse -o/--output")  # fmt: skip
    studies = regime_studies(base, reg)
    if args.plots_only:
        for path in _draw_regime(base, studies):
            print(f"wrote {path}")
        return 0
    if os.environ.get("RANK", "0") == "0" and (args.dry_run or not args.no_estimate):
        from pyverify.collapse.regime_estimate import format_regime_estimate, regime_estimate

        est = regime_estimate(
            reg, _collapse_device(args), jobs=args.jobs or 2, threads=args.threads
        )
        print(format_regime_estimate(est), flush=True)
    if args.dry_run:
        return 0
    try:
        run_studies(studies, progress=not args.no_progress, log=progress, **_job_options(args))
    except JobFailedError as exc:
        print(f"pyverify: error: {exc}", file=sys.stderr)
        return exc.status
    _draw_regime(base, studies)
    print(f"wrote {base} (each seed's collapse.json, timings.json and figures)")
    return 0


def _draw_regime(base: Path, studies: list[Any]) -> list[Path]:
    """Each seed's figures, and the regime's over seeds (when it has several)."""
    from pyverify.collapse.merge import RESULT_FILE
    from pyverify.output import read_json
    from pyverify.report.collapse_plots import draw_all
    from pyverify.report.regime_plots import draw_regime

    paths: list[Path] = []
    saved = {}
    for cfg, d, _runs in studies:
        paths += draw_all(d)
        saved[cfg.seed] = read_json(d / RESULT_FILE)
    return paths + (draw_regime(base, saved) if len(studies) > 1 else [])


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


def register_collapse(sub: Any) -> None:
    """Add the ``collapse`` sub-command to an ``argparse`` sub-parsers object.

    ``pyverify collapse [--run NAME] [-o DIR] [--preset P | --small | --settings FILE]
    [--corpus FILE] [--steps N] [--resume | --restart] [--jobs N] [--threads N]
    [--device D] [--dry-run | --check-recipe | --plots-only]``.
    """
    from pyverify.collapse.config import PRESETS, RUNS
    from pyverify.collapse.regimes import REGIMES

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
    p.add_argument(
        "--regime",
        choices=tuple(REGIMES),
        default=None,
        help="every seed of a regime (its own fixed settings, runs and seeds), into "
        "reports/<regime folder>/ (bytes: the study of --preset small)",
    )
    p.add_argument("--preset", choices=PRESETS, default=None, help="settings (default small)")
    p.add_argument("--small", action="store_true", help="the small study (a test, ~1 min)")
    p.add_argument(
        "--settings",
        metavar="FILE",
        help="settings from a JSON file (settings.json, run.json, collapse.json)",
    )
    p.add_argument("--corpus", metavar="FILE", default=None, help="a tokenised corpus (epilog)")
    p.add_argument("--steps", type=int_at_least(1), default=None, help="training steps per run")
    p.add_argument(
        "--batch",
        type=int_at_least(1),
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
        type=int_at_least(1),
        default=None,
        help="the whole study: runs trained at once (default 2)",
    )
    p.add_argument("--threads", type=int_at_least(1), default=1, help="torch threads per process")
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


def _cmd_claims(args: argparse.Namespace) -> int:
    """Print the claims ledger: every saved regime's, or the folders given with ``-i``."""
    from pyverify.claims.regimes import (
        format_regimes,
        given_regime,
        regimes_json,
        saved_regimes,
    )
    from pyverify.paths import repo_root

    if args.input:
        ledgers = [given_regime([Path(p) for p in args.input])]
    else:
        ledgers = saved_regimes(repo_root() / "reports")
        if not ledgers:
            raise MissingInputError(
                f"no saved study under {repo_root() / 'reports'}: run `pyverify collapse "
                "[--regime NAME]` first, or give run or study folders with -i"
            )
    if args.json:
        check_output_file(Path(args.json), "claims --json")
        write_json(Path(args.json), {"regimes": regimes_json(ledgers)})
    print(format_regimes(ledgers))
    return 0


def register_claims(sub: Any) -> None:
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
