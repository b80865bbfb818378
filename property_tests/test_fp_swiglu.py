"""fp_swiglu: a computed SwiGLU block is within the proved running bound of the exact block.

Lean: ``Pldr.fp_swiglu`` with ``fp_swiglu_sigmoid`` and ``fp_swiglu_silu``
(``lean/Pldr/Float/Stages.lean``): on an input off by ``d``, the three affine kernels
within their local bounds ``B1``, ``B2``, ``B3`` (``fp_mixed_precision``), the sigmoid
``fl(1 / fl(1 + e^))`` with an exponential of accuracy ``u_exp``, ``fl(h^ s^)``,
``fl(s^ h2^)``, silu ``L``-Lipschitz:
``|o^ - swiglu(x)| <= B3 + dp |W3|`` (:func:`pyverify.fp.stages.fp_swiglu`; ``kappa`` and
the silu coefficient in Fractions, the rest in float64 with ``EVAL_SLACK``).

Implementations (premises: :mod:`pyverify.testing.stage_bounds`):

* the reference: ``numpy_head.swiglu`` (the decoder's feed-forward block), float64,
  ``d = 0``; its sigmoid's ``z < 0`` branch ``e / (1 + e)`` enters as the statement's form
  with the exponential ``1 / e`` (accuracy ``u_e / (1 - u_e)``, ``u_e`` =
  ``LIB_ACCURACY["float64"]``);
* the kernels: the decoder's feed-forward expression (``PLGADecoder._finish``:
  ``F.silu(_linear(x, W1, b1)) * _linear(x, W2, b2)``, then ``_linear(., W3, b3)``, the
  weights stored output-major as ``from_reference`` stores them) on float32 and bfloat16
  tensors; the float64 inputs rounded on entry (``d = |x^ - x|``), the weights held
  exactly. ``F.silu`` is ``fl(h / fl(1 + exp(-h)))``: the sigmoid ``1 / D`` exact and the
  quotient the product's rounding; its exponential Sleef's ``u10``
  (``u_exp = LIB_ACCURACY["float32"]``, the declared 2 ulp). Bfloat16: every step computed
  in float32 and rounded once to bfloat16 (``u = (1 + u_bf)(1 + u_32) - 1``), the affine
  kernels accumulating in float32 with the bias (one rounding at the end).

Non-vacuity: a silu whose exponential is rounded to bfloat16 is outside the float32
bound (``test_a_bfloat16_exponential_breaks_the_bound``).

Hidden values stay below :data:`~pyverify.testing.stage_bounds.HIDDEN_LIMIT` (``exp(-h)``
normal: the absolute terms ``eta_e``, ``eta_q`` are 0). Oracle: the block in mpmath at 50
digits on the exact (unrounded) input; compared in mpmath. Tolerance: the proved bound,
nothing added.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)
from hypothesis import assume, given
from hypothesis import strategies as st

from pyverify.kernels.linear import linear as _linear
from pyverify.kernels.linear import output_major_block
from pyverify.reference import mp_stages as mps
from pyverify.reference import numpy_head as nh
from pyverify.reference.params import SwiGLUBlock
from pyverify.testing.fp import mp_excess
from pyverify.testing.impls import REFERENCE, impl_ids, kernels
from pyverify.testing.stage_bounds import (
    OutsideModel,
    affine_mp,
    f64,
    mp_context,
    stage_arith,
    swiglu_bound,
)
from pyverify.testing.strategies import arrays, examples

pytestmark = pytest.mark.theorem("fp_swiglu")

IMPLS = [REFERENCE, *kernels("float32", "bfloat16")]


def _case(data, impl) -> tuple[np.ndarray, SwiGLUBlock]:
    rows, n = data.draw(st.integers(1, 3), label="rows"), data.draw(st.integers(1, 8), label="n")
    f, m = data.draw(st.integers(1, 12), label="f"), data.draw(st.integers(1, 8), label="m")
    x = data.draw(arrays((rows, n), 3.0), label="x")  # float64: the kernels round it
    shapes = {"W1": (n, f), "b1": (f,), "W2": (n, f), "b2": (f,), "W3": (f, m), "b3": (m,)}
    w = {k: impl.round(data.draw(arrays(s, 1.0 if k[0] == "W" else 0.5), label=k))
         for k, s in shapes.items()}  # fmt: skip
    return x, SwiGLUBlock(**w)


def _kernel(impl, x, blk, silu=F.silu):
    """The kernels' feed-forward block as ``PLGADecoder._finish`` runs it, on the weights
    laid out as ``pyverify.kernels.model.decoder`` stores them (W1, W2 side by side)."""
    W1, W2 = output_major_block([blk.W1, blk.W2], impl.device, impl.tdtype)
    b1, b2 = output_major_block([blk.b1, blk.b2], impl.device, impl.tdtype)
    (W3,) = output_major_block([blk.W3], impl.device, impl.tdtype)
    b3 = impl.t(blk.b3)
    xt = impl.t(x)
    p = silu(_linear(xt, W1, b1)) * _linear(xt, W2, b2)
    out = _linear(p, W3, b3)
    return out.to(torch.float64).cpu().numpy(), xt.to(torch.float64).cpu().numpy()


def _excess(impl, x, blk, silu=F.silu) -> float:
    """``max |o^ - o| / bound`` of one case (> 1: violated)."""
    sa = stage_arith(impl)
    ctx = mp_context()
    if sa.ar.impl == "reference":
        got, held = nh.swiglu(x, blk), x
    else:
        got, held = _kernel(impl, x, blk, silu)
    X = mps.to_mat(x, "x", ctx=ctx)
    H1, H2 = affine_mp(X, blk.W1, blk.b1, ctx), affine_mp(X, blk.W2, blk.b2, ctx)
    S1 = [[mps.silu(t, ctx) for t in row] for row in H1]
    exact = mps.swiglu(X, blk, ctx)
    try:
        bound = swiglu_bound(f64(H1), f64(H2), f64(S1), np.abs(x), np.abs(held - x), blk, sa)
    except OutsideModel:
        assume(False)
    return mp_excess(got, exact, bound)


@pytest.mark.parametrize("impl", IMPLS, ids=impl_ids)
@examples(30)
@given(st.data())
def test_swiglu_block_within_proved_bound(impl, data):
    x, blk = _case(data, impl)
    assert _excess(impl, x, blk) <= 1.0


@pytest.mark.parametrize("impl", kernels("float32"), ids=impl_ids)
def test_a_bfloat16_exponential_breaks_the_bound(impl):
    """The float32 block with its sigmoid's exponential rounded to bfloat16 (a perturbed
    implementation) is outside the bound the genuine block meets on the same input."""
    rng = np.random.default_rng(7)
    x = rng.normal(0.0, 1.0, (2, 4))
    w = {"W1": (4, 6), "b1": (6,), "W2": (4, 6), "b2": (6,), "W3": (6, 3), "b3": (3,)}
    blk = SwiGLUBlock(**{k: impl.round(rng.normal(0.0, 0.5, s)) for k, s in w.items()})

    def silu_bf16_exp(h):
        return h / (1 + torch.exp(-h).to(torch.bfloat16).to(h.dtype))

    assert _excess(impl, x, blk) <= 1.0
    assert _excess(impl, x, blk, silu_bf16_exp) > 1.0  # measured: ~190
