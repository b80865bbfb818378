"""fp_layernorm: a computed LayerNorm row is within the proved running bound of the exact row.

Lean: ``Pldr.fp_layernorm`` with ``fp_layernorm_mean`` and ``fp_layernorm_variance``
(``lean/Pldr/Float/LayerNorm.lean``): on an input off by ``d``, with the mean's error
``Delta mu``, the variance routine's ``e_v``, ``eta_v``, the reciprocal square root's
``u_rs`` and roundings at ``u`` (products ``eta``):
``|y^_i - (g_i (x_i - mu) r + b_i)| <= (1 + u) S_i + u |g_i (x_i - mu) r + b_i|``
(:func:`pyverify.fp.stages.fp_layernorm`, evaluated in Fractions on the actual row).

Implementations (their premises: :mod:`pyverify.testing.stage_bounds`):

* the reference: ``numpy_head.layer_norm_rows`` (the decoder's and the learner's), float64
  inputs held exactly (``d = 0``), ``u = 2^-53``;
* the kernels: the decoder's LayerNorm (``pyverify.kernels.model._ln``, ATen's
  ``native_layer_norm``) on float32 and bfloat16 tensors; the float64 inputs are rounded
  on entry (``d = |x^ - x|``, the theorem's input error), ``gamma``, ``beta`` and ``eps``
  held exactly. Float32: ``u = 2^-24``. Bfloat16: ATen computes the row in float32 (its
  own moments) and rounds it once: the float32 bound rounded (``[fp_elementwise]``,
  ``L = 1``). The moments are Welford's: held to the two-pass ``Delta mu``, ``e_v``,
  ``eta_v`` (an assumption). At float32 its observable consequences are asserted first:
  the mean ATen returns is within ``Delta mu`` and its ``rstd`` within ``R r`` (the
  statistics half of the proof); at bfloat16 ATen returns them rounded to bfloat16, so
  they are not observable there.

Oracle: the mean and variance of the exact (unrounded) row in Fractions, ``r`` and the
outputs in mpmath at 50 digits; compared in mpmath (:func:`pyverify.testing.fp.mp_excess`).
Tolerance: the proved bound itself, nothing added (its float64 rounding upward only).
Rows whose variance the theorem cannot resolve (``W >= v + eps``) are rejected: there it
states nothing.

Non-vacuity: a float32 LayerNorm whose centred values pass through bfloat16 is outside
the bound (``test_a_bfloat16_centring_breaks_the_bound``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from pyverify.kernels.model import _ln as decoder_layer_norm
from pyverify.reference import numpy_head as nh
from pyverify.testing.fp import mp_excess
from pyverify.testing.impls import REFERENCE, impl_ids, kernels
from pyverify.testing.stage_bounds import (
    OutsideModel,
    layernorm_bound,
    mp_context,
    stage_arith,
)
from pyverify.testing.strategies import arrays, examples

pytestmark = pytest.mark.theorem("fp_layernorm")

IMPLS = [REFERENCE, *kernels("float32", "bfloat16")]


def _rows(data, impl) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Rows ``offset + spread z`` (ill-conditioned ones up to ``|mean| / sigma ~ 1000``;
    bfloat16, whose input rounding would leave the variance unresolved, up to 10)."""
    rows, n = data.draw(st.integers(1, 3), label="rows"), data.draw(st.integers(2, 24), label="n")
    spread = data.draw(st.sampled_from([2.0**-4, 1.0, 2.0**5]), label="spread")
    ratios = [0.0, 1.0, 10.0] + ([] if impl.dtype == "bfloat16" else [1000.0])
    offset = data.draw(st.sampled_from(ratios), label="offset") * spread
    offset *= data.draw(st.sampled_from([-1.0, 1.0]), label="sign")
    x = offset + spread * data.draw(arrays((rows, n), 1.0), label="z")
    g = impl.round(data.draw(arrays((n,), 2.0), label="gamma"))
    b = impl.round(data.draw(arrays((n,), 1.0), label="beta"))
    eps = data.draw(st.sampled_from([2.0**-20, 2.0**-10]), label="eps")
    return x, g, b, eps


def _exact(x: np.ndarray, g, b, eps: float, ctx):
    """The exact rows (Fractions) and outputs (mpf), mean (Fraction) and r (mpf) per row."""
    xs = [[Fraction(float(t)) for t in row] for row in x]
    out, stats = [], []
    for row in xs:
        n = len(row)
        mu = sum(row, Fraction(0)) / n
        v = sum(((t - mu) ** 2 for t in row), Fraction(0)) / n
        r = 1 / ctx.sqrt(ctx.mpf(v.numerator) / v.denominator + ctx.mpf(eps))
        out.append([ctx.mpf(float(gi)) * (ctx.mpf((t - mu).numerator) / (t - mu).denominator) * r
                    + ctx.mpf(float(bi)) for t, gi, bi in zip(row, g, b, strict=True)])  # fmt: skip
        stats.append((mu, r))
    return xs, out, stats


def _kernel(impl, x, g, b, eps):
    """The decoder's LayerNorm on the kernel's tensors, and (float32) the mean and rstd of
    the same ATen kernel (checked to be the computation that ran: the same row, bitwise);
    at bfloat16 they are returned rounded to bfloat16, not as computed: None."""
    xt, gt, bt = impl.t(x), impl.t(g), impl.t(b)
    y = decoder_layer_norm(xt, gt, bt, eps)
    held = xt.to(torch.float64).cpu().numpy()
    got = y.to(torch.float64).cpu().numpy()
    if xt.dtype != torch.float32:
        return got, held, None
    y32, mean, rstd = torch.ops.aten.native_layer_norm(xt, [x.shape[-1]], gt, bt, eps)
    assert torch.equal(y, y32), "F.layer_norm is not ATen's native_layer_norm"
    return got, held, (mean.reshape(-1).tolist(), rstd.reshape(-1).tolist())


def _excess(impl, x, g, b, eps) -> float:
    """``max |y^ - y| / bound`` of one case (> 1: violated), after the premise checks."""
    sa = stage_arith(impl)
    ctx = mp_context()
    xs, exact, stats = _exact(x, g, b, eps, ctx)
    if sa.ar.impl == "reference":
        got, held, checks = nh.layer_norm_rows(x, g, b, eps), x, None
    else:
        got, held, checks = _kernel(impl, x, g, b, eps)
    try:
        bound, parts = layernorm_bound(xs, np.abs(held - x), g, b, eps, sa, ctx, with_parts=True)
    except OutsideModel:
        assume(False)  # the variance is not resolved: the theorem gives no bound
    if checks is not None:  # the kernels' statistics, against the two-pass hypotheses
        for i, ((mu, r), (dmu, R)) in enumerate(zip(stats, parts, strict=True)):
            assert abs(Fraction(float(checks[0][i])) - mu) <= dmu, ("mean", i)
            rh = ctx.mpf(float(checks[1][i]))
            assert abs(rh - r) <= ctx.mpf(R.numerator) / R.denominator * r, ("rstd", i)
    return mp_excess(got, exact, bound)


@pytest.mark.parametrize("impl", IMPLS, ids=impl_ids)
@examples(30)
@given(st.data())
def test_layernorm_rows_within_proved_bound(impl, data):
    x, g, b, eps = _rows(data, impl)
    assert _excess(impl, x, g, b, eps) <= 1.0


@pytest.mark.parametrize("impl", kernels("float32"), ids=impl_ids)
def test_a_bfloat16_centring_breaks_the_bound(impl):
    """The same float32 kernel, its centred values rounded to bfloat16 on the way (a
    perturbed implementation: a precision loss inside the row), is outside the bound
    that the genuine kernel meets on the same row."""
    sa = stage_arith(impl)
    ctx = mp_context()
    x = np.array([[0.1, 0.7, -0.3, 1.3, 0.9, -1.1]])
    g, b, eps = np.ones(6), np.full(6, 0.25), 2.0**-20
    xs, exact, _ = _exact(x, g, b, eps, ctx)
    xt = impl.t(x)
    _, mean, rstd = torch.ops.aten.native_layer_norm(xt, [6], impl.t(g), impl.t(b), eps)
    c = (xt - mean).to(torch.bfloat16).to(torch.float32)  # the perturbation
    bad = (c * rstd * impl.t(g) + impl.t(b)).to(torch.float64).numpy()
    bound = layernorm_bound(xs, np.abs(impl.round(x) - x), g, b, eps, sa, ctx)
    assert _excess(impl, x, g, b, eps) <= 1.0
    assert mp_excess(bad, exact, bound) > 1.0  # measured: ~1000
