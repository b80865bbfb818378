"""The rules on caches and decoding: E2 (margins), E8 (tokens), E5 (speed-up), N1 (mean cache)."""

from __future__ import annotations

from typing import Any

from pyverify.claims.common import Numbers, g_premise, m3
from pyverify.claims.stats import flat
from pyverify.claims.subject import Subject, outcome
from pyverify.claims.thresholds import (
    BY_CONSTRUCTION_TEST,
    E5_MIN_REPEATS,
    E5_REJECT,
    E5_SUPPORT,
    N1_KL,
    N1_MIN_REPLICAS,
    N1_RMS,
)
from pyverify.claims.verdict import (
    BY_CONSTRUCTION,
    INCONCLUSIVE,
    NOT_MEASURED,
    NOT_SUPPORTED,
    PREMISE_ABSENT,
    SUPPORTED,
    Verdict,
)

__all__ = [
    "e2",
    "e5",
    "e8",
    "n1",
]


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
    premise, met, nums = g_premise(s)
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
    premise, met, nums = g_premise(s)
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
        nums["per-repeat speed-up min / median / max"] = m3(per)
        nums["repeats pooled"] = len(per)

    def decide() -> str:
        if min(per) >= E5_SUPPORT:
            return SUPPORTED
        return NOT_SUPPORTED if max(per) < E5_REJECT else INCONCLUSIVE

    return outcome(
        "E5", [], rule=rule, scope=scope, caveat=caveat, numbers=nums, premise=premise,
        premise_met=(enough if repeats else None), decide=decide, by="all runs' timings",
    )  # fmt: skip


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
    premise, met, nums = g_premise(s)
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
        "author used six); each seed is judged alone, with one training replica per run, so "
        "only the KL criterion is measured"
    )
    return outcome(
        "N1", [s], rule=rule, scope=s.scope, caveat=caveat, numbers=nums,
        premise=premise + f"; >= {N1_MIN_REPLICAS} training replicas for the RMS criterion",
        premise_met=met if cc else None, decide=decide,
    )  # fmt: skip
