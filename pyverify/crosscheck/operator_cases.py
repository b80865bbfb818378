"""The cases on given operators: ``trained`` (the paper's ``G_LM``), ``identity`` (vs SDPA)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.crosscheck.bounds import head_bounds, output_bound, per_slice, stage_bound
from pyverify.crosscheck.cases import Case
from pyverify.crosscheck.compare import Comparer, as_numpy, slice_errors
from pyverify.crosscheck.heads import case_inputs, dummy_head, scores_like_kernel, trained_reference
from pyverify.crosscheck.results import CrosscheckRow
from pyverify.precision import compute_dtype
from pyverify.reference import load_g_lm

__all__ = [
    "run_identity",
    "run_trained",
]


def run_trained(case: Case) -> list[CrosscheckRow]:
    """A ``trained`` case: the G-cached and collapsed kernels on the paper's ``G_LM``."""
    import pyverify.kernels as kern
    from pyverify.fp.attention import pinned, sdpa_backend
    from pyverify.fp.models import arithmetic

    (q, k, v), g, ref = trained_reference(case)
    layer = int(case.layer or 0)
    qn, kn, vn = (as_numpy(t) for t in (q, k, v))
    G64 = torch.tensor(g, device=case.device)
    Gk = G64.to(compute_dtype(case.dtype))  # exact: the file holds float32 numbers
    ar = arithmetic("kernels", case.dtype, device=case.device)
    reduced = case.dtype in ("bfloat16", "float16")
    gk = as_numpy(Gk)
    sc_bound, out_bound = head_bounds(
        ar, qn, kn, vn, gk, g, "split" if reduced else "matmul", "sdpa_split" if reduced else "sdpa"
    )
    coll_bound = output_bound(ar, qn, kn, vn, gk, g, "sdpa_rounded" if reduced else "sdpa")
    note = f"G_LM layer {layer}; max|E| {np.abs(ref.E).max():.3g}"
    cached = Comparer(case, "kernels.g_cached", "reference.float64", note)
    dk, dv = q.shape[-1], v.shape[-1]
    with pinned(sdpa_backend("sdpa_split" if reduced else "sdpa", dk, dv), case.device):
        out_g = kern.plga_attention(q, k, v, None, G=Gk)
    with pinned(sdpa_backend("sdpa_rounded" if reduced else "sdpa", dk, dv), case.device):
        out_c = kern.collapsed_attention(q, k, v, Gk)
    return [
        cached.stage("scores", scores_like_kernel(q, k, Gk), ref.E, sc_bound),
        cached.stage("output", out_g, ref.out, out_bound, ("cache_equivalence",)),
        Comparer(case, "kernels.collapsed", "reference.float64", note).stage(
            "output", out_c, ref.out, coll_bound, ("collapse_absorption",)
        ),
    ]  # fmt: skip


def run_identity(case: Case) -> list[CrosscheckRow]:
    """An ``identity`` case: ``G = I`` against torch's SDPA (``sdpa_special_case``)."""
    import pyverify.kernels as kern
    from pyverify.fp.attention import attention_bound, pinned, sdpa_backend
    from pyverify.fp.models import REFERENCE_ARITHMETIC as REF
    from pyverify.fp.models import arithmetic
    from pyverify.reference import plga_forward_batched

    _B, H, _S, dk = case.shape
    g = load_g_lm("identity")[int(case.layer or 0)]
    if g.shape != (H, dk, dk):
        raise ValueError(f"identity G_LM layer has shape {g.shape}; case needs ({H}, {dk}, {dk})")
    q, k, v = case_inputs(case)
    qn, kn, vn = (as_numpy(t) for t in (q, k, v))
    Gk = torch.tensor(g, device=case.device, dtype=compute_dtype(case.dtype))
    reduced = case.dtype in ("bfloat16", "float16")
    dv = v.shape[-1]
    with pinned(sdpa_backend("sdpa_split" if reduced else "sdpa", dk, dv), case.device):
        out_g = kern.plga_attention(q, k, v, None, G=Gk)
    with pinned(sdpa_backend("sdpa_plain", dk, dv), case.device):
        sdpa64 = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    # torch's SDPA at the case's dtype against its float64 SDPA on the same inputs
    e_sdpa = float(
        slice_errors(F.scaled_dot_product_attention(q, k, v, is_causal=True), sdpa64).max()
    )
    thm = ("sdpa_special_case",)
    note = f"identity G_LM; torch SDPA's own error at {case.dtype}: {e_sdpa:.2e}"
    ar = arithmetic("kernels", case.dtype, device=case.device)
    # torch's float64 SDPA, the side compared with
    f64 = arithmetic("kernels", "float64", device=case.device)
    gk = as_numpy(Gk)

    def kern_vs_sdpa(b, h, qs, ks, vs, gh):
        own = attention_bound(ar, qs, ks, vs, gh, np.abs(gh - np.eye(dk)),
                              path="sdpa_split" if reduced else "sdpa")  # fmt: skip
        return own + attention_bound(f64, qs, ks, vs, None, path="sdpa_plain")

    def ref_vs_sdpa(b, h, qs, ks, vs):
        own = attention_bound(REF, qs, ks, vs, np.eye(dk))
        return own + attention_bound(f64, qs, ks, vs, None, path="sdpa_plain")

    gk4 = np.broadcast_to(gk, (qn.shape[0], *gk.shape))
    rows = [
        Comparer(case, "kernels.g_cached", "torch.sdpa.float64", note).stage(
            "output",
            out_g,
            sdpa64,
            stage_bound("output", lambda: per_slice(kern_vs_sdpa, qn, kn, vn, gk4)),
            thm,
        )
    ]
    if case.dtype == "float64":
        ref = plga_forward_batched(qn, kn, vn, dummy_head(dk), G=g)
        rows.append(
            Comparer(
                case, "reference.float64", "torch.sdpa.float64",
                "float64 reference with G = I vs float64 SDPA",
            ).stage(
                "output", ref.out, sdpa64,
                stage_bound("output", lambda: per_slice(ref_vs_sdpa, qn, kn, vn)), thm,
            )
        )  # fmt: skip
    return rows
