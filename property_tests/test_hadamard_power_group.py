"""hadamard_power_group: for entrywise positive A, A^(o(s+t)P) = A^(o sP) o A^(o tP), A^(o 0) = 1.

The implementations' power law is step 5, ``A_P = A_LM ** P`` entrywise, reached through
their public steps 4-6 (reference ``metric_tensor``/``power_law``, kernels
``energy_curvature``). With ``W = I`` and ``b = 0`` step 4 gives ``A_LM = iSwiGLU(A) + eps``,
positive, and the same bits for every exponent matrix; ``A`` in [0.5, 3] keeps A_LM in
[0.15, 8.6] and every power below 1e12 (no overflow in float32).

Exponents are multiples of 1/4 in [-2, 2] times integers in [-3, 3], so ``sP``, ``tP``
and ``(s + t)P`` are exact in float32 and float64: only ``pow`` and the Hadamard product
round. Tolerance, exact (``Within`` of ``Pldr.Float.Model``, as in ``fp_elementwise``):
each power within ``r`` relative (the library ``pow``, 2 ulp:
:data:`pyverify.fp.models.LIB_ACCURACY`), the float64 product of two float32 powers exact
(one rounding ``u_64`` for float64 ones), so
``|Ps Pt - Pst| <= ((1 + r)^2 (1 + u_prod) - 1 + r) x^(s+t)`` and
``x^(s+t) <= |Pst| / (1 - r)``. The bfloat16/float16 kernels run steps 4-6 in float32: the
float32 kernels are that code.
``A^(o 0) = 1`` is exact (``pow(x, 0) = 1``) and asserted bitwise.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyverify.fp.formulas import EVAL_SLACK, SMALLEST_NORMAL, prod1m
from pyverify.fp.models import LIB_ACCURACY
from pyverify.precision import UNIT_ROUNDOFF
from pyverify.reference import PLGAParams
from pyverify.testing.fp import arith
from pyverify.testing.impls import FLOAT, impl_ids
from pyverify.testing.strategies import examples, grid_arrays, seeds

pytestmark = pytest.mark.theorem("hadamard_power_group")

#: ``[fp_ieee_rounding]`` float64's unit round-off: a float64 product rounded once.
U64 = UNIT_ROUNDOFF["float64"]
#: [non-vacuity] A power ``x^(sP)`` with ``sP != 0`` and ``|ln x| > 1e-3`` must differ from
#: 1 by more than this (``|sP ln x| >= 2.5e-4``): the law relates different matrices.
DISTINCT = 1e-4


@st.composite
def power_cases(draw):
    dk = draw(st.sampled_from([2, 4, 6, 8]))
    A = draw(hnp.arrays(np.float64, (dk, dk), elements=st.integers(4, 24).map(lambda i: i / 8)))
    P = draw(grid_arrays((dk, dk), bound=2, denom=4))
    s, t = draw(st.integers(-3, 3)), draw(st.integers(-3, 3))
    base = PLGAParams.random(dk=dk, a_dff=1, num_reslayer=0, num_dense=0, seed=draw(seeds))
    params = dataclasses.replace(base, W=np.eye(dk), b=np.zeros((dk, dk)))
    return A, P, s, t, params


def _power(impl, A, P, params) -> tuple[np.ndarray, np.ndarray]:
    """``(A_LM, A_P)`` of the implementation with exponent matrix P."""
    A_LM, A_P, _ = impl.energy(A, dataclasses.replace(params, P=P))
    return A_LM, A_P


def product_rel_bound(r: float, u_prod: float) -> float:
    """``[fp_elementwise]`` ``[fp_ieee_rounding]`` ``|fl(Ps Pt) - Pst| / |Pst|``.

    Each computed power is the exact one within ``r`` relative (``fp_elementwise`` with an
    exact input, ``d = 0``, results in the normal range: ``eta_f = 0``); the float64
    product of the two rounds once at ``u_prod`` (``fp_ieee_rounding``, normal range; 0
    for two float32 powers, whose product is a float64 number), so
    ``|fl(Ps Pt) - x^(s+t)| <= ((1 + r)^2 (1 + u_prod) - 1) x^(s+t)`` and
    ``|Pst - x^(s+t)| <= r x^(s+t)``, with ``x^(s+t) <= |Pst| / (1 - r)``. Evaluated
    without cancellation (``prod1m``), times ``EVAL_SLACK``.
    """
    return EVAL_SLACK * (prod1m(r, r, u_prod) + r) / (1 - r)


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@given(power_cases())
def test_hadamard_powers_add_exponents(impl, case):
    A, P, s, t, params = case
    L1, Ps = _power(impl, A, s * P, params)
    L2, Pt = _power(impl, A, t * P, params)
    L3, Pst = _power(impl, A, (s + t) * P, params)
    assert np.array_equal(L1, L2) and np.array_equal(L1, L3)  # one base, bitwise
    assert np.all(L1 > 0)
    comp = arith(impl).compute
    r, r64 = LIB_ACCURACY[comp], LIB_ACCURACY["float64"]
    u_prod = U64 if comp == "float64" else 0.0  # float32 x float32 is exact in float64
    rhs = Pst  # the (s + t) power
    # product_rel_bound's premise: every power in the normal range (no underflow term)
    assert min(np.abs(Ps).min(), np.abs(Pt).min(), np.abs(Pst).min()) >= SMALLEST_NORMAL[comp]
    assert np.all(np.abs(Ps * Pt - rhs) <= product_rel_bound(r, u_prod) * np.abs(rhs))
    # the oracle: float64 powers of the held base (within r64 relative)
    want = np.power(L1, (s + t) * P)
    assert np.all(np.abs(Pst - want) <= (r + r64) / (1 - r64) * want)


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@given(power_cases())
def test_zeroth_hadamard_power_is_all_ones(impl, case):
    A, P, _, _, params = case
    L, A0 = _power(impl, A, np.zeros_like(P), params)
    assert np.all(L > 0)
    assert np.array_equal(A0, np.ones_like(A0))


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@given(power_cases())
def test_powers_are_not_trivially_equal(impl, case):
    """Non-vacuity: with s != 0 and a base entry != 1, ``A^(o sP)`` differs from
    ``A^(o 0)``; the law relates genuinely different matrices."""
    A, P, s, _, params = case
    L, Ps = _power(impl, A, s * P, params)
    mask = (s * P != 0) & (np.abs(np.log(L)) > 1e-3)
    if np.any(mask):
        assert np.all(np.abs(Ps[mask] - 1) > DISTINCT)


# --------------------------------------------------------------------------- exact
@pytest.mark.implementation("reference", dtype="exact")
@examples(40)
@given(st.data())
def test_hadamard_power_group_exactly(data):
    """Positive rational A, integer P, s, t: the group law holds with equality."""
    n = data.draw(st.integers(1, 3))
    pos = st.builds(Fraction, st.integers(1, 9), st.integers(1, 9))
    A = data.draw(st.lists(st.lists(pos, min_size=n, max_size=n), min_size=n, max_size=n))
    P = data.draw(st.lists(st.lists(st.integers(-3, 3), min_size=n, max_size=n),
                           min_size=n, max_size=n))  # fmt: skip
    s, t = data.draw(st.integers(-3, 3)), data.draw(st.integers(-3, 3))
    for i in range(n):
        for j in range(n):
            a, p = A[i][j], P[i][j]
            assert a ** ((s + t) * p) == a ** (s * p) * a ** (t * p)
            assert a ** (0 * p) == 1


@pytest.mark.implementation("reference", dtype="exact")
def test_hadamard_power_group_symbolically():
    """For a symbolic positive base (the case where real powers are defined) and real
    exponents: ``x^((s+t)p) = x^(sp) x^(tp)`` and ``x^(0 p) = 1``."""
    x = sympy.Symbol("x", positive=True)
    s, t, p = sympy.symbols("s t p", real=True)
    assert sympy.simplify(x ** ((s + t) * p) - x ** (s * p) * x ** (t * p)) == 0
    assert x ** (0 * p) == 1
