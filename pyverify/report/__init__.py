"""The verification report (``pyverify report``): ``reports/`` regenerated from scratch.

Entry point :func:`generate_report`; the phases live in
:mod:`pyverify.report.phases` (each replaceable via :class:`Phases`), the
aggregation in :mod:`~pyverify.report.aggregate`, the Markdown in
:mod:`~pyverify.report.render`, the figures in :mod:`~pyverify.report.plots`
and the deterministic JSON in :mod:`~pyverify.report.serialize`.
"""

from __future__ import annotations

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
    "theorem_rows",
    "verification_data",
]
