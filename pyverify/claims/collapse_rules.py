"""The rules on G's order parameter: E1 (collapse), E4 (critical vs subcritical), E7 (phases)."""

from __future__ import annotations

from typing import Any

from pyverify.claims.common import (
    AUDIT,
    CI_TEXT,
    SUB,
    TENSORS,
    Numbers,
    falling_trend,
    g_premise,
    g_trends,
    m3,
    s_keys,
    s_main,
    trend_numbers,
)
from pyverify.claims.stats import mmm, op_grid, pair_values
from pyverify.claims.subject import Subject, TrendCall, outcome
from pyverify.claims.thresholds import COLLAPSED, MOVING
from pyverify.claims.trends import SIGNED_MEAN_FLOOR, TREND_CI, difference, signed_mean_conditioned
from pyverify.claims.verdict import (  # as in structure_rules: an import list, not a copy
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SUPPORTED,
    TRENDING_AWAY,
    TRENDING_TOWARD,
    Verdict,
)

__all__ = [
    "e1",
    "e4",
    "e7",
]


def e1(s: Subject, frozen: Subject | None = None) -> Verdict:
    """E1: every deductive tensor's order parameter at most COLLAPSED, both forms, every S."""
    rule = (
        f"supported if the final order parameter of A, A_LM, A_P, G is <= {COLLAPSED:g} in every "
        f"layer x head at every S and in the author's pairwise form (RMS, and signed-mean where "
        f"well-conditioned: denominator >= {SIGNED_MEAN_FLOOR:g} of the RMS scale); not "
        f"supported if the median over heads of G's is >= {MOVING:g}; else inconclusive; where "
        "the gate fails or the end point is between, G's trend (falling / rising at every S) "
        "gives trending toward / away"
    )
    rec = s.last
    S_all = s_keys(rec)
    S = S_all[-1]
    nums: Numbers = {}
    for SS in S_all:
        if s.from_init:
            nums[f"G step 0 (S={SS}) min/median/max"] = m3(op_grid(s.history[0], "G", SS))
        nums[f"G end (S={SS}) min/median/max"] = m3(op_grid(rec, "G", SS))
    if s.from_init:
        nums["G pairwise RMS step 0 min/median/max"] = m3(pair_values(s.history[0], "G"))
    nums["G pairwise RMS end min/median/max"] = m3(pair_values(rec, "G"))
    sm = [v for t in TENSORS for v in signed_mean_conditioned(rec["pairwise_order"][t])]
    good = [x for x, ok in sm if ok]
    nums["pairwise signed-mean ill-conditioned (all tensors)"] = (
        f"{len(sm) - len(good)} of {len(sm)}"
    )
    if good:
        nums["pairwise signed-mean, well-conditioned max"] = max(good)
    nums[f"A end (S={S}) median"] = mmm(op_grid(rec, "A", S))[1]
    if frozen is not None and frozen.history:
        nums[f"control frozen: G end (S={S}) median"] = mmm(op_grid(frozen.last, "G", S))[1]

    def decide() -> str:
        suite = [x for SS in S_all for t in TENSORS for x in op_grid(rec, t, SS)]
        rms = [x for t in TENSORS for x in pair_values(rec, t)]
        if max(suite + rms + good) <= COLLAPSED:
            return SUPPORTED
        return NOT_SUPPORTED if mmm(op_grid(rec, "G", S))[1] >= MOVING else INCONCLUSIVE

    return outcome(
        "E1", [s], rule=rule, scope=s.scope, caveat=AUDIT, numbers=nums, decide=decide,
        trend=falling_trend(s, "G's order parameter (suite form)") if s.from_init else None,
    )  # fmt: skip


def e4(author: Subject, sub: Subject | None) -> Verdict:
    """E4: the critical run collapses and the subcritical run does not (or their trends)."""
    rule = (
        f"premise: the critical (author) run collapsed (G's order parameter <= {COLLAPSED:g} in "
        f"every head at every S); then supported if subcritical's median is >= {MOVING:g}, not "
        f"supported if subcritical collapsed too, else inconclusive. Where the gate fails or the "
        "premise is absent: trending toward if author's G falls at every S and subcritical's "
        "slope exceeds author's at every S (the interval of the difference above 0); trending "
        "away if subcritical's slope is below author's at every S"
    )
    if sub is None or not sub.history:
        return outcome("E4", [author], rule=rule, scope=author.scope, caveat="", numbers={},
                       premise="a subcritical run", premise_met=None,
                       decide=lambda: INCONCLUSIVE, by=f"{author.by} vs {SUB}")  # fmt: skip
    S = s_main(author.last)
    nums: Numbers = {}
    for SS in s_keys(author.last):
        nums[f"author G end (S={SS}) min/median/max"] = m3(op_grid(author.last, "G", SS))
        nums[f"subcritical G end (S={SS}) min/median/max"] = m3(op_grid(sub.last, "G", SS))

    def decide() -> str:
        s3 = mmm(op_grid(sub.last, "G", S))
        if all(x <= COLLAPSED for SS in s_keys(sub.last) for x in op_grid(sub.last, "G", SS)):
            return NOT_SUPPORTED
        return SUPPORTED if s3[1] >= MOVING else INCONCLUSIVE

    ta, ts = g_trends(author), g_trends(sub)
    diffs = [difference(a, b) for a, b in zip(ta, ts, strict=True)]
    tnums = {**trend_numbers(ta, "author "), **trend_numbers(ts, "subcritical ")}
    tnums.update(
        {f"subcritical - author, {a.series}": d.text() for a, d in zip(ta, diffs, strict=True)}
    )
    dd = {d.direction for d in diffs}
    if {t.direction for t in ta} == {"falling"} and dd == {"higher"}:
        tc = TrendCall(
            TRENDING_TOWARD,
            "author's G falls and subcritical's slope is above "
            f"author's at every S ({CI_TEXT}, and of their difference)",
            tnums,
        )
    elif dd == {"lower"}:
        tc = TrendCall(
            TRENDING_AWAY,
            "subcritical's G slope is below author's at every S "
            f"(the {TREND_CI:.0%} interval of the difference below 0)",
            tnums,
        )
    else:
        tc = TrendCall(None, "no contrast read at every S (" + ", ".join(sorted(dd)) + ")", tnums)
    premise, met, _ = g_premise(author)
    return outcome(
        "E4", [author, sub], rule=rule, scope=author.scope, caveat=AUDIT, numbers=nums,
        premise="author run: " + premise, premise_met=met, decide=decide, trend=tc,
    )  # fmt: skip


def _phase(rec: dict[str, Any]) -> tuple[str, str]:
    """Phase of a record by the suite's form and by the author's pairwise form."""

    def of(values: list[float]) -> str:
        _lo, med, hi = mmm(values)
        return "collapsed" if hi <= COLLAPSED else "moving" if med >= MOVING else "between"

    return of(op_grid(rec, "G", s_main(rec))), of(pair_values(rec, "G"))


def e7(subjects: dict[str, Subject]) -> Verdict:
    """E7: where both phases occur, both order-parameter forms put every run in the same phase."""
    rule = (
        f"each run's final G is 'collapsed' (max <= {COLLAPSED:g}), 'moving' (median >= "
        f"{MOVING:g}) or 'between', by the suite's form and by the author's pairwise form "
        "(RMS); runs that pass the gate count; premise: both collapsed and moving runs occur "
        "(else there are no phases to separate); then supported if the forms agree on every "
        "run, not supported if they disagree on one"
    )
    used = {n: s for n, s in subjects.items() if s.history}
    passing = {n: s for n, s in used.items() if s.gate is None or s.gate.passed}
    phases = {n: _phase(s.last) for n, s in used.items()}
    nums: Numbers = {n: f"{p[0]} / {p[1]}" for n, p in phases.items()}
    seen = {phases[n][0] for n in passing}
    left_out = [n for n in used if n not in passing]
    caveat = "that the order parameter is 0 iff the tensor is input-invariant holds by its " \
        "definition" + (f"; runs left out (they fail the gate): {', '.join(left_out)}"
                        if passing and left_out else "")  # fmt: skip

    def decide() -> str:
        return NOT_SUPPORTED if any(a != b for n, (a, b) in phases.items() if n in passing) \
            else SUPPORTED  # fmt: skip

    scope = "the final record of every run that beats the best n-gram order"
    met = {"collapsed", "moving"} <= seen
    if not passing:  # the gate decides: inconclusive, not reproduced
        return outcome("E7", list(used.values()), rule=rule, scope=scope, caveat=caveat,
                       numbers=nums, premise="both phases among the runs", premise_met=met,
                       decide=decide, by="all runs")  # fmt: skip
    return outcome("E7", list(passing.values()), rule=rule, scope=scope, caveat=caveat,
                   numbers=nums, premise="both phases among the runs", premise_met=met,
                   decide=decide, by="all runs")  # fmt: skip
