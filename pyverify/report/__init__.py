"""The verification report (``pyverify report``): ``reports/`` regenerated from scratch.

Entry point :func:`generate_report`; the phases live in
:mod:`pyverify.report.phases` (each replaceable via :class:`Phases`), the
aggregation in :mod:`~pyverify.report.aggregate`, the Markdown in
:mod:`~pyverify.report.render`, the figures in :mod:`~pyverify.report.plots`
and the deterministic JSON in :mod:`~pyverify.report.serialize`.
"""

from __future__ import annotations

from typing import Any

from pyverify.report.aggregate import aggregate_tests, theorem_rows
from pyverify.report.generate import (
    OUTPUT_FILES,
    Phases,
    environment_data,
    generate_report,
    verification_data,
)

__all__ = [
    "OUTPUT_FILES",
    "Phases",
    "aggregate_tests",
    "environment_data",
    "generate_report",
    "register_cli",
    "theorem_rows",
    "verification_data",
]


def _cmd(args: Any) -> int:
    from pathlib import Path

    from pyverify.paths import repo_root

    out = Path(args.output) if args.output else repo_root() / "reports"
    return generate_report(
        out,
        lean=not args.no_lean,
        tests=not args.no_tests,
        bench=not args.no_bench,
        quick=args.quick,
    )


def register_cli(sub: Any) -> None:
    """Add the ``report`` sub-command to an ``argparse`` sub-parsers object.

    ``pyverify report [-o DIR] [--no-lean] [--no-tests] [--no-bench] [--quick]``;
    exit status 0 when everything passed.
    """
    p = sub.add_parser("report", help="regenerate reports/ (proofs, tests, cross-checks, ...)")
    p.add_argument("-o", "--output", default=None, help="report folder (default: <repo>/reports)")
    p.add_argument("--no-lean", action="store_true", help="skip the Lean build")
    p.add_argument("--no-tests", action="store_true", help="skip the property tests")
    p.add_argument("--no-bench", action="store_true", help="skip the benchmarks")
    p.add_argument("--quick", action="store_true", help="the quick cross-check sweep")
    p.set_defaults(func=_cmd)
