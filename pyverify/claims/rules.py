"""The verdict rules: one function per claim, on records (a study run's or a checkpoint's).

A rule judges a :class:`Subject`: one model's records (a study run's history,
or the single record of ``pyverify diagnose --checkpoint``, which has no step
0) and its final measurements, both in the schema of :mod:`pyverify.measure`.
:func:`rules` judges the ablation study's saved ``collapse.json`` (and, for E5
only, ``timings.json``), with the gate below; :func:`checkpoint_rules` judges a
checkpoint's measurements with the same functions, without a gate. Every
verdict is computed here by the thresholds below; nothing is typed in. The
thresholds were written before the first full run of the study.

The gate: a specimen that does not beat the n-gram baseline has not learned
its corpus and cannot speak for or against the paper, so every claim the
``author`` run decides is "inconclusive" then (and when it diverged). E5 is
exempt: the wall time of a fixed architecture does not depend on what its
weights learned. The gate compares the CAUSAL validation loss (each position
predicted from its prefix alone, :func:`pyverify.measure.loss.causal_val_loss`):
G is computed from the whole window, so the teacher-forced loss sees later
tokens through G. This was changed after the first full run, where
``spread-init`` reached a teacher-forced 0.5 nats/byte, below every n-gram: a
leak, not learning. No verdict threshold was changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pyverify.claims.stats import flat, last, mmm, op_grid, pair_values
from pyverify.claims.verdict import (
    BY_CONSTRUCTION,
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SUPPORTED,
    Verdict,
)

__all__ = [
    "A_LM_FULL_RANK_FRAC",
    "BY_CONSTRUCTION_TEST",
    "COLLAPSED",
    "CONTRACTIVE",
    "E5_REJECT",
    "E5_SUPPORT",
    "GATE_ORDER",
    "INIT_NOT_SINGULAR",
    "MOVING",
    "RANK_ONE",
    "TWIRLED",
    "Subject",
    "checkpoint_rules",
    "rules",
]

GATE_ORDER = 3
"""The n-gram order ``author`` must beat: the interpolated trigram the issue names
(chosen after seeing the n-gram losses, before any full run of the model).
The higher orders are reported beside it in the caveats."""
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
"""RoPE-commutant residual of the mean G at most this: the rotary twirl holds."""
CONTRACTIVE = 1.0
"""The metric learner's Jacobian top singular value below this on visited rows: contraction."""
E5_SUPPORT = 2.0
"""G-cache speed-up (over the author's KV-cache storing A) at least this: "about 3x" holds."""
E5_REJECT = 1.25
"""G-cache speed-up below this: not supported."""
BY_CONSTRUCTION_TEST = (
    "property_tests/test_cache_equivalence.py::"
    "test_any_stack_a_cached_decoding_equals_g_cached_decoding"
)
"""The property test showing that a cache keeping the prompt's A equals G-cache decoding."""

AUTHOR, SUB, FROZEN = "author", "subcritical", "frozen"
AUDIT = (
    "a verdict on the small specimen, not on the released checkpoints: the author's audit "
    "of 110M-5 (docs/paper-claims.md) finds G bitwise invariant and A rank one; "
    "`pyverify diagnose --checkpoint` decides these rows on a checkpoint"
)


@dataclass(frozen=True)
class Subject:
    """What a rule judges: one model's records and final measurements.

    Attributes
    ----------
    by : str
        What decides (a run's name, or ``checkpoint FILE``).
    history : list of dict
        Records (:func:`pyverify.measure.measure_record` keys); a checkpoint has one.
    final : dict
        Final measurements (:func:`pyverify.measure.measure_final` keys; ``{}``: none).
    dk : int
        Head width.
    scope : str
        The caveat line naming what was measured (the specimen's scale, the prompts).
    from_init : bool
        Whether ``history[0]`` is the step-0 record of a training run.
    """

    by: str
    history: list[dict[str, Any]]
    final: dict[str, Any] = field(default_factory=dict)
    dk: int = 0
    scope: str = ""
    from_init: bool = False

    @property
    def last(self) -> dict[str, Any]:
        """The last record."""
        return self.history[-1]


def _s_keys(rec: dict[str, Any]) -> list[str]:
    """The probe-set names of a record's order parameter, shortest context first."""
    keys = list(rec["order_parameter"])
    return sorted(keys, key=int) if all(k.isdigit() for k in keys) else keys


def _s_main(rec: dict[str, Any]) -> str:
    """The main probe set (the longest context)."""
    return _s_keys(rec)[-1]


@lru_cache(maxsize=8)
def _n_params(model_items: tuple[tuple[str, Any], ...]) -> int:
    from pyverify.collapse.model import ModelConfig, PLDRDecoder

    cfg = ModelConfig(**dict(model_items))
    return sum(p.numel() for p in PLDRDecoder(cfg, init=False).parameters())


def scale_line(result: dict[str, Any]) -> str:
    """One line: the specimen's size and tokens beside the paper's."""
    s = result["settings"]
    n = _n_params(tuple(sorted(s["model"].items())))
    tokens = s["steps"] * s["batch"] * s["seq"]
    return (
        f"specimen {n / 1e6:.2f}M parameters, {tokens / 1e6:.1f}M byte tokens seen, "
        f"context {s['seq']}; paper 110M parameters, about 8e9 tokens, context 1024"
    )


def _dk(result: dict[str, Any]) -> int:
    m = result["settings"]["model"]
    return m["d_model"] // m["num_heads"]


def study_subject(result: dict[str, Any], name: str) -> Subject:
    """The study run ``name`` as a :class:`Subject` (its final measurements from the run entry)."""
    run = result["runs"][name]
    final = {k: v for k, v in run.items() if k not in ("spec", "history", "diverged")}
    return Subject(name, run["history"], final, _dk(result), scale_line(result), True)


def _gate_figures(result: dict[str, Any]) -> tuple[bool, str, dict[str, float | int | str]]:
    """``(passed, number-free reason, figures)`` of the gate."""
    run = result["runs"].get(AUTHOR)
    if run is None or not run.get("history"):
        return False, "no author run", {}
    if "diverged" in run:
        return False, "the author run diverged", {}
    if "causal_val_loss" not in run:
        return False, "no causal validation loss saved (rerun `pyverify collapse --resume`)", {}
    base = result["baseline"]["val_loss_by_order"]
    order = min(GATE_ORDER, len(base))
    v = run["causal_val_loss"]
    best = min(base)
    ok = v < base[order - 1]
    rel = "beats" if ok else "does not beat"
    also = "also beats" if v < best else "does not beat"
    why = (
        f"author's causal validation loss {rel} the {order}-gram baseline and {also} the "
        f"best n-gram (order {base.index(best) + 1})"
    )
    figures: dict[str, float | int | str] = {
        "author causal val loss": v,
        "author teacher-forced val loss": last(run)["val_loss"],
        f"{order}-gram val loss": base[order - 1],
        "best n-gram val loss": best,
    }
    return ok, why, figures


def gate(result: dict[str, Any]) -> tuple[bool, str]:
    """Whether ``author`` beat the gate baseline, with the sentence (and figures) saying so."""
    ok, why, figures = _gate_figures(result)
    if figures:
        why += " (" + ", ".join(f"{k} {x:.3f}" for k, x in figures.items()) + " nats/byte)"
    return ok, why


def _apply_gate(result: dict[str, Any], v: Verdict) -> Verdict:
    """``v`` turned "inconclusive" when the author run fails the gate (the numbers kept).

    The caveat stays number-free (it goes into the byte-stable JSON); the gate's
    figures join the verdict's numbers.
    """
    ok, why, figures = _gate_figures(result)
    if ok:
        return v
    return Verdict(
        v.claim,
        INCONCLUSIVE,
        v.decided_by,
        v.rule,
        f"gate failed: {why} (the rule alone would say {v.verdict!r}); {v.caveat}",
        {**figures, **v.numbers},
    )


def _g_stats(rec: dict[str, Any], S: str) -> dict[str, float]:
    lo, med, hi = mmm(op_grid(rec, "G", S))
    return {"G min": lo, "G median": med, "G max": hi}


def e1(s: Subject, frozen: Subject | None = None) -> Verdict:
    """E1: every deductive tensor's order parameter at most COLLAPSED, both forms, every S."""
    rule = (
        f"supported if the final order parameter of A, A_LM, A_P, G is <= {COLLAPSED:g} in every "
        f"layer x head at every S and in the author's pairwise form (RMS and signed-mean); "
        f"not supported if the median over heads of G's is >= {MOVING:g}; else inconclusive"
    )
    rec = s.last
    S_all = _s_keys(rec)
    worst = max(
        max(op_grid(rec, t, S) for S in S_all for t in ("A", "A_LM", "A_P", "G"))
        + [
            max(pair_values(rec, t, f))
            for t in ("A", "A_LM", "A_P", "G")
            for f in ("rms", "signed_mean")
        ]
    )
    S = _s_main(rec)
    nums: dict[str, float | int | str] = {}
    if s.from_init:
        nums[f"step 0 G median (S={S})"] = mmm(op_grid(s.history[0], "G", S))[1]
    nums.update(
        {
            **{f"{k} (S={S})": x for k, x in _g_stats(rec, S).items()},
            "G pairwise RMS max": max(pair_values(rec, "G")),
            "G pairwise signed-mean max": max(pair_values(rec, "G", "signed_mean")),
            "A median": mmm(op_grid(rec, "A", S))[1],
            "worst of all": worst,
        }
    )
    if frozen is not None and frozen.history:
        nums[f"frozen G median (S={S})"] = mmm(op_grid(frozen.last, "G", S))[1]
    if worst <= COLLAPSED:
        verdict = SUPPORTED
    elif mmm(op_grid(rec, "G", S))[1] >= MOVING:
        verdict = NOT_SUPPORTED
    else:
        verdict = INCONCLUSIVE
    return Verdict("E1", verdict, s.by, rule, s.scope, nums)


def _fidelity_rows(s: Subject) -> tuple[dict[str, Any], dict[str, float | int | str]]:
    fid = s.final["fidelity"]
    nums: dict[str, float | int | str] = {"prompts": fid["n_prompts"]}
    for mode in ("prompt_G", "kv_A", "mean_G"):
        f = fid[mode]
        nums[f"{mode} tokens identical"] = f["tokens_identical"]
        nums[f"{mode} max logit gap"] = f["max_logit_gap"]
        nums[f"{mode} margin covers gap"] = f["margin_covers_gap"]
    nums["min top-1 margin"] = fid["min_top1_margin"]
    return fid, nums


def _g_bitwise_invariant(s: Subject) -> bool:
    """Whether the final ``eps_G`` is exactly 0 at every measured length."""
    eps = s.last["eps_G"]
    return all(x == 0.0 for S in eps for x in flat(eps[S]))


_BITWISE = (
    "; true by construction when G is bitwise invariant (eps_G = 0 at every measured S): "
    "then every cached G is the recomputed one"
)
_E28_CAVEAT = (
    "kv_A (the author's KV-cache: A frozen at the prompt, A=kvcache[2]) equals prompt_G by "
    f"construction ({BY_CONSTRUCTION_TEST}); only full recomputation decides"
)


def e2(s: Subject) -> Verdict:
    """E2: against full recomputation, every deviation within the decoding margin."""
    rule = (
        "against FULL RECOMPUTATION (greedy, teacher-forced logits): supported if for prompt_G "
        "and kv_A every prompt's top-1 margin exceeds twice its max logit gap; not supported "
        "if any greedy token differs; else inconclusive" + _BITWISE
    )
    fid, nums = _fidelity_rows(s)
    n = fid["n_prompts"]
    modes = (fid["prompt_G"], fid["kv_A"])
    if _g_bitwise_invariant(s):
        verdict = BY_CONSTRUCTION
    elif all(m["margin_covers_gap"] == n for m in modes):
        verdict = SUPPORTED
    elif any(m["tokens_identical"] < n for m in modes):
        verdict = NOT_SUPPORTED
    else:
        verdict = INCONCLUSIVE
    return Verdict("E2", verdict, s.by, rule, _E28_CAVEAT + "; " + s.scope, nums)


def e8(s: Subject) -> Verdict:
    """E8: greedy tokens identical to full recomputation on every prompt."""
    rule = (
        "supported if the greedy tokens of prompt_G and kv_A equal full recomputation's on "
        "every prompt; not supported otherwise" + _BITWISE
    )
    fid, nums = _fidelity_rows(s)
    n = fid["n_prompts"]
    ok = all(fid[m]["tokens_identical"] == n for m in ("prompt_G", "kv_A"))
    verdict = BY_CONSTRUCTION if _g_bitwise_invariant(s) else SUPPORTED if ok else NOT_SUPPORTED
    return Verdict("E8", verdict, s.by, rule, _E28_CAVEAT + "; " + s.scope, nums)


def e3(s: Subject) -> Verdict:
    """E3: A rank one with identical rows (learned, not inherited), A_LM near full rank.

    Without a step-0 record (a checkpoint) whether the singularity is learned or
    inherited cannot be told, and the rule decides on the end alone (said in the caveat).
    """
    rule = (
        f"supported if at the end sigma2/sigma1 and the identical-rows residual of A are <= "
        f"{RANK_ONE:g} in every head, at step 0 the median sigma2/sigma1 is > {INIT_NOT_SINGULAR:g}"
        f" (where a step 0 is recorded) and A_LM's median numerical rank >= "
        f"{A_LM_FULL_RANK_FRAC:g} dk; not supported if the final median sigma2/sigma1 of A is > "
        f"{INIT_NOT_SINGULAR:g}; else inconclusive"
    )
    rec = s.last
    ratio = flat(rec["sigma2_over_sigma1_A"])
    rows = flat(rec["identical_rows_residual_A"])
    rank_lm = flat(rec["numerical_rank_A_LM"])
    nums: dict[str, float | int | str] = {}
    init_ok = True
    if s.from_init:
        init_ratio = mmm(flat(s.history[0]["sigma2_over_sigma1_A"]))[1]
        nums["sigma2/sigma1 A step 0 median"] = init_ratio
        init_ok = init_ratio > INIT_NOT_SINGULAR
    nums.update(
        {
            "sigma2/sigma1 A end min": min(ratio),
            "sigma2/sigma1 A end median": mmm(ratio)[1],
            "sigma2/sigma1 A end max": max(ratio),
            "identical-rows residual max": max(rows),
            "cross-head residual max": max(flat(rec["cross_head_residual_A"])),
            "A_LM rank median": mmm(rank_lm)[1],
            "dk": s.dk,
            "A_LM floor fraction max": max(flat(rec["floor_fraction_A_LM"])),
        }
    )
    if (
        max(ratio) <= RANK_ONE
        and max(rows) <= RANK_ONE
        and init_ok
        and mmm(rank_lm)[1] >= A_LM_FULL_RANK_FRAC * s.dk
    ):
        verdict = SUPPORTED
    elif mmm(ratio)[1] > INIT_NOT_SINGULAR:
        verdict = NOT_SUPPORTED
    else:
        verdict = INCONCLUSIVE
    caveat = s.scope if s.from_init else s.scope + "; learned vs inherited: not decidable here"
    return Verdict("E3", verdict, s.by, rule, caveat, nums)


def e4(author: Subject, sub: Subject | None) -> Verdict:
    """E4: the author run collapses and the subcritical run does not."""
    rule = (
        f"supported if author's final G order parameter is <= {COLLAPSED:g} in every head and "
        f"subcritical's median is >= {MOVING:g}; not supported if subcritical's median is <= "
        f"author's or author's median is >= {MOVING:g}; else inconclusive"
    )
    by = f"{author.by} vs {SUB}"
    if sub is None or not sub.history:
        return Verdict("E4", INCONCLUSIVE, by, rule, "no usable subcritical run")
    S = _s_main(author.last)
    a, s = mmm(op_grid(author.last, "G", S)), mmm(op_grid(sub.last, "G", S))
    nums: dict[str, float | int | str] = {
        f"author G median (S={S})": a[1],
        "author G max": a[2],
        "subcritical G median": s[1],
        "subcritical G min": s[0],
    }
    if a[2] <= COLLAPSED and s[1] >= MOVING:
        verdict = SUPPORTED
    elif s[1] <= a[1] or a[1] >= MOVING:
        verdict = NOT_SUPPORTED
    else:
        verdict = INCONCLUSIVE
    return Verdict("E4", verdict, by, rule, author.scope, nums)


def e5(result: dict[str, Any], timings: dict[str, Any] | None) -> Verdict:
    """E5: the G-cache's own speed-up over the author's KV-cache (which stores A)."""
    rule = (
        f"on the author run's saved timings: supported if G-cached decoding is >= {E5_SUPPORT:g}x "
        f"faster per token than the KV-cache storing A; not supported if < {E5_REJECT:g}x; "
        "else inconclusive"
    )
    t = (timings or {}).get("runs", {}).get(AUTHOR)
    if not t or "speedup_g_over_kv_a" not in t:
        return Verdict("E5", INCONCLUSIVE, AUTHOR, rule, "no saved timings of the author run")
    sp = t["speedup_g_over_kv_a"]
    nums: dict[str, float | int | str] = {
        "G-cache over KV(A)-cache": sp,
        "KV+G-cache over full recomputation": t["speedup"],
        "G-cached s/token": t["g_cached_s_per_token"],
    }
    verdict = SUPPORTED if sp >= E5_SUPPORT else NOT_SUPPORTED if sp < E5_REJECT else INCONCLUSIVE
    m = result["settings"]["model"]
    caveat = (
        "wall time (float32, batch of the fidelity prompts, best of 3) at the specimen's size "
        f"(dk {m['d_model'] // m['num_heads']}, context <= {result['settings']['seq']}), "
        "machine load in timings.json; the paper's "
        "dk 64 and longer contexts change the ratio; exempt from the gate"
    )
    return Verdict("E5", verdict, AUTHOR, rule, caveat, nums)


def e6(s: Subject) -> Verdict:
    """E6: the three stages measured on the author run."""
    rule = (
        f"three stages on the author run: twirl (RoPE-commutant residual of mean G <= {TWIRLED:g} "
        f"in every head), concentration (median order parameter of A lower at the longer S), "
        f"contraction (metric learner's Jacobian top singular value < {CONTRACTIVE:g} on visited "
        "rows); supported if all three hold; not supported if G collapsed (E1 supported) while "
        "a stage fails; else inconclusive"
    )
    rec = s.last
    keys = _s_keys(rec)
    S_lo, S_hi = keys[0], keys[-1]
    comm = max(flat(rec["commutant_residual_G"]))
    a_lo, a_hi = mmm(op_grid(rec, "A", S_lo))[1], mmm(op_grid(rec, "A", S_hi))[1]
    jac = max(flat(rec["jacobian_top_sv"]))
    stages = {
        "twirl": comm <= TWIRLED,
        "concentration": a_hi < a_lo,
        "contraction": jac < CONTRACTIVE,
    }
    nums: dict[str, float | int | str] = {
        "commutant residual max": comm,
        f"A median (S={S_lo})": a_lo,
        f"A median (S={S_hi})": a_hi,
        "Jacobian top sv max": jac,
        "stages holding": ", ".join(k for k, ok in stages.items() if ok) or "none",
    }
    if all(stages.values()):
        verdict = SUPPORTED
    elif e1(s).verdict == SUPPORTED:
        verdict = NOT_SUPPORTED
    else:
        verdict = INCONCLUSIVE
    return Verdict("E6", verdict, s.by, rule, s.scope, nums)


def _phase(rec: dict[str, Any]) -> tuple[str, str]:
    """Phase of a record by the suite's form and by the author's pairwise form."""

    def of(values: list[float]) -> str:
        _lo, med, hi = mmm(values)
        return "collapsed" if hi <= COLLAPSED else "moving" if med >= MOVING else "between"

    return of(op_grid(rec, "G", _s_main(rec))), of(pair_values(rec, "G"))


def e7(subjects: dict[str, Subject]) -> Verdict:
    """E7: both order-parameter forms put every run in the same phase, and both phases occur."""
    rule = (
        f"each run's final G is 'collapsed' (max <= {COLLAPSED:g}), 'moving' (median >= "
        f"{MOVING:g}) or 'between', by the suite's form and by the author's pairwise form; "
        "supported if the forms agree on every run and both collapsed and moving runs occur; "
        "not supported if the forms disagree on a run; else inconclusive"
    )
    phases = {n: _phase(s.last) for n, s in subjects.items() if s.history}
    nums: dict[str, float | int | str] = {n: f"{p[0]} / {p[1]}" for n, p in phases.items()}
    seen = {p[0] for p in phases.values()}
    if any(a != b for a, b in phases.values()):
        verdict = NOT_SUPPORTED
    elif {"collapsed", "moving"} <= seen:
        verdict = SUPPORTED
    else:
        verdict = INCONCLUSIVE
    caveat = (
        "that the order parameter is 0 iff the tensor is input-invariant holds by its definition"
    )
    return Verdict("E7", verdict, "all runs", rule, caveat, nums)


def online(s: Subject) -> Verdict:
    """The online contract: no prefix logit changes when the suffix is replaced."""
    o = s.final["online_contract"]
    nums: dict[str, float | int | str] = {
        "prefix logits changed": o["changed"],
        "of": o["entries"],
        "max change": o["max_abs_change"],
    }
    rule = (
        "supported (prefix-consistent, as the paper's online use needs) if no logit of the "
        "kept prefix changes when the rest of the sequence is replaced; not supported otherwise"
    )
    verdict = SUPPORTED if o["changed"] == 0 else NOT_SUPPORTED
    return Verdict("online contract", verdict, s.by, rule, s.scope, nums)


UNGATED = ("E5",)
"""Claims the gate does not apply to (E5: wall time does not depend on what was learned)."""


def _usable(result: dict[str, Any], name: str) -> Subject | None:
    run = result["runs"].get(name)
    if run is None or not run.get("history") or "diverged" in run:
        return None
    return study_subject(result, name)


def rules(result: dict[str, Any], timings: dict[str, Any] | None) -> list[Verdict]:
    """Every claim's verdict on the saved study, E1..E8, the gate applied."""
    author = study_subject(result, AUTHOR)
    author = Subject(AUTHOR, author.history, author.final, author.dk,
                     f"{author.scope}; {AUDIT}", True)  # fmt: skip
    plain = study_subject(result, AUTHOR)
    usable = {n: s for n in result["runs"] if (s := _usable(result, n)) is not None}
    out = [
        e1(author, _usable(result, FROZEN)),
        e2(plain),
        e3(author),
        e4(plain, _usable(result, SUB)),
        e5(result, timings),
        e6(plain),
        e7(usable),
        e8(plain),
    ]
    return [v if v.claim in UNGATED else _apply_gate(result, v) for v in out]


def checkpoint_rules(d: dict[str, Any]) -> list[Verdict]:
    """The ledger rows a checkpoint can decide, from :func:`run_checkpoint_diagnose`'s result.

    The same rules as the study's, on the checkpoint's one record (no step 0) and
    final measurements; no gate (the checkpoint's training is not the suite's to judge).
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
        f"on {m['n_prompts']} prompts ({src})",
        False,
    )
    return [e1(s), e2(s), e3(s), e8(s), online(s)]
