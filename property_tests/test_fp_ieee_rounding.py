"""fp_ieee_rounding: an implementation's rounding to its dtype is IEEE round-to-nearest-even.

Lean: ``Pldr.fp_ieee_rounding`` (``lean/Pldr/Float/Ieee.lean``): for every rational ``x``,
``|rne x - x| <= u |x| + eta`` (``u = 2^-p``, ``eta = 2^(emin - p)``), ``<= u |x|`` at
every integer multiple of the smallest subnormal (``fp_ieee_rounding_lattice``: the exact
sum of two numbers of the format, gradual underflow), and numbers of the format are fixed
(``fp_ieee_rounding_grid``).

The implementation's rounding is ``impl.round`` (float64 values to the implementation's
dtype: the identity on the reference, torch's conversion on the kernels). Oracle:
:func:`pyverify.fp.ieee.rne` on Fractions (the Lean definition written out), independent
of NumPy and torch. torch converts float64 to bfloat16 and float16 through float32 (two
roundings); on such inputs the kernels' result is the oracle applied twice, and the
bound of the theorem still holds; on float32 inputs it is the oracle exactly.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.fp import ieee
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.strategies import examples

pytestmark = pytest.mark.theorem("fp_ieee_rounding")


def _values(fmt: ieee.Format, n: int) -> st.SearchStrategy[list[float]]:
    """float64 values over ``fmt``'s subnormal and normal range (53 random bits each)."""
    hi = min(fmt.emax - 1, 60)
    one = st.tuples(
        st.integers(2**52, 2**53 - 1), st.integers(fmt.qexp - 3, hi), st.booleans()
    ).map(lambda t: float(np.ldexp(float(t[0]), t[1] - 52)) * (-1 if t[2] else 1))
    return st.lists(one, min_size=n, max_size=n)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(30)
@given(st.data())
def test_rounding_is_rne_within_the_bound(impl, data):
    fmt = ieee.FORMATS[impl.dtype]
    xs = data.draw(_values(fmt, 16), label="x")
    xs32 = [float(np.float32(x)) for x in xs if abs(x) < 3e38]  # one rounding in torch
    for group in (xs, xs32):
        got = impl.round(np.asarray(group, dtype=np.float64))
        for x, g in zip(group, got.tolist(), strict=True):
            q, gq = Fraction(x), Fraction(g)
            # the theorem, exactly
            assert abs(gq - q) <= fmt.u * abs(q) + fmt.eta, (impl.dtype, x, g)
            if abs(q) >= fmt.eta_ftz:
                assert abs(gq - q) <= fmt.u * abs(q), (impl.dtype, x, g)
            # the oracle: rne, or rne after float32 (torch's float64 -> bfloat16 / float16)
            direct = ieee.rne(fmt, q)
            twice = ieee.rne(fmt, ieee.rne(ieee.BINARY32, q))
            assert gq == direct or (group is xs and gq == twice), (impl.dtype, x, g, direct)
            assert ieee.rne(fmt, gq) == gq  # a number of the format is fixed


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(30)
@given(st.data())
def test_exact_sums_below_the_normal_range_need_no_eta(impl, data):
    """The sum of two numbers of the format, around and below ``2^emin``, is rounded with
    relative error ``u`` and no absolute term (exactly, where it is subnormal)."""
    fmt = ieee.FORMATS[impl.dtype]
    q = ieee.pow2(fmt.qexp)
    top = 2 ** min(fmt.p + 2, 50)  # a, b below 2^(emin + 3): every sum fits in float64
    ms = data.draw(st.lists(st.integers(-top, top), min_size=16, max_size=16), label="m")
    nums = [ieee.rne(fmt, m * q) for m in ms]
    sums = [a + b for a, b in zip(nums[::2], nums[1::2], strict=True)]
    got = impl.round(np.asarray([float(s) for s in sums], dtype=np.float64))
    for s, g in zip(sums, got.tolist(), strict=True):
        assert Fraction(float(s)) == s  # the exact sum is the float64 input
        assert abs(Fraction(g) - s) <= fmt.u * abs(s), (impl.dtype, s, g)
        if abs(s) < fmt.eta_ftz:
            assert Fraction(g) == s  # gradual underflow: a subnormal sum is exact
