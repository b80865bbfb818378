"""Kernels mutated to lose precision exceed the proved bounds (the mutants live here).

The proved bounds (``lean/Pldr/Float``, :mod:`pyverify.fp.models`) are for what the
kernels' arithmetic does: float32 accumulation below float64. A kernel that accumulates
in bfloat16 instead is outside them, and the checks built on the bounds must say so:

* ``Q^T Q`` accumulated term by term in bfloat16: the ``fp_mixed_precision`` bound
  (bfloat16 inputs, float32 accumulation) of the property test is exceeded;
* SDPA whose scores are accumulated in bfloat16: the cross-check's G-cached output row on
  the trained ``G_LM`` exceeds its proved bound (``fp_head_output``), measured/proved > 1;
* the precision-loss mutants of issue 35: (a) a float32 dot product accumulated in
  bfloat16 exceeds ``fp_dot_product``; (b) a softmax without its max shift, on scores
  where that loses at least one decimal digit, exceeds ``fp_softmax``.
"""

from __future__ import annotations

import mpmath
import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

import pyverify.kernels as kern
import pyverify.kernels.head as head
from pyverify import crosscheck as cc
from pyverify.fp.attention import softmax_bound
from pyverify.fp.formulas import UNDERFLOW, fp_dot_product, fp_mixed_precision
from pyverify.reference import mp as rmp
from pyverify.testing.fp import MP_DPS, arith, exact_product, mp_excess, worst_excess
from pyverify.testing.impls import kernels


def _bf16_accumulate(terms: torch.Tensor, dim: int) -> torch.Tensor:
    """Sum ``terms`` along ``dim`` left to right, every partial sum rounded to bfloat16."""
    acc = torch.zeros_like(terms.select(dim, 0), dtype=torch.bfloat16)
    for t in terms.unbind(dim):
        acc = (acc.float() + t.float()).to(torch.bfloat16)
    return acc


def _density_bf16_acc(q: torch.Tensor) -> torch.Tensor:
    """The mutant ``density_operator``: products in float32, accumulation in bfloat16."""
    qf = q.float()
    terms = qf[..., :, :, None] * qf[..., :, None, :]  # (..., S, dk, dk)
    return _bf16_accumulate(terms, terms.dim() - 3).float()


def test_density_accumulated_in_bf16_exceeds_the_mixed_precision_bound(monkeypatch):
    impl = kernels("bfloat16")[0]
    rng = np.random.default_rng(7)
    q = rng.uniform(0.5, 1.5, size=(256, 4))  # positive terms: no cancellation to hide in
    exact = exact_product(q.T, q)
    ar = arith(impl)
    bound = fp_mixed_precision(np.abs(q).T @ np.abs(q), 256, ar.u_c, ar.u_io, ar.u_io,
                               eta_sum=256 * UNDERFLOW["float32"])  # fmt: skip
    assert worst_excess(impl.density(q), exact, bound) <= 1.0  # the real kernel: within
    monkeypatch.setattr(kern, "density_operator", _density_bf16_acc)
    assert worst_excess(impl.density(q), exact, bound) > 1.0  # the mutant: outside


def _sdpa_bf16_scores(q, k, v, *, causal=True, scale=None):
    """The mutant SDPA: scores accumulated in bfloat16, softmax and ``p V`` in float32."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    terms = q.float()[..., :, None, :] * k.float()[..., None, :, :]  # (..., S_q, S_k, d)
    E = _bf16_accumulate(terms, terms.dim() - 1).float() * scale
    if causal:
        s_q, s_k = E.shape[-2:]
        i = torch.arange(s_q)[:, None]
        E = E.masked_fill(torch.arange(s_k)[None, :] > i + (s_k - s_q), float("-inf"))
    return (F.softmax(E, dim=-1) @ v.float()).to(q.dtype)


def test_sdpa_with_bf16_score_accumulation_exceeds_the_proved_output_bound(monkeypatch):
    # S < 64: torch runs bfloat16 SDPA at S >= 64 only under avx512 on some CPUs (AMX)
    case = cc.Case("trained", (1, 14, 48, 64), "cpu", "bfloat16", 3)
    real = {(r.path, r.stage): r for r in cc.run_case(case)}
    assert real[("kernels.g_cached", "output")].passed
    assert real[("kernels.g_cached", "output")].proved_ratio < 1
    monkeypatch.setattr(head, "sdpa", _sdpa_bf16_scores)
    rows = {(r.path, r.stage): r for r in cc.run_case(case)}
    out = rows[("kernels.g_cached", "output")]
    assert out.proved is not None and out.proved_ratio > 1.0 and not out.passed


# --------------------------------------------------------------------------- precision-loss mutants
def _density_fp32_bf16_acc(q: torch.Tensor) -> torch.Tensor:
    """A float32 ``Q^T Q`` whose products are accumulated in bfloat16 (8 bits, not 24)."""
    qf = q.float()
    terms = qf[..., :, :, None] * qf[..., :, None, :]
    return _bf16_accumulate(terms, terms.dim() - 3).float()


def test_float32_dot_products_accumulated_in_bf16_exceed_fp_dot_product(monkeypatch):
    """Mutant (a): the float32 kernel's dot products (every entry of ``Q^T Q``) summed in
    bfloat16. Its error is about ``n 2^-9`` of the sum (here ~0.5), against the float32
    bound ``gamma_n sum |a||b|`` (~4e-6 of it): far more than one decimal digit lost, and
    the proved bound says so; the real kernel stays within."""
    impl = kernels("float32")[0]
    rng = np.random.default_rng(11)
    q = impl.round(rng.uniform(0.5, 1.5, size=(256, 4)))  # positive: nothing cancels
    exact = exact_product(q.T, q)
    ar = arith(impl)
    bound = fp_dot_product(np.abs(q).T @ np.abs(q), 256, ar.u_c, 256 * UNDERFLOW["float32"])
    assert worst_excess(impl.density(q), exact, bound) <= 1.0
    monkeypatch.setattr(kern, "density_operator", _density_fp32_bf16_acc)
    assert worst_excess(impl.density(q), exact, bound) > 10.0


def _sdpa_without_max_shift(q, k, v, *, causal=True, scale=None):
    """Mutant (b): softmax as ``exp(E) / sum exp(E)`` in float32, no shift by the row max."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    E = (q.float() @ k.float().transpose(-1, -2)) * scale
    if causal:
        s_q, s_k = E.shape[-2:]
        keep = torch.arange(s_k)[None, :] <= torch.arange(s_q)[:, None] + (s_k - s_q)
        E = E.masked_fill(~keep, float("-inf"))
    e = torch.exp(E)
    return ((e / e.sum(-1, keepdim=True)) @ v.float()).to(q.dtype)


def test_softmax_without_its_max_shift_exceeds_fp_softmax(monkeypatch):
    """Mutant (b) on scores in ``[-100, -94]``, which the shift maps to ``[-6, 0]``.

    Why these scores: a float32 exponential has the same relative accuracy at every
    argument, so on ordinary scores (``|x| < 87``) dropping the shift loses nothing
    measurable. Below ``ln(FLT_MIN) = -87.3`` the unshifted ``exp(x)`` (``~1e-41`` here)
    is a subnormal float32 with 10-16 significant bits instead of 24 (relative spacing
    ``2^-149 / exp(x)`` up to ``3e-4``): at least three of float32's seven decimal digits
    are gone from every weight, while the shifted kernel computes ``exp`` of ``[-6, 0]``
    in full precision. The proved bound (certified ``u_exp``) is a few ``2^-24``: the
    mutant exceeds it, the real kernel does not.
    """
    impl = kernels("float32")[0]
    rng = np.random.default_rng(13)
    E = impl.round(rng.uniform(-100.0, -94.0, size=(3, 9)))
    ctx = mpmath.MPContext()
    ctx.dps = MP_DPS
    exact = rmp.masked_softmax(E, None, ctx)
    p_up = np.array([[float(x) for x in row] for row in exact]) * (1 + 2.0**-50)
    bound = softmax_bound(arith(impl), E, causal=False, p=p_up)
    assert mp_excess(impl.softmax(E, causal=False), exact, bound) <= 1.0
    monkeypatch.setattr(kern, "sdpa", _sdpa_without_max_shift)
    got = impl.softmax(E, causal=False)
    assert mp_excess(got, exact, bound) > 10.0
