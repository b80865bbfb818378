"""``pyverify diagnose``, ``report`` and ``bench``: figures, reports and benchmark ratios."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyverify.cli.args import int_at_least, seed_arg
from pyverify.errors import InputValueError
from pyverify.output import check_output_dir, check_output_file, progress, write_json

if TYPE_CHECKING:
    pass


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


def register_bench(sub: Any) -> None:
    """Add ``pyverify bench [--quick] [--device D] [-o FILE]``."""
    p = sub.add_parser("bench", help="benchmark ratios P1-P3, measured side by side")
    p.add_argument("--quick", action="store_true", help="a few shapes only")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("-o", "--output", help="also save the JSON here")
    p.set_defaults(func=cmd_bench)


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


def register_diagnose(sub: Any) -> None:
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
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of the live model (with --model)")
    p.add_argument("--checkpoint", help="a pldr_model_v510 state dict (torch.save file)")
    p.add_argument("--tokens", help="prompts for --checkpoint (.npy, .json or text lines)")
    p.add_argument(
        "--inputs",
        help="--checkpoint: a study's saved inputs (reports/collapse/runs/NAME/inputs.json)",
    )
    p.add_argument(
        "--new-tokens",
        type=int_at_least(1),
        default=16,
        help="--checkpoint: greedy tokens per prompt for cache fidelity (E2, E8)",
    )
    p.add_argument(
        "--continuation",
        type=int_at_least(1),
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


def register_report(sub: Any) -> None:
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
