"""The tightness section of the report (proved / measured per stage, float32 and bfloat16)."""

from __future__ import annotations

from pyverify.crosscheck import CrosscheckResult, CrosscheckRow, summarize
from pyverify.report.markdown import table
from pyverify.report.tightness import GOAL, REASONS, tightness_lines


def _row(dtype: str, stage: str, case: str, ratio: float | None) -> CrosscheckRow:
    return CrosscheckRow(
        case=case, kind="random", path="kernels.uncached", against="reference.float64",
        shape=(1, 1, 4, 4), device="cpu", dtype=dtype, stage=stage, max_rel=1e-6,
        median_rel=1e-6, tolerance=1e-5, passed=True, proved=1e-4 if ratio else None,
        proved_ratio=ratio,
    )  # fmt: skip


def test_worst_and_median_over_cases_and_the_goal():
    rows = [
        _row("float32", "output", "a", 1 / 400), _row("float32", "output", "b", 1 / 50),
        _row("float32", "output", "c", 1 / 200), _row("float32", "G", "a", 1 / 3),
        _row("float32", "G", "b", 0.0),  # measured 0: no tightness
        _row("bfloat16", "output", "a", 1 / 5), _row("float64", "output", "a", 1 / 80),
        _row("bfloat16", "A", "a", None),  # no proved bound: not in the table
    ]  # fmt: skip
    summary = summarize(CrosscheckResult(rows=rows))
    out = {(s["dtype"], s["stage"]): s for s in summary}
    assert out[("float32", "output")]["tightness_worst"] == 400.0
    assert out[("float32", "output")]["tightness_median"] == 200.0
    assert out[("float32", "G")]["tightness_cases"] == 1
    text = "\n".join(tightness_lines(summary, table))
    assert "proved / measured" in text and "float64" not in text
    line = next(ln for ln in text.splitlines() if "| output |" in ln and "float32" in ln)
    assert "400" in line and "200" in line and f"above {GOAL:g}" in line
    assert REASONS["output"] in line
    g_line = next(ln for ln in text.splitlines() if "| G |" in ln)
    assert "1 of 2" in g_line and f"within {GOAL:g}" in g_line
    assert not any("| A |" in ln for ln in text.splitlines())
