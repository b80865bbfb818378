"""The cases on random heads: ``random`` (kernels vs the reference), ``mpmath`` (vs 40 digits)."""

from __future__ import annotations

import numpy as np
import torch

from pyverify.crosscheck.bounds import (
    MP_REL,
    U64,
    head_bounds,
    output_bound,
    per_slice,
    pipeline_bounds,
    stage_bound,
)
from pyverify.crosscheck.cases import Case
from pyverify.crosscheck.compare import Comparer, as_numpy
from pyverify.crosscheck.heads import (
    case_inputs,
    random_reference,
    reference_heads,
    scores_like_kernel,
)
from pyverify.crosscheck.learner_rows import learner_rows_mpmath, learner_rows_random
from pyverify.crosscheck.results import CrosscheckRow
from pyverify.precision import MPMATH_DPS, compute_dtype

__all__ = [
    "run_mpmath",
    "run_random",
]


def run_random(case: Case) -> list[CrosscheckRow]:
    """A ``random`` case: every kernel against the float64 reference, stage by stage."""
    import pyverify.kernels as kern
    from pyverify.fp.attention import pinned, sdpa_backend
    from pyverify.fp.models import arithmetic

    (q, k, v), heads, ref = random_reference(case)
    qn, kn, vn = (as_numpy(t) for t in (q, k, v))
    reduced = case.dtype in ("bfloat16", "float16")
    dk, dev = q.shape[-1], case.device
    # each kernel's SDPA pinned to the backend its bound models (torch raises otherwise)
    b_g = sdpa_backend("sdpa_split" if reduced else "sdpa", dk, v.shape[-1])
    b_c = sdpa_backend("sdpa_rounded" if reduced else "sdpa", dk, v.shape[-1])
    p = kern.from_reference(heads, case.device, compute_dtype(case.dtype))
    with pinned(b_g, dev):
        out, ded = kern.plga_attention(q, k, v, p, return_deductive=True)
    G_ref = torch.tensor(ref.ded.G, device=case.device)
    ar = arithmetic("kernels", case.dtype, device=case.device)
    got = {n: as_numpy(getattr(ded, n)) for n in ("A", "A_LM", "A_P", "G")}
    want = {n: getattr(ref.ded, n) for n in ("A", "A_LM", "A_P", "G")}
    proved = pipeline_bounds(ar, heads, got, want, exact_is_mp=False)
    unc = Comparer(case, "kernels.uncached", "reference.float64")
    rows = learner_rows_random(unc, q, heads, p, ded.A, ref.ded.A)
    for n in ("A_LM", "A_P", "G"):
        g = getattr(ded, n)
        if n in ("A_LM", "A_P"):  # metric_positivity: every entry > 0
            mn = float(g.min())
            row = unc.stage(
                n, g, want[n], proved[n], ("metric_positivity",),
                extra_ok=mn > 0, note=f"min entry {mn:.3g}",
            )  # fmt: skip
        else:
            row = unc.stage(n, g, want[n], proved[n])
        rows.append(row)
    sc_bound, out_bound = head_bounds(
        ar, qn, kn, vn, got["G"], ref.ded.G, "split" if reduced else "matmul",
        "sdpa_split" if reduced else "sdpa",
    )  # fmt: skip
    rows.append(unc.stage("scores", scores_like_kernel(q, k, ded.G), ref.E, sc_bound))
    rows.append(unc.stage("output", out, ref.out, out_bound))
    Gk = G_ref.to(compute_dtype(case.dtype))
    Gk_n = as_numpy(Gk)
    out_g_bound = output_bound(ar, qn, kn, vn, Gk_n, ref.ded.G, "sdpa_split" if reduced else "sdpa")
    with pinned(b_g, dev):
        out_g = kern.plga_attention(q, k, v, None, G=Gk)
    rows.append(
        Comparer(case, "kernels.g_cached", "reference.float64").stage(
            "output", out_g, ref.out, out_g_bound, ("cache_equivalence",)
        )
    )
    out_c_bound = output_bound(
        ar, qn, kn, vn, Gk_n, ref.ded.G, "sdpa_rounded" if reduced else "sdpa"
    )
    with pinned(b_c, dev):
        out_c = kern.collapsed_attention(q, k, v, Gk)
    rows.append(
        Comparer(case, "kernels.collapsed", "reference.float64").stage(
            "output", out_c, ref.out, out_c_bound, ("collapse_absorption",)
        )
    )
    return rows


def run_mpmath(case: Case) -> list[CrosscheckRow]:
    """An ``mpmath`` case: the float64 reference against 40-digit mpmath, every stage."""
    from pyverify.fp.models import REFERENCE_ARITHMETIC as REF
    from pyverify.reference import mp, plga_forward_batched

    B, H, S, dk = case.shape
    if S > 16 or dk > 8:
        raise ValueError(f"mpmath cases are limited to S <= 16, dk <= 8; got {case.shape}")
    heads = reference_heads(case)
    q, k, v = (as_numpy(t) for t in case_inputs(case))
    r64 = plga_forward_batched(q, k, v, heads, causal=True)
    rmp = [
        [
            mp.to_numpy(
                mp.plga_forward_full(
                    q[b, h], k[b, h], v[b, h], heads[h], causal=True, dps=MPMATH_DPS
                )
            )
            for h in range(H)
        ]
        for b in range(B)
    ]

    def exact(get) -> np.ndarray:  # type: ignore[no-untyped-def]
        return np.stack([np.stack([get(r) for r in row]) for row in rmp])

    cmp = Comparer(case, "reference.float64", "mpmath")
    ded = ("A", "A_LM", "A_P", "G")
    got = {n: getattr(r64.ded, n) for n in ded} | {"scores": r64.E, "output": r64.out}
    want = {n: exact(lambda r, n=n: getattr(r.ded, n)) for n in ded}
    want |= {"scores": exact(lambda r: r.E), "output": exact(lambda r: r.out)}
    proved = pipeline_bounds(REF, heads, got, want, exact_is_mp=True)
    learner = learner_rows_mpmath(cmp, q, heads, r64.ded.A)
    # the scores and output of mpmath's G (rounded to float64: within u64 |G|)
    g_mp = want["G"]
    dG = np.abs(got["G"] - g_mp) + 2 * U64 * np.abs(g_mp)
    rnd = {n: (U64 + MP_REL) * (1 + U64) * np.abs(want[n]) for n in ("scores", "output")}

    def sc(b, h, qs, ks, g, d):
        from pyverify.fp.models import scores_bound

        return scores_bound(REF, qs, ks, g, d, "reference")

    def out(b, h, qs, ks, vs, g, d):
        from pyverify.fp.attention import attention_bound

        return attention_bound(REF, qs, ks, vs, g, d)

    proved["scores"] = stage_bound(
        "scores", lambda: per_slice(sc, q, k, got["G"], dG) + rnd["scores"]
    )
    proved["output"] = stage_bound(
        "output", lambda: per_slice(out, q, k, v, got["G"], dG) + rnd["output"]
    )
    rest = ("A_LM", "A_P", "G", "scores", "output")
    return learner + [cmp.stage(s, got[s], want[s], proved[s]) for s in rest]
