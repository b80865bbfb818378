"""The verdict rules: one function per claim (E1-E8) and newer statement (N1-N3, N7).

A rule judges :class:`~pyverify.claims.subject.Subject` s (a study run, the
step-0 record of a run, or the single record of ``pyverify diagnose
--checkpoint``) in the schema of :mod:`pyverify.measure`. :func:`rules` judges
the saved study (``collapse.json``; ``timings.json`` for E5);
:func:`checkpoint_rules` judges a checkpoint with the same functions, without
a gate (a checkpoint's training is not the suite's to judge) and without step
0 or trends. Every outcome is computed here from the thresholds below;
nothing is typed in. Each rule states its scope and checks, in order
(:func:`~pyverify.claims.subject.outcome`): the gate of every run it uses, its
premise, then the end point; trends (:mod:`pyverify.claims.trends`) may name
the direction where the end point cannot decide.

Thresholds. ``COLLAPSED`` ... ``E5_REJECT`` were written before the first full
run of the study and are unchanged. ``E5_MIN_REPEATS``, ``N1_KL``, ``N1_RMS``,
``N1_MIN_REPLICAS``, ``ROW_COLLAPSED``, ``REOPEN_RTOL`` (here),
``SIGNED_MEAN_FLOOR`` and the trend settings (:mod:`pyverify.claims.trends`)
and ``LEAK_NATS`` (:mod:`pyverify.claims.findings`) were fixed before the
first full run of the phase-1 study, each with its reason; none is tuned
toward a result. E6's twirl leg moved from G to the density operator (the
object the paper and the author's audit name), under the same cut-off
``TWIRLED``.

A rule that gives the same outcome on the step-0 record as on a trained model
says why in its rule text (``tests/claims/test_init_and_frozen.py`` feeds every
rule both).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from pyverify.claims.findings import LEAK_NATS, comparison_row, exposure_finding, findings
from pyverify.claims.stats import flat, mmm, op_grid, pair_values
from pyverify.claims.subject import (
    Gate,
    Subject,
    TrendCall,
    best_ngram,
    outcome,
    run_gate,
    scale_line,
    study_subject,
)
from pyverify.claims.trends import (
    SIGNED_MEAN_FLOOR,
    TREND_CI,
    Trend,
    difference,
    series_getters,
    signed_mean_conditioned,
    trend,
)
from pyverify.claims.verdict import (
    BY_CONSTRUCTION,
    HOLDS_AT_INIT,
    INCONCLUSIVE,
    NOT_MEASURED,
    NOT_SUPPORTED,
    PREMISE_ABSENT,
    SUPPORTED,
    TRENDING_AWAY,
    TRENDING_TOWARD,
    Verdict,
)

__all__ = [
    "A_LM_FULL_RANK_FRAC",
    "BY_CONSTRUCTION_TEST",
    "COLLAPSED",
    "CONTRACTIVE",
    "E5_MIN_REPEATS",
    "E5_REJECT",
    "E5_SUPPORT",
    "INIT_NOT_SINGULAR",
    "LEAK_NATS",
    "MOVING",
    "N1_KL",
    "N1_MIN_REPLICAS",
    "N1_RMS",
    "RANK_ONE",
    "REOPEN_RTOL",
    "ROW_COLLAPSED",
    "TWIRLED",
    "Gate",
    "Subject",
    "best_ngram",
    "checkpoint_rules",
    "e1",
    "e2",
    "e3",
    "e4",
    "e5",
    "e6",
    "e7",
    "e8",
    "findings",
    "gate",
    "n1",
    "n2",
    "n3",
    "n7",
    "reopenings",
    "rules",
    "run_gate",
    "scale_line",
    "study_findings",
    "study_subject",
]

COLLAPSED = 1e-6
"""An order parameter at most this is collapsed (the paper reports 1e-6 to 1e-11)."""
MOVING = 1e-3
"""A median order parameter at least this is a moving operator (not invariant)."""
RANK_ONE = 1e-6
"""sigma2/sigma1 and identical-rows residual of A at most this: rank one, identical rows."""
INIT_NOT_SINGULAR = 1e-2
"""sigma2/sigma1 of A above this at step 0: the singularity is not inherited from the init."""
A_LM_FULL_RANK_FRAC = 0.5
"""A_LM "near full rank": median numerical rank at least this fraction of dk."""
TWIRLED = 0.1
"""RoPE-commutant residual at most this: the rotary twirl holds (now on the density operator)."""
CONTRACTIVE = 1.0
"""The metric learner's Jacobian top singular value below this on visited rows: contraction."""
E5_SUPPORT = 2.0
"""G-cache speed-up (over the author's KV-cache storing A) at least this: "about 3x" holds."""
E5_REJECT = 1.25
"""G-cache speed-up below this: not supported."""
E5_MIN_REPEATS = 5
"""E5's premise: at least this many interleaved timing repeats per run, so the spread of
the speed-up is seen (the first study kept the best of 3 and the same architecture gave
1.10x to 2.13x across runs)."""
N1_KL = 0.03
"""N1: mean KL (nats) of the mean-operator cache against full recomputation, at most this
(the author's target, ``cache_state_contract.py``)."""
N1_RMS = 0.25
"""N1: relative centred RMS at most this (the author's target; centred over replicas)."""
N1_MIN_REPLICAS = 2
"""N1: the relative centred RMS centres over independent training replicas: it needs at
least two per run (the author used six); the study trains one."""
ROW_COLLAPSED = RANK_ONE**2
"""N2: row energy of A (the author's ``row``) at most this: rows collapsed. The row energy
is the square of the identical-rows residual of one input, so this is E3's cut-off on
the residual, squared."""
REOPEN_RTOL = 1e-12
"""N3: a row-energy increment re-opens when it exceeds this fraction of the previous value:
far above float64 rounding of the statistic (about 1e-15 relative), so a counted re-opening
is a change of the model, not of the arithmetic (the probes are the same at every step)."""
BY_CONSTRUCTION_TEST = (
    "property_tests/test_cache_equivalence.py::"
    "test_any_stack_a_cached_decoding_equals_g_cached_decoding"
)
"""The property test showing that a cache keeping the prompt's A equals G-cache decoding."""

AUTHOR, SUB, FROZEN = "author", "subcritical", "frozen"
ROW_ORDER = ("E1", "E2", "E3", "E4", "E5", "E6", "E7", "E8", "N1", "N2", "N3", "N7")
AUDIT = (
    "a verdict on the small specimen, not on the released checkpoints: the author's audit "
    "of 110M-5 (docs/paper-claims.md) finds G bitwise invariant and A rank one; "
    "`pyverify diagnose --checkpoint` decides these rows on a checkpoint"
)
Numbers = dict[str, float | int | str]
TENSORS = ("A", "A_LM", "A_P", "G")


def _s_keys(rec: dict[str, Any]) -> list[str]:
    """The probe-set names of a record's order parameter, shortest context first."""
    keys = list(rec["order_parameter"])
    return sorted(keys, key=int) if all(k.isdigit() for k in keys) else keys


def _s_main(rec: dict[str, Any]) -> str:
    """The main probe set (the longest context)."""
    return _s_keys(rec)[-1]


def _m3(values: list[float]) -> str:
    lo, med, hi = mmm(values)
    return f"{lo:.3g} / {med:.3g} / {hi:.3g}"


def _g_collapsed(rec: dict[str, Any]) -> bool:
    """G's order parameter at most COLLAPSED in every layer x head at every probe length."""
    return all(x <= COLLAPSED for S in _s_keys(rec) for x in op_grid(rec, "G", S))


def _g_premise(s: Subject) -> tuple[str, bool, Numbers]:
    """The premise of a claim about a collapsed model, its status and what was measured."""
    rec = s.last
    nums: Numbers = {f"G order param. (S={S}) min/median/max": _m3(op_grid(rec, "G", S))
                     for S in _s_keys(rec)}  # fmt: skip
    text = f"G collapsed: order parameter <= {COLLAPSED:g} in every layer x head at every S"
    return text, _g_collapsed(rec), nums


def gate(result: dict[str, Any], name: str = AUTHOR) -> tuple[bool, str]:
    """Whether run ``name`` beats the best n-gram order, with the sentence and its figures."""
    g = run_gate(result, name)
    figs = ", ".join(f"{k} {x:.3f}" for k, x in g.figures.items())
    return g.passed, g.why + (f" ({figs} nats/byte)" if figs else "")


def _trend_numbers(trs: Sequence[Trend], prefix: str = "") -> Numbers:
    return {f"{prefix}{t.series} log-slope": t.text() for t in trs}


def _g_trends(s: Subject) -> list[Trend]:
    getters = series_getters(s.history[0])
    return [trend(s.history, f"G (S={S})", getters[f"G (S={S})"]) for S in _s_keys(s.last)]


_CI = f"{TREND_CI:.0%} interval of the mean log-slope over layer x head"


def _falling_trend(s: Subject, what: str) -> TrendCall:
    """E1's trend: G falling (toward invariance) or rising at every S."""
    trs = _g_trends(s)
    dirs = {t.direction for t in trs}
    nums = _trend_numbers(trs, f"{s.by} ")
    if dirs == {"falling"}:
        return TrendCall(TRENDING_TOWARD, f"{what} falls at every S ({_CI} below 0)", nums)
    if dirs == {"rising"}:
        return TrendCall(TRENDING_AWAY, f"{what} rises at every S ({_CI} above 0)", nums)
    status = ", ".join(sorted(dirs))
    return TrendCall(None, f"{what}: no trend read at every S ({status})", nums)


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
    S_all = _s_keys(rec)
    S = S_all[-1]
    nums: Numbers = {}
    for SS in S_all:
        if s.from_init:
            nums[f"G step 0 (S={SS}) min/median/max"] = _m3(op_grid(s.history[0], "G", SS))
        nums[f"G end (S={SS}) min/median/max"] = _m3(op_grid(rec, "G", SS))
    if s.from_init:
        nums["G pairwise RMS step 0 min/median/max"] = _m3(pair_values(s.history[0], "G"))
    nums["G pairwise RMS end min/median/max"] = _m3(pair_values(rec, "G"))
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
        trend=_falling_trend(s, "G's order parameter (suite form)") if s.from_init else None,
    )  # fmt: skip


def _fid_numbers(fid: dict[str, Any]) -> Numbers:
    nums: Numbers = {"prompts": fid["n_prompts"], "min top-1 margin": fid["min_top1_margin"]}
    for mode in ("prompt_G", "mean_G"):
        f = fid[mode]
        nums[f"{mode} tokens identical"] = f["tokens_identical"]
        nums[f"{mode} max logit gap"] = f["max_logit_gap"]
        for k in ("step_margin_covers_gap", "gap_exceeds_margin"):
            if k in f:
                nums[f"{mode} {k.replace('_', ' ')}"] = f[k]
    return nums


def _g_bitwise_invariant(s: Subject) -> bool:
    """Whether the final ``eps_G`` is exactly 0 at every measured length."""
    eps = s.last["eps_G"]
    return all(x == 0.0 for S in eps for x in flat(eps[S]))


_BITWISE = (
    "; true by construction when G is bitwise invariant (eps_G = 0 at every measured S): "
    "then every cached G is the recomputed one"
)
_E28_CAVEAT = (
    "decided on the prompt's G-cache; kv_A (the author's KV-cache: A frozen at the prompt, "
    f"A=kvcache[2]) equals it by construction ({BY_CONSTRUCTION_TEST}), so it is not counted "
    "again; only full recomputation decides"
)


def e2(s: Subject) -> Verdict:
    """E2: against full recomputation, every deviation within the decoding margin."""
    rule = (
        "on a collapsed model, prompt's G-cache against FULL RECOMPUTATION (teacher-forced on "
        "the uncached tokens, step by step): supported if on every prompt every step's top-1 "
        "margin exceeds twice its logit gap (the deviation cannot move the argmax); not "
        "supported if on some prompt a step's gap is at least its margin (a deviation as large "
        "as the decision margin); else inconclusive; decided on margins against gaps, never on "
        "tokens (E8's)" + _BITWISE
    )
    premise, met, nums = _g_premise(s)
    fid = s.final.get("fidelity")

    def decide() -> str | tuple[str, str]:
        if _g_bitwise_invariant(s):
            return BY_CONSTRUCTION
        f, n = fid["prompt_G"], fid["n_prompts"]  # type: ignore[index]
        covered = f.get("step_margin_covers_gap", f["margin_covers_gap"])
        if covered == n:
            return SUPPORTED
        if "gap_exceeds_margin" not in f:
            return INCONCLUSIVE, NOT_MEASURED
        return NOT_SUPPORTED if f["gap_exceeds_margin"] > 0 else INCONCLUSIVE

    if fid:
        nums.update(_fid_numbers(fid))
    return outcome(
        "E2", [s], rule=rule, scope=s.scope, caveat=_E28_CAVEAT, numbers=nums, premise=premise,
        premise_met=met if fid else None, decide=decide,
    )  # fmt: skip


def e8(s: Subject) -> Verdict:
    """E8: greedy tokens identical to full recomputation on every prompt."""
    rule = (
        "on a collapsed model: supported if the greedy tokens of the prompt's G-cache equal "
        "full recomputation's on every prompt; not supported otherwise; decided on tokens "
        "alone. On a prompt that E2's step certificate covers, identical tokens follow from it "
        "(score_perturbation), so E8's own evidence is the uncertified prompts, reported apart"
        + _BITWISE
    )
    premise, met, nums = _g_premise(s)
    fid = s.final.get("fidelity")

    def decide() -> str:
        if _g_bitwise_invariant(s):
            return BY_CONSTRUCTION
        f = fid["prompt_G"]  # type: ignore[index]
        return SUPPORTED if f["tokens_identical"] == fid["n_prompts"] else NOT_SUPPORTED  # type: ignore[index]

    if fid:
        f, n = fid["prompt_G"], fid["n_prompts"]
        cov = f.get("step_margin_covers_gap", f["margin_covers_gap"])
        nums.update({"prompts": n, "tokens identical": f["tokens_identical"],
                     "certified by E2 (not counted again)": cov,
                     "uncertified prompts with identical tokens":
                         f"{f['tokens_identical'] - cov} of {n - cov}"})  # fmt: skip
    return outcome(
        "E8", [s], rule=rule, scope=s.scope, caveat=_E28_CAVEAT, numbers=nums, premise=premise,
        premise_met=met if fid else None, decide=decide,
    )  # fmt: skip


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
            "sigma2/sigma1 A end min/median/max": _m3(ratio),
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
    S = _s_main(author.last)
    nums: Numbers = {}
    for SS in _s_keys(author.last):
        nums[f"author G end (S={SS}) min/median/max"] = _m3(op_grid(author.last, "G", SS))
        nums[f"subcritical G end (S={SS}) min/median/max"] = _m3(op_grid(sub.last, "G", SS))

    def decide() -> str:
        s3 = mmm(op_grid(sub.last, "G", S))
        if all(x <= COLLAPSED for SS in _s_keys(sub.last) for x in op_grid(sub.last, "G", SS)):
            return NOT_SUPPORTED
        return SUPPORTED if s3[1] >= MOVING else INCONCLUSIVE

    ta, ts = _g_trends(author), _g_trends(sub)
    diffs = [difference(a, b) for a, b in zip(ta, ts, strict=True)]
    tnums = {**_trend_numbers(ta, "author "), **_trend_numbers(ts, "subcritical ")}
    tnums.update(
        {f"subcritical - author, {a.series}": d.text() for a, d in zip(ta, diffs, strict=True)}
    )
    dd = {d.direction for d in diffs}
    if {t.direction for t in ta} == {"falling"} and dd == {"higher"}:
        tc = TrendCall(
            TRENDING_TOWARD,
            "author's G falls and subcritical's slope is above "
            f"author's at every S ({_CI}, and of their difference)",
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
    premise, met, _ = _g_premise(author)
    return outcome(
        "E4", [author, sub], rule=rule, scope=author.scope, caveat=AUDIT, numbers=nums,
        premise="author run: " + premise, premise_met=met, decide=decide, trend=tc,
    )  # fmt: skip


def e5(result: dict[str, Any], timings: dict[str, Any] | None) -> Verdict:
    """E5: the G-cache's own speed-up over the author's KV-cache (which stores A)."""
    rule = (
        f"on every run's saved timings (one architecture: the per-token cost of a decoder does "
        f"not depend on what its weights learned, so the runs are repeats of one measurement, "
        f"and the step-0 model would time alike), each with >= {E5_MIN_REPEATS} interleaved "
        f"repeats: supported if every repeat's G-cache speed-up over the KV-cache storing A is "
        f">= {E5_SUPPORT:g}x; not supported if every repeat's is < {E5_REJECT:g}x; else "
        "inconclusive (the spread straddles a cut-off); exempt from the gate"
    )
    m = result["settings"]["model"]
    scope = (
        f"wall time (float32, batch of the fidelity prompts) at the specimen's size (dk "
        f"{m['d_model'] // m['num_heads']}, context <= {result['settings']['seq']})"
    )
    caveat = (
        "machine-dependent (host and load in timings.json); the paper's dk 64 and longer "
        "contexts change the ratio"
    )
    runs = (timings or {}).get("runs", {})
    nums: Numbers = {}
    per: list[float] = []
    repeats: dict[str, int] = {}
    for name, t in runs.items():
        if "speedup_g_over_kv_a" in t:
            nums[f"{name} best-time speed-up"] = t["speedup_g_over_kv_a"]
        repeats[name] = int(t.get("repeats", 0))
        per += t.get("speedup_g_over_kv_a_per_repeat", [])
    enough = bool(repeats) and min(repeats.values()) >= E5_MIN_REPEATS
    premise = f"every run's timing has >= {E5_MIN_REPEATS} interleaved repeats"
    if repeats:
        nums["repeats per run (min)"] = min(repeats.values())
    if per:
        nums["per-repeat speed-up min / median / max"] = _m3(per)
        nums["repeats pooled"] = len(per)

    def decide() -> str:
        if min(per) >= E5_SUPPORT:
            return SUPPORTED
        return NOT_SUPPORTED if max(per) < E5_REJECT else INCONCLUSIVE

    return outcome(
        "E5", [], rule=rule, scope=scope, caveat=caveat, numbers=nums, premise=premise,
        premise_met=(enough if repeats else None), decide=decide, by="all runs' timings",
    )  # fmt: skip


def _legs(rec: dict[str, Any]) -> dict[str, bool | None]:
    """Whether each stage of E6 holds in one record (None: not measured)."""
    keys = _s_keys(rec)
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
    premise, met, nums = _g_premise(s)
    status = _leg_status(s)
    rec = s.last
    keys = _s_keys(rec)
    for label, r in (("step 0", s.history[0]), ("end", rec)) if s.from_init else (("end", rec),):
        if "commutant_residual_rho" in r:
            nums[f"rho commutant residual {label} max"] = max(flat(r["commutant_residual_rho"]))
            tw = r["twirl_rho"]
            nums[f"rho commutant energy fraction {label} min/median/max"] = _m3(
                flat(tw["commutant_fraction"])
            )
            nums[f"off-commutant suppression {label} min/median/max"] = _m3(
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


def _phase(rec: dict[str, Any]) -> tuple[str, str]:
    """Phase of a record by the suite's form and by the author's pairwise form."""

    def of(values: list[float]) -> str:
        _lo, med, hi = mmm(values)
        return "collapsed" if hi <= COLLAPSED else "moving" if med >= MOVING else "between"

    return of(op_grid(rec, "G", _s_main(rec))), of(pair_values(rec, "G"))


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


def n1(s: Subject) -> Verdict:
    """N1: the mean-operator cache contract, on a collapsed state; the stale initial cache."""
    rule = (
        f"on a collapsed model: not supported if the mean KL of the model's own mean-operator "
        f"cache against full recomputation is > {N1_KL:g} nats; otherwise the contract's "
        f"second criterion (relative centred RMS <= {N1_RMS:g}, centred over >= "
        f"{N1_MIN_REPLICAS} independent training replicas) decides, and without replicas the "
        "row stays inconclusive (premise absent); the context-centred figure measured here is "
        "not that statistic and is never used for it. The stale initial cache (the step-0 "
        f"model's mean operator on the trained model) fails the contract if its KL > {N1_KL:g}"
    )
    premise, met, nums = _g_premise(s)
    cc = s.final.get("cache_contract")
    if cc:
        nums["contexts (calibration / assessment)"] = (
            f"{cc['calibration_contexts']} / {cc['assessment_contexts']}"
        )
        for name in ("own", "initial"):
            if name in cc:
                c = cc[name]
                nums[f"{name} cache mean KL"] = c["mean_kl"]
                nums[f"{name} cache max KL"] = c["max_kl"]
                nums[f"{name} cache NLL (native / cached)"] = (
                    f"{c['native_nll']:.4g} / {c['cached_nll']:.4g}"
                )
        ini = cc.get("initial")
        if ini is not None:
            nums["stale initial cache"] = (
                "fails the KL target" if ini["mean_kl"] > N1_KL
                else "within the KL target (RMS criterion undecidable here)"
            )  # fmt: skip
        if cc.get("own", {}).get("relative_rms_context_centred") is not None:
            nums["context-centred RMS analogue (NOT N1's statistic)"] = cc["own"][
                "relative_rms_context_centred"
            ]
    nums["training replicas per run"] = 1

    def decide() -> str | tuple[str, str]:
        if cc["own"]["mean_kl"] > N1_KL:  # type: ignore[index]
            return NOT_SUPPORTED
        return INCONCLUSIVE, PREMISE_ABSENT

    caveat = (
        f"the RMS criterion needs >= {N1_MIN_REPLICAS} independent replicas per run (the "
        "author used six); the study trains one seed per run, so only the KL criterion is "
        "measured"
    )
    return outcome(
        "N1", [s], rule=rule, scope=s.scope, caveat=caveat, numbers=nums,
        premise=premise + f"; >= {N1_MIN_REPLICAS} training replicas for the RMS criterion",
        premise_met=met if cc else None, decide=decide,
    )  # fmt: skip


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
    S = _s_main(s.last)
    either = split = 0
    for r in recs:
        for row, inv in zip(flat(r["row_energy_A"]), op_grid(r, "A", S), strict=True):
            a, b = row <= ROW_COLLAPSED, inv <= COLLAPSED
            either += a or b
            split += a != b
    nums: Numbers = {
        "row energy A end min/median/max": _m3(flat(s.last["row_energy_A"])),
        f"A order param. end (S={S}) min/median/max": _m3(op_grid(s.last, "A", S)),
        "head-states with either collapse": either,
        "head-states with one without the other": split,
    }
    tc = None
    if s.from_init:
        getters = series_getters(s.history[0])
        tr = trend(s.history, "row energy A", getters["row energy A"])
        ta = trend(s.history, f"A (S={S})", getters[f"A (S={S})"])
        dirs = (tr.direction, ta.direction)
        tnums = _trend_numbers((tr, ta))
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


def n7(subjects: dict[str, Subject]) -> Verdict:
    """N7: the collapse trend with and without target exposure (F2 with the gate)."""
    return comparison_row("N7", subjects, gated=True)


def _usable(result: dict[str, Any], name: str) -> Subject | None:
    run = result["runs"].get(name)
    if run is None or not run.get("history"):
        return None
    return study_subject(result, name)


def rules(result: dict[str, Any], timings: dict[str, Any] | None) -> list[Verdict]:
    """Every claim's and statement's row on the saved study: E1..E8, N1, N2, N3, N7."""
    subjects = {n: s for n in result["runs"] if (s := _usable(result, n)) is not None}
    author = subjects.get(AUTHOR)
    if author is None:  # every row the author run decides is not measured
        other = {"E5": e5(result, timings), "E7": e7(subjects), "N7": n7(subjects)}
        return [
            other.get(c)
            or Verdict(c, INCONCLUSIVE, AUTHOR, "no author run saved", "", reason=NOT_MEASURED)
            for c in ROW_ORDER
        ]
    frozen = subjects.get(FROZEN)
    others = [s for n, s in subjects.items() if n != AUTHOR]
    return [
        e1(author, frozen),
        e2(author),
        e3(author, frozen),
        e4(author, subjects.get(SUB)),
        e5(result, timings),
        e6(author),
        e7(subjects),
        e8(author),
        n1(author),
        n2(author),
        n3(author, others),
        n7(subjects),
    ]


def study_findings(result: dict[str, Any]) -> list[Verdict]:
    """The findings F1, F2 of the saved study (:mod:`pyverify.claims.findings`)."""
    subjects = {n: s for n in result["runs"] if (s := _usable(result, n)) is not None}
    return findings(subjects)


def checkpoint_rules(d: dict[str, Any]) -> list[Verdict]:
    """The rows a checkpoint can decide, from :func:`run_checkpoint_diagnose`'s result.

    The same rule functions as the study's, on the checkpoint's one record (no
    step 0, no trend) and final measurements; no gate (the checkpoint's training
    is not the suite's to judge): E1, E2, E3, E6, E8, N1 (the own cache), N2,
    and F1 (target exposure: teacher-forced vs causal loss, the online contract).
    """
    m = d["model"]
    if m.get("tokens"):
        src = f"from {m['tokens']}"
    else:
        src = f"the study's inputs {m['inputs']}" if m.get("inputs") else "random ids"
    s = Subject(
        f"checkpoint {m['checkpoint']}",
        [d["record"]],
        d["final"],
        m["dk"],
        f"checkpoint {m['checkpoint']} on {m['n_prompts']} prompts ({src})",
        False,
    )
    return [e1(s), e2(s), e3(s), e6(s), e8(s), n1(s), n2(s), exposure_finding({s.by: s})]
