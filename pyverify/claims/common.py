"""What the verdict rules share: run names, the row order, probe lengths, G's premise, trends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyverify.claims.stats import mmm, op_grid
from pyverify.claims.subject import Subject, TrendCall, run_gate
from pyverify.claims.thresholds import COLLAPSED
from pyverify.claims.trends import TREND_CI, Trend, series_getters, trend
from pyverify.claims.verdict import TRENDING_AWAY, TRENDING_TOWARD

__all__ = [
    "AUDIT",
    "AUTHOR",
    "CI_TEXT",
    "FROZEN",
    "ROW_ORDER",
    "SUB",
    "TENSORS",
    "Numbers",
    "falling_trend",
    "g_collapsed",
    "g_premise",
    "g_trends",
    "gate",
    "m3",
    "s_keys",
    "s_main",
    "trend_numbers",
]

AUTHOR, SUB, FROZEN = "author", "subcritical", "frozen"
ROW_ORDER = ("E1", "E2", "E3", "E4", "E5", "E6", "E7", "E8", "N1", "N2", "N3", "N7")
AUDIT = (
    "a verdict on the small specimen, not on the released checkpoints: the author's audit "
    "of 110M-5 (docs/paper-claims.md) finds G bitwise invariant and A rank one; "
    "`pyverify diagnose --checkpoint` decides these rows on a checkpoint"
)
Numbers = dict[str, float | int | str]
TENSORS = ("A", "A_LM", "A_P", "G")


def s_keys(rec: dict[str, Any]) -> list[str]:
    """The probe-set names of a record's order parameter, shortest context first."""
    keys = list(rec["order_parameter"])
    return sorted(keys, key=int) if all(k.isdigit() for k in keys) else keys


def s_main(rec: dict[str, Any]) -> str:
    """The main probe set (the longest context)."""
    return s_keys(rec)[-1]


def m3(values: list[float]) -> str:
    """``min / median / max`` of ``values``, three significant digits each."""
    lo, med, hi = mmm(values)
    return f"{lo:.3g} / {med:.3g} / {hi:.3g}"


def g_collapsed(rec: dict[str, Any]) -> bool:
    """G's order parameter at most COLLAPSED in every layer x head at every probe length."""
    return all(x <= COLLAPSED for S in s_keys(rec) for x in op_grid(rec, "G", S))


def g_premise(s: Subject) -> tuple[str, bool, Numbers]:
    """The premise of a claim about a collapsed model, its status and what was measured."""
    rec = s.last
    nums: Numbers = {f"G order param. (S={S}) min/median/max": m3(op_grid(rec, "G", S))
                     for S in s_keys(rec)}  # fmt: skip
    text = f"G collapsed: order parameter <= {COLLAPSED:g} in every layer x head at every S"
    return text, g_collapsed(rec), nums


def gate(result: dict[str, Any], name: str = AUTHOR) -> tuple[bool, str]:
    """Whether run ``name`` passes the study's gate, with the sentence and its figures.

    The figures carry no unit: losses (nats a token of the corpus) or answer accuracies
    (recall), as :func:`~pyverify.claims.subject.gate_against` names them.
    """
    g = run_gate(result, name)
    figs = ", ".join(f"{k} {x:.3f}" for k, x in g.figures.items())
    return g.passed, g.why + (f" ({figs})" if figs else "")


def trend_numbers(trs: Sequence[Trend], prefix: str = "") -> Numbers:
    """Each trend's log-slope text, keyed by its series (after ``prefix``)."""
    return {f"{prefix}{t.series} log-slope": t.text() for t in trs}


def g_trends(s: Subject) -> list[Trend]:
    """G's order-parameter trend at every probe length of the run."""
    getters = series_getters(s.history[0])
    return [trend(s.history, f"G (S={S})", getters[f"G (S={S})"]) for S in s_keys(s.last)]


CI_TEXT = f"{TREND_CI:.0%} interval of the mean log-slope over layer x head"


def falling_trend(s: Subject, what: str) -> TrendCall:
    """E1's trend: G falling (toward invariance) or rising at every S."""
    trs = g_trends(s)
    dirs = {t.direction for t in trs}
    nums = trend_numbers(trs, f"{s.by} ")
    if dirs == {"falling"}:
        return TrendCall(TRENDING_TOWARD, f"{what} falls at every S ({CI_TEXT} below 0)", nums)
    if dirs == {"rising"}:
        return TrendCall(TRENDING_AWAY, f"{what} rises at every S ({CI_TEXT} above 0)", nums)
    status = ", ".join(sorted(dirs))
    return TrendCall(None, f"{what}: no trend read at every S ({status})", nums)
