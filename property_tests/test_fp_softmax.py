"""fp_softmax: computed softmax weights are within the proved bound of the exact softmax.

Lean: ``Pldr.fp_softmax`` and ``Pldr.fp_softmax_exp`` (``lean/Pldr/Float/Softmax.lean``):
the row shifted by its computed maximum, the difference rounded, an exponential of
relative error ``u_exp`` (absolute error ``eta_e`` below the normal range: rows spanning
more than ~87 underflow in float32), the sum in any order, the quotient rounded:
``|p^_j - p_j| <= (1 + u_d)((c_e - 1 + beta) p_j + eta_e sigma)/(1 - beta) + u_d p_j + eta_d``
with ``c_e = (1 + u_exp)/(1 - (delta + u spread))`` (``delta``: the scores' own error,
here the rounding of ``E`` to the implementation's dtype).

The reference computes exactly that order. The kernels compute the weights with torch's
fused SDPA (``Q = E``, ``K = V = I``), an attention output whose values are unit vectors:
their bound is the same exponential factor through ``fp_head_output`` (numerator and
denominator), the larger of the fused and the normalise-first order
(:func:`pyverify.fp.attention.softmax_bound`), the call pinned to the fused kernel (torch
raises if it would run another). Oracle: mpmath softmax of the *unrounded*
scores at 50 digits, compared in mpmath.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyverify.fp.attention import softmax_bound
from pyverify.fp.learner import float_up
from pyverify.reference import causal_mask
from pyverify.reference import mp as rmp
from pyverify.testing.fp import MP_DPS, MP_REL, arith, mp_excess, pinned_sdpa
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.stage_bounds import mpf_fraction
from pyverify.testing.strategies import examples

pytestmark = pytest.mark.theorem("fp_softmax")


def _scores(data, impl, s_q: int, s_k: int) -> np.ndarray:
    """Scores whose rounding to the dtype moves them by far less than 1 (the premise
    ``delta < 1``); in float32/float64 rows spanning up to 300 (exponentials underflow)."""
    top = 300.0 if impl.dtype in ("float64", "float32") else 24.0
    el = st.floats(-top, top / 10, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    return data.draw(hnp.arrays(np.float64, (s_q, s_k), elements=el), label="E")


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@examples(25)
@given(st.data())
def test_softmax_within_proved_bound(impl, causal, data):
    s_q = data.draw(st.integers(1, 5), label="s_q")
    s_k = data.draw(st.integers(s_q, 9) if causal else st.integers(1, 9), label="s_k")
    E = _scores(data, impl, s_q, s_k)
    plain = "reference" if arith(impl).impl == "reference" else "sdpa_plain"
    with pinned_sdpa(impl, plain, s_k, s_k):  # Q = E, K = V = I: the fused kernel
        got = impl.softmax(E, causal=causal)
    held = impl.round(E)
    ctx = mpmath.MPContext()
    ctx.dps = MP_DPS
    mask = causal_mask(s_q, s_k) if causal else None
    exact = rmp.masked_softmax(E, mask, ctx)
    # an upper bound of the exact weights: the mpmath value (within MP_REL of them) rounded up
    p_up = np.array([[float_up(mpf_fraction(x) * (1 + Fraction(MP_REL))) for x in row]
                     for row in exact])  # fmt: skip
    bound = softmax_bound(arith(impl), held, np.abs(held - E), causal=causal, p=p_up)
    assert mp_excess(got, exact, bound) <= 1.0
