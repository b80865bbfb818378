"""The rules on A's structure and the mechanism: E3 (rank one), E6 (three stages), N2, N3 (rows)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from pyverify.claims.common import AUDIT, Numbers, g_premise, m3, s_keys, s_main, trend_numbers
from pyverify.claims.stats import flat, mmm, op_grid
from pyverify.claims.subject import Subject, TrendCall, outcome
from pyverify.claims.thresholds import (
    A_LM_FULL_RANK_FRAC,
    COLLAPSED,
    CONTRACTIVE,
    INIT_NOT_SINGULAR,
    RANK_ONE,
    REOPEN_RTOL,
    ROW_COLLAPSED,
    TWIRLED,
)
from pyverify.claims.trends import TREND_CI, series_getters, trend
from pyverify.claims.verdict import (  # as in collapse_rules: an import list, not a copy
    HOLDS_AT_INIT,
    INCONCLUSIVE,
    NOT_MEASURED,
    NOT_SUPPORTED,
    SUPPORTED,
    TRENDING_AWAY,
    TRENDING_TOWARD,
    Verdict,
)

__all__ = [
    "e3",
    "e6",
    "n2",
    "n3",
    "reopenings",
]


def e3(s: Subject, frozen: Subject | None = None) -> Verdict:
    """E3: A rank one with identical rows (learned, not inherited), A_LM near full rank.

    Without a step-0 record (a checkpoint) whether the singularity is learned or
    inherited cannot be told, and the rule decides on the end alone (said in the caveat).
    """
    rule = (
        f"supported if at the end sigma2/sigma1 and the identical-rows residual of A are <= "
        f"{RANK_ONE:g} in every head, at step 0 the median sigma2/sigma1 is > {INIT_NOT_SINGULAR:g}"
        f" (where a step 0 is recorded) and A_LM's median numerical rank >= "
        f"{A_LM_FULL_RANK_FRAC:g} dk; not supported if the final median sigma2/sigma1 of A is > "
        f"{INIT_NOT_SINGULAR:g}; else inconclusive; the frozen control (metric learner at init) "
        "shows how much of a drop of sigma2/sigma1 the query weights alone give"
    )
    rec = s.last
    ratio = flat(rec["sigma2_over_sigma1_A"])
    rows = flat(rec["identical_rows_residual_A"])
    rank_lm = flat(rec["numerical_rank_A_LM"])
    nums: Numbers = {}
    init_ok = True
    if s.from_init:
        init_ratio = mmm(flat(s.history[0]["sigma2_over_sigma1_A"]))[1]
        nums["sigma2/sigma1 A step 0 median"] = init_ratio
        init_ok = init_ratio > INIT_NOT_SINGULAR
    nums.update(
        {
            "sigma2/sigma1 A end min/median/max": m3(ratio),
            "identical-rows residual max": max(rows),
            "cross-head residual max": max(flat(rec["cross_head_residual_A"])),
            "A_LM rank median": mmm(rank_lm)[1],
            "dk": s.dk,
            "A_LM floor fraction max": max(flat(rec["floor_fraction_A_LM"])),
        }
    )
    if frozen is not None and frozen.history:
        nums["control frozen: sigma2/sigma1 A end median"] = mmm(
            flat(frozen.last["sigma2_over_sigma1_A"])
        )[1]

    def decide() -> str:
        if (
            max(ratio) <= RANK_ONE
            and max(rows) <= RANK_ONE
            and init_ok
            and mmm(rank_lm)[1] >= A_LM_FULL_RANK_FRAC * s.dk
        ):
            return SUPPORTED
        return NOT_SUPPORTED if mmm(ratio)[1] > INIT_NOT_SINGULAR else INCONCLUSIVE

    caveat = AUDIT if s.from_init else AUDIT + "; learned vs inherited: not decidable here"
    tc = _ratio_trend(s, frozen) if s.from_init else None
    return outcome("E3", [s], rule=rule, scope=s.scope, caveat=caveat, numbers=nums,
                   decide=decide, trend=tc)  # fmt: skip


def _ratio_trend(s: Subject, frozen: Subject | None) -> TrendCall:
    """E3's trend, shown and never deciding: sigma2/sigma1 of A beside the frozen control's.

    The query weights alone can move it, so a fall is no evidence of a learned
    singularity unless it outpaces the control's.
    """
    name = "sigma2/sigma1 A"
    runs = [s] + ([frozen] if frozen is not None and frozen.history else [])
    trs = [trend(r.history, name, series_getters(r.history[0])[name]) for r in runs]
    nums = {f"{r.by} {t.series} log-slope": t.text() for r, t in zip(runs, trs, strict=True)}
    words = ", ".join(f"{r.by} {t.direction}" for r, t in zip(runs, trs, strict=True))
    return TrendCall(None, f"{name} ({words}); shown, not deciding", nums)


def _legs(rec: dict[str, Any]) -> dict[str, bool | None]:
    """Whether each stage of E6 holds in one record (None: not measured)."""
    keys = s_keys(rec)
    comm = rec.get("commutant_residual_rho")
    return {
        "twirl": None if comm is None else max(flat(comm)) <= TWIRLED,
        "concentration": None
        if len(keys) < 2
        else mmm(op_grid(rec, "A", keys[-1]))[1] < mmm(op_grid(rec, "A", keys[0]))[1],
        "contraction": max(flat(rec["jacobian_top_sv"])) < CONTRACTIVE,
    }


def _leg_status(s: Subject) -> dict[str, str]:
    end = _legs(s.last)
    init = _legs(s.history[0]) if s.from_init else {}
    out = {}
    for k, v in end.items():
        if v is None:
            out[k] = "not measured"
        elif not v:
            out[k] = "fails"
        elif not s.from_init:
            out[k] = "holds (no step 0 to compare)"
        elif init.get(k) is None:
            out[k] = "holds (not measured at step 0)"
        else:
            out[k] = "holds at init" if init[k] else "brought about by training"
    return out


def e6(s: Subject) -> Verdict:
    """E6: the three stages, each at step 0 and at the end, on a collapsed model."""
    rule = (
        f"on a collapsed model, three stages: twirl (RoPE-commutant residual of the probe-mean "
        f"DENSITY OPERATOR rho = Q^T Q / S <= {TWIRLED:g} in every head), concentration (median "
        f"order parameter of A lower at the longer S), contraction (the metric learner's "
        f"Jacobian top singular value < {CONTRACTIVE:g} on visited rows); each at step 0 and at "
        "the end. Not supported if a stage fails at the end (a collapse the mechanism does not "
        "explain); supported if every stage holds at the end and at least one was brought about "
        "by training; inconclusive (holds at init) if every stage already held at step 0: a "
        "stage that holds at init is not evidence"
    )
    premise, met, nums = g_premise(s)
    status = _leg_status(s)
    rec = s.last
    keys = s_keys(rec)
    for label, r in (("step 0", s.history[0]), ("end", rec)) if s.from_init else (("end", rec),):
        if "commutant_residual_rho" in r:
            nums[f"rho commutant residual {label} max"] = max(flat(r["commutant_residual_rho"]))
            tw = r["twirl_rho"]
            nums[f"rho commutant energy fraction {label} min/median/max"] = m3(
                flat(tw["commutant_fraction"])
            )
            nums[f"off-commutant suppression {label} min/median/max"] = m3(
                flat(tw["offcommutant_suppression"])
            )
        if len(keys) >= 2:
            nums[f"A median (S={keys[0]} / S={keys[-1]}) {label}"] = (
                f"{mmm(op_grid(r, 'A', keys[0]))[1]:.3g} / {mmm(op_grid(r, 'A', keys[-1]))[1]:.3g}"
            )
        nums[f"Jacobian top sv {label} max"] = max(flat(r["jacobian_top_sv"]))
    nums["G commutant residual end max (the former leg's object)"] = max(
        flat(rec["commutant_residual_G"])
    )
    nums.update({f"stage {k}": v for k, v in status.items()})

    def decide() -> str | tuple[str, str]:
        vals = set(status.values())
        if "fails" in vals:
            return NOT_SUPPORTED
        if "not measured" in vals:
            return INCONCLUSIVE, NOT_MEASURED
        if vals == {"holds at init"}:
            return INCONCLUSIVE, HOLDS_AT_INIT
        return SUPPORTED

    caveat = (
        "a uniform twirl over S positions damps off-commutant entries by a median factor of "
        "about 0.27 at S = 64 and 0.013 at S = 1024 (the author's audit, twirl_analytic), so "
        "the leg is harder to meet at this specimen's contexts than at the paper's; the audit "
        "of the collapsed 110M-5 finds about 11 % of the rotated density operator's energy in "
        "the commutant (docs/paper-claims.md)"
    )
    if not s.from_init:
        caveat += "; whether a stage holds at init is not decidable without step 0"
    return outcome("E6", [s], rule=rule, scope=s.scope, caveat=caveat, numbers=nums,
                   premise=premise, premise_met=met, decide=decide)  # fmt: skip


def n2(s: Subject) -> Verdict:
    """N2: row collapse (row energy of A) and context invariance (A's order parameter) apart."""
    rule = (
        f"per layer x head in every record: rows collapsed if the row energy of A is <= "
        f"{ROW_COLLAPSED:g}, context-invariant if A's order parameter (longest S) is <= "
        f"{COLLAPSED:g}; premise: one of the two holds somewhere (else there is nothing to "
        "separate); supported if somewhere one holds without the other; else inconclusive. "
        "Trend (where the end point cannot decide): trending toward if the two log-slopes' "
        "intervals exclude 0 with opposite signs, away if with the same sign (they move together)"
    )
    recs = s.history if s.from_init else [s.last]
    if any("row_energy_A" not in r for r in recs):
        return outcome("N2", [s], rule=rule, scope=s.scope, caveat="", numbers={},
                       premise="row energy recorded", premise_met=None,
                       decide=lambda: INCONCLUSIVE)  # fmt: skip
    S = s_main(s.last)
    either = split = 0
    for r in recs:
        for row, inv in zip(flat(r["row_energy_A"]), op_grid(r, "A", S), strict=True):
            a, b = row <= ROW_COLLAPSED, inv <= COLLAPSED
            either += a or b
            split += a != b
    nums: Numbers = {
        "row energy A end min/median/max": m3(flat(s.last["row_energy_A"])),
        f"A order param. end (S={S}) min/median/max": m3(op_grid(s.last, "A", S)),
        "head-states with either collapse": either,
        "head-states with one without the other": split,
    }
    tc = None
    if s.from_init:
        getters = series_getters(s.history[0])
        tr = trend(s.history, "row energy A", getters["row energy A"])
        ta = trend(s.history, f"A (S={S})", getters[f"A (S={S})"])
        dirs = (tr.direction, ta.direction)
        tnums = trend_numbers((tr, ta))
        moving = {"falling", "rising"}
        if set(dirs) <= moving and dirs[0] != dirs[1]:
            tc = TrendCall(
                TRENDING_TOWARD,
                "row energy and A's order parameter move apart "
                f"(one falls, one rises; {TREND_CI:.0%} intervals exclude 0)",
                tnums,
            )
        elif set(dirs) <= moving:
            tc = TrendCall(
                TRENDING_AWAY,
                f"row energy and A's order parameter both {dirs[0]} "
                f"({TREND_CI:.0%} intervals exclude 0)",
                tnums,
            )
        else:
            tc = TrendCall(None, f"no joint trend read (row energy: {dirs[0]}; A: {dirs[1]})",
                           tnums)  # fmt: skip
    return outcome(
        "N2", [s], rule=rule, scope=s.scope, caveat="the author's row energy is the mean over "
        "inputs of the squared identical-rows residual", numbers=nums,
        premise="rows collapsed or context-invariant in some head and record",
        premise_met=either > 0, decide=lambda: SUPPORTED if split else INCONCLUSIVE, trend=tc,
    )  # fmt: skip


def reopenings(history: Sequence[dict[str, Any]]) -> tuple[int, int, float]:
    """``(re-opening increments, increments, largest relative re-opening)`` of the row energy."""
    n = up = 0
    worst = 0.0
    for a, b in itertools.pairwise(history):
        for x, y in zip(flat(a["row_energy_A"]), flat(b["row_energy_A"]), strict=True):
            n += 1
            if y - x > REOPEN_RTOL * x:
                up += 1
                worst = max(worst, (y - x) / x if x > 0 else float("inf"))
    return up, n, worst


def n3(s: Subject, others: Sequence[Subject] = ()) -> Verdict:
    """N3: the fraction of row-energy increments that re-open, from the run's history."""
    rule = (
        f"per layer x head between consecutive records (every measure_every steps): an increment "
        f"re-opens if it exceeds {REOPEN_RTOL:g} of the previous row energy; supported (not "
        "monotone) if any increment of the run re-opens; not supported if none does (monotone "
        "at this sampling: a finer grid could still see re-openings); premise: >= 2 records"
    )
    hist = s.history
    if any("row_energy_A" not in r for r in hist):
        return outcome("N3", [s], rule=rule, scope=s.scope, caveat="", numbers={},
                       premise="row energy recorded", premise_met=None,
                       decide=lambda: INCONCLUSIVE)  # fmt: skip
    up, n, worst = reopenings(hist)
    nums: Numbers = {"re-opening increments": f"{up} of {n}"}
    if up:
        nums["largest relative re-opening"] = worst
    for o in others:
        if o.history and all("row_energy_A" in r for r in o.history):
            u, m, _ = reopenings(o.history)
            nums[f"{o.by} re-opening increments"] = f"{u} of {m}"
    caveat = (
        "the author's figure (43.3 % of 304,128 increments, docs/paper-claims.md) is per "
        "optimiser step on their grid; here increments span measure_every steps"
    )
    return outcome("N3", [s], rule=rule, scope=s.scope, caveat=caveat, numbers=nums,
                   premise=">= 2 records", premise_met=n > 0,
                   decide=lambda: SUPPORTED if up else NOT_SUPPORTED)  # fmt: skip
