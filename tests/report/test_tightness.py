"""The tightness section of the report (proved / measured per stage, float32 and bfloat16)."""

from __future__ import annotations

from pyverify.crosscheck import CrosscheckResult, CrosscheckRow, summarize
from pyverify.report.data import report_data
from pyverify.report.markdown import table
from pyverify.report.tightness import GOAL, REASONS, tightness_lines
from pyverify.testing.decoder_tightness import decoder_step_tightness


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


def test_the_decoder_step_is_measured_within_its_proved_bound_and_shown():
    """Seeded decoders (the same on every machine): every case is resolved by the theorem,
    none exceeds the bound, and the bound is not below the error (proved / measured >= 1);
    the row reaches the table with its reason when above the goal."""
    rows = decoder_step_tightness(cases=3)
    assert [r["path"] for r in rows] == [
        "kernels decoder, zero keys",
        "kernels decoder, keys, G given",
    ]
    for row in rows:
        assert row["stage"] == "decoder step" and row["dtype"] == "float32"
        assert row["proved_cases"] == 3 and row["violations"] == 0
        assert row["tightness_cases"] == 3
        assert row["tightness_worst"] >= row["tightness_median"] >= 1
        lines = "\n".join(tightness_lines([row], table))
        assert f"| float32 | {row['path']} | decoder step | 3 of 3 |" in lines
        if row["tightness_worst"] > GOAL:
            assert REASONS["decoder step"] in lines


def test_a_decoder_step_violation_fails_the_report():
    row = {"dtype": "float32", "path": "kernels decoder", "stage": "decoder step", "cases": 1,
           "proved_cases": 1, "violations": 0, "tightness_cases": 1, "tightness_worst": 5.0,
           "tightness_median": 5.0}  # fmt: skip
    phases = {"lean": {"status": "skipped"}, "tests": {"status": "skipped"},
              "crosscheck": CrosscheckResult(rows=[]), "diagnostics": {},
              "model": {}, "bench": {"status": "skipped"}, "options": {}}  # fmt: skip

    def status(dec):
        return report_data(**phases, decoder_step=dec)["status"]["decoder_step"]

    assert status([row]) == "passed" and status(None) == "skipped"
    assert status([{**row, "violations": 1}]) == "failed"
    assert status({"status": "error", "error": "x"}) == "error"


def test_the_reasons_fit_in_a_table_cell():
    """A ``|`` in a reason would be escaped in the Markdown cell, so the table would no
    longer hold the reason as written (``REASONS``' contract)."""
    assert all("|" not in reason for reason in REASONS.values())
