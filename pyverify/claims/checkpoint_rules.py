"""The ledger rows a real checkpoint can decide (``pyverify diagnose --checkpoint``).

On a checkpoint the suite measures E1 (both order-parameter forms), E3, E2 and
E8 against full recomputation, and the online contract (prefix consistency),
on the user's prompts. The rules and thresholds are those of
:mod:`pyverify.claims.rules`; there is no n-gram gate (the checkpoint's
training is not the suite's to judge) and no step 0 (whether the singularity
is learned or inherited cannot be told from one checkpoint).
"""

from __future__ import annotations

from typing import Any

from pyverify.claims.rules import (
    A_LM_FULL_RANK_FRAC,
    BY_CONSTRUCTION_TEST,
    COLLAPSED,
    INIT_NOT_SINGULAR,
    MOVING,
    RANK_ONE,
)
from pyverify.claims.stats import flat, mmm
from pyverify.claims.verdict import (
    BY_CONSTRUCTION,
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SUPPORTED,
    Verdict,
)

__all__ = ["checkpoint_rules"]

TENSORS = ("A", "A_LM", "A_P", "G")


def _e1(d: dict[str, Any], by: str, cav: str) -> Verdict:
    per_head = d["order_parameter"]["per_head"]
    pair = d["claims"]["pairwise_order"]
    worst = max(
        [max(flat(per_head[t])) for t in TENSORS]
        + [max(flat(pair[t][f])) for t in TENSORS for f in ("rms", "signed_mean")]
    )
    g = mmm(flat(per_head["G"]))
    nums: dict[str, float | int | str] = {
        "G min": g[0],
        "G median": g[1],
        "G max": g[2],
        "G pairwise RMS max": max(flat(pair["G"]["rms"])),
        "G pairwise signed-mean max": max(flat(pair["G"]["signed_mean"])),
        "worst of all": worst,
    }
    rule = (
        f"supported if the order parameter of A, A_LM, A_P, G over the prompts is <= "
        f"{COLLAPSED:g} in every layer x head and in the author's pairwise form; not supported if "
        f"the median over heads of G's is >= {MOVING:g}; else inconclusive"
    )
    verdict = SUPPORTED if worst <= COLLAPSED else NOT_SUPPORTED if g[1] >= MOVING else INCONCLUSIVE
    return Verdict("E1", verdict, by, rule, cav, nums)


def _fid(d: dict[str, Any], claim: str, by: str, cav: str) -> Verdict:
    f = d["claims"]["fidelity"]
    n = f["n_prompts"]
    bitwise = d["invariance"]["eps_G_max"] == 0.0
    nums: dict[str, float | int | str] = {
        "prompts": n,
        "tokens identical": f["tokens_identical"],
        "max logit gap": f["max_logit_gap"],
        "min top-1 margin": f["min_top1_margin"],
        "margin covers gap": f["margin_covers_gap"],
        "eps_G max": d["invariance"]["eps_G_max"],
    }
    caveat = (
        f"{cav}; the G-cache is the author's KV-cache path (A kept at the prompt) by "
        f"construction ({BY_CONSTRUCTION_TEST}); compared with FULL RECOMPUTATION"
    )
    if claim == "E2":
        rule = (
            "true by construction if G is bitwise invariant over the prompts (eps_G = 0); else "
            "supported if every prompt's top-1 margin exceeds twice its max logit gap; not "
            "supported if a greedy token differs; else inconclusive"
        )
        if bitwise:
            verdict = BY_CONSTRUCTION
        elif f["margin_covers_gap"] == n:
            verdict = SUPPORTED
        elif f["tokens_identical"] < n:
            verdict = NOT_SUPPORTED
        else:
            verdict = INCONCLUSIVE
    else:
        rule = (
            "true by construction if G is bitwise invariant (eps_G = 0); else supported if the "
            "greedy tokens equal full recomputation's on every prompt; not supported otherwise"
        )
        ok = f["tokens_identical"] == n
        verdict = BY_CONSTRUCTION if bitwise else SUPPORTED if ok else NOT_SUPPORTED
    return Verdict(claim, verdict, by, rule, caveat, nums)


def _e3(d: dict[str, Any], by: str, cav: str) -> Verdict:
    s = d["claims"]["singularity"]
    ratio, rows, rank_lm = (
        flat(s["sigma2_over_sigma1_A"]),
        flat(s["identical_rows_residual_A"]),
        (flat(s["numerical_rank_A_LM"])),
    )
    dk = d["model"]["dk"]
    nums: dict[str, float | int | str] = {
        "sigma2/sigma1 A min": min(ratio),
        "sigma2/sigma1 A median": mmm(ratio)[1],
        "sigma2/sigma1 A max": max(ratio),
        "identical-rows residual max": max(rows),
        "A_LM rank median": mmm(rank_lm)[1],
        "dk": dk,
    }
    rule = (
        f"supported if sigma2/sigma1 and the identical-rows residual of A are <= {RANK_ONE:g} in "
        f"every prompt x layer x head and A_LM's median numerical rank >= "
        f"{A_LM_FULL_RANK_FRAC:g} dk; not supported if the median sigma2/sigma1 is > "
        f"{INIT_NOT_SINGULAR:g}; else inconclusive"
    )
    if (
        max(ratio) <= RANK_ONE
        and max(rows) <= RANK_ONE
        and mmm(rank_lm)[1] >= (A_LM_FULL_RANK_FRAC * dk)
    ):
        verdict = SUPPORTED
    elif mmm(ratio)[1] > INIT_NOT_SINGULAR:
        verdict = NOT_SUPPORTED
    else:
        verdict = INCONCLUSIVE
    return Verdict(
        "E3", verdict, by, rule, cav + "; learned vs inherited: not decidable here", nums
    )


def _online(d: dict[str, Any], by: str, cav: str) -> Verdict:
    o = d["claims"]["online"]
    nums: dict[str, float | int | str] = {
        "prefix logits changed": o["changed"],
        "of": o["total"],
        "max change": o["max_change"],
    }
    rule = (
        "supported (prefix-consistent, as the paper's online use needs) if no logit of the "
        "prompt's first half changes when its second half is replaced; not supported otherwise"
    )
    verdict = SUPPORTED if o["changed"] == 0 else NOT_SUPPORTED
    return Verdict("online contract", verdict, by, rule, cav, nums)


def checkpoint_rules(d: dict[str, Any]) -> list[Verdict]:
    """The ledger rows of a :func:`~pyverify.diagnose.checkpoint.run_checkpoint_diagnose` result."""
    m = d["model"]
    by = f"checkpoint {m['checkpoint']}"
    cav = f"on {m['n_prompts']} prompts ({'from ' + m['tokens'] if m['tokens'] else 'random ids'})"
    return [
        _e1(d, by, cav),
        _fid(d, "E2", by, cav),
        _e3(d, by, cav),
        _fid(d, "E8", by, cav),
        _online(d, by, cav),
    ]
