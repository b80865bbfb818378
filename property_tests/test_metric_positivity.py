"""metric_positivity: iSwiGLU >= 0, A_LM > 0 and A_P > 0 entrywise.

No tolerance anywhere: these hold exactly in floating point too. ``silu(z) = z sigmoid(z)``
has the sign of z (sigmoid > 0, or underflows to +0), so ``z silu(z)`` is a product of two
numbers of one sign: >= 0 (or +0), never negative after rounding. Adding ``eps > 0`` (the
metric epsilon as the compute dtype holds it) to a value >= 0 rounds to >= eps (rounding
is monotone and eps is representable). A positive base to any finite power is > 0 unless
the exact value is below the dtype's smallest subnormal: the tests keep ``|P log A_LM|``
inside the normal range, or skip overflow the implementations report as an error.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given, reject
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from impls import ALL, REFERENCE, impl_ids
from strategies import arrays, head_params

import pyverify.kernels as kern
from pyverify.reference import PowerLawOverflowError
from pyverify.reference import mp as rmp
from pyverify.reference import numpy_head as nh

pytestmark = pytest.mark.theorem("metric_positivity")

OVERFLOW = (PowerLawOverflowError, kern.PowerLawOverflowError)


def _eps_in(impl, eps: float) -> float:
    """The metric epsilon as the compute dtype holds it (1e-9 is not a float32 number)."""
    return float(np.float32(eps)) if impl.u_compute > 2.0**-53 else eps


@st.composite
def deductive_cases(draw):
    s = draw(st.integers(1, 8))
    dk = draw(st.sampled_from([2, 4, 6, 8]))
    q = draw(arrays((s, dk), draw(st.sampled_from([1.0, 30.0]))))
    p_range = draw(st.sampled_from([(0.5, 1.5), (-3.0, 3.0)]))
    return q, draw(head_params(dk, p_range=p_range))


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(deductive_cases())
def test_metric_and_potential_tensors_are_positive(impl, case):
    q, params = case
    try:
        res = impl.deductive(impl.round(q), params)
    except OVERFLOW:
        reject()  # the power law left the dtype's range: reported, not returned as inf
    eps = _eps_in(impl, params.metric_eps)
    assert np.all(res.A_LM >= eps)
    assert np.all(res.A_LM > 0)
    # A_P = A_LM ** P > 0: here A_LM >= 1e-9 and |P| <= 3, so A_P >= 1e-27 (normal in fp32)
    assert np.all(res.A_P > 0)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4, 8]), st.data())
def test_positivity_from_any_metric_learner_output(impl, dk, data):
    """Steps 4-6 from an arbitrary A (large negative entries drive W A + b deep into
    iSwiGLU's flat tail, where z^2 sigmoid(z) underflows to 0 and only eps remains)."""
    params = data.draw(head_params(dk))
    A = data.draw(arrays((dk, dk), data.draw(st.sampled_from([1.0, 1e2, 1e4]))))
    try:
        A_LM, A_P, _ = impl.energy(A, params)
    except OVERFLOW:
        reject()
    eps = _eps_in(impl, params.metric_eps)
    assert np.all(A_LM >= eps)
    assert np.all(A_P > 0)  # P in [0.5, 1.5], A_LM >= 1e-9 -> A_P >= 1e-13.5


@pytest.mark.parametrize("impl", [REFERENCE], ids=impl_ids)
@given(hnp.arrays(np.float64, st.integers(1, 64), elements=st.floats(allow_nan=False)))
def test_iswiglu_is_nonnegative_for_every_float(impl, x):
    """iSwiGLU(x) = x silu(x) >= 0 for every float64, infinities and signed zeros included
    (values beyond ~1e154 overflow to +inf, still >= 0; never NaN)."""
    y = nh.iswiglu(x)
    assert not np.any(np.isnan(y))
    assert np.all(y >= 0)
    assert np.all(nh.silu(x) * np.sign(x) >= 0)  # silu has the sign of x


@pytest.mark.implementation("reference", dtype="mpmath")
@given(st.integers(2, 4).flatmap(lambda dk: st.tuples(
    arrays((dk, dk), 50.0), arrays((dk, dk), 60.0), st.integers(0, 2**32 - 1))))  # fmt: skip
def test_positivity_beyond_float_range_in_mpmath(case):
    """The mpmath reference has an unbounded exponent range: with |P| up to 60 and large
    negative W A + b, A_LM ** P neither overflows nor underflows there, and A_LM > 0,
    A_P > 0 hold strictly (where float64 would overflow or flush to 0)."""
    A, P, seed = case
    dk = A.shape[0]
    rng = np.random.default_rng(seed)
    W, b = rng.normal(0, 1, (dk, dk)), rng.normal(0, 1, (dk, dk))
    ctx = mpmath.MPContext()
    ctx.dps = 30
    A_LM = rmp.metric_tensor(A, W, b, 1e-9, ctx=ctx)
    A_P = rmp.power_law(A_LM, P, ctx=ctx)
    assert all(x > 0 for row in A_LM for x in row)
    assert all(x >= ctx.mpf(1e-9) for row in A_LM for x in row)
    assert all(x > 0 for row in A_P for x in row)
