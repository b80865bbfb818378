"""The verification report (``pyverify report``): ``reports/`` regenerated from scratch.

Entry point :func:`generate_report`; the phases live in
:mod:`pyverify.report.phases` (each replaceable via :class:`Phases`), the
aggregation in :mod:`~pyverify.report.aggregate`, each phase's JSON in
:mod:`~pyverify.report.data`, the Markdown in
:mod:`~pyverify.report.render`, the figures in :mod:`~pyverify.report.plots`
and the deterministic JSON in :mod:`~pyverify.report.serialize`; the traceability
matrix of ``pyverify trace`` in :mod:`~pyverify.report.trace` and the study's figures in
:mod:`~pyverify.report.collapse_plots`.
"""

from __future__ import annotations

from pyverify.report.aggregate import aggregate_tests, theorem_rows
from pyverify.report.data import environment_data, verification_data
from pyverify.report.generate import OUTPUT_FILES, Phases, generate_report

__all__ = [
    "OUTPUT_FILES",
    "Phases",
    "aggregate_tests",
    "environment_data",
    "generate_report",
    "theorem_rows",
    "verification_data",
]
