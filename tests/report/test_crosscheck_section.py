"""The report's cross-check section: the proved bound shown once, a failure's reason shown."""

from __future__ import annotations

from pyverify.crosscheck import CrosscheckResult, CrosscheckRow
from pyverify.report.data import _crosscheck_data
from pyverify.report.render import _crosscheck_section


def _row(case: str, stage: str, passed: bool, **kw) -> CrosscheckRow:
    return CrosscheckRow(
        case=case, kind="random", path="kernels.uncached", against="reference.float64",
        shape=(1, 1, 4, 4), device="cpu", dtype="float32", stage=stage, max_rel=1e-6,
        median_rel=1e-6, passed=passed, **kw,
    )  # fmt: skip


def test_a_row_without_a_proved_bound_shows_why_it_failed():
    rows = [
        _row("a", "output", True, tolerance=1e-5, tolerance_rule="proved: fp_head_output",
             proved=1e-5, proved_ratio=0.1, proved_theorems=("fp_head_output",)),
        _row("b", "output", False, tolerance=0.0, tolerance_rule="no proved bound",
             proved_note="no proved bound: a score's error bound reaches 1: no softmax bound"),
    ]  # fmt: skip
    text = "\n".join(_crosscheck_section(_crosscheck_data(CrosscheckResult(rows=rows))))
    assert (
        "- FAILED `b` kernels.uncached output: no proved bound: a score's error bound "
        "reaches 1: no softmax bound"
    ) in text
    header = next(ln for ln in text.splitlines() if ln.startswith("| dtype | path | stage"))
    assert "proved bound" in header and "tolerance" not in header and "error/tol" not in header
    line = next(ln for ln in text.splitlines() if ln.startswith("| float32 | kernels.uncached"))
    assert "(1 of 2 cases bounded)" in line and "FAIL" in line
