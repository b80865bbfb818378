"""fp_summation: a floating-point sum of n terms, in any order, is within gamma_{n-1} sum |f|.

Lean: ``Pldr.fp_summation`` (``lean/Pldr/Float/Sum.lean``): for every summation tree
that adds each term once, rounding every partial sum with unit round-off ``u``,
``|s^ - sum f| <= gamma_{n-1} sum |f|``. The order is whatever the implementation's BLAS
or fused kernel picks: the theorem covers all of them.

The sum is reached through the protocol: ``scores(q, k, I)`` with a query row of ones
gives ``sum_a k_ja / sqrt(dk)`` (products with 1 and 0 are exact; ``dk`` a power of 4 so
that ``1/sqrt(dk)`` is a power of two and the scaling is exact), accumulated in the
implementation's compute dtype. Oracle: the exact rational sum of the held keys; the
comparison is exact (Fractions). Bound: :func:`pyverify.fp.formulas.fp_summation` at
``u_compute`` (float64 for the reference, else float32).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.fp.formulas import fp_summation
from pyverify.testing.fp import arith, worst_excess
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.strategies import arrays, examples

pytestmark = pytest.mark.theorem("fp_summation")


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(30)
@given(st.data())
def test_any_order_sum_within_gamma(impl, data):
    dk = data.draw(st.sampled_from([4, 16, 64]), label="dk")
    s_k = data.draw(st.integers(1, 6), label="s_k")
    k = impl.round(data.draw(arrays((s_k, dk), 100.0), label="k"))
    ones = np.ones((1, dk))
    got = impl.scores(ones, k, np.eye(dk)) * np.sqrt(dk)  # exact: dk a power of 4
    exact = [[sum((Fraction(float(x)) for x in row), Fraction(0)) for row in k]]
    bound = fp_summation(np.abs(k).sum(axis=1)[None, :], dk, arith(impl).u_c)
    assert worst_excess(got, exact, bound) <= 1.0


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(10)
@given(st.data())
def test_cancelling_sum_within_gamma(impl, data):
    """Terms of both signs summing to almost nothing: the bound is relative to
    ``sum |f|``, not to the result, and still holds."""
    dk = data.draw(st.sampled_from([16, 64]), label="dk")
    half = impl.round(data.draw(arrays((1, dk // 2), 50.0), label="half"))
    k = np.concatenate([half, -half], axis=1)
    k[0, 0] = impl.round(k[0, 0] + data.draw(st.sampled_from([1e-3, 0.5, 0.0]), label="eps"))
    got = impl.scores(np.ones((1, dk)), k, np.eye(dk)) * np.sqrt(dk)
    exact = [[sum((Fraction(float(x)) for x in k[0]), Fraction(0))]]
    bound = fp_summation(np.abs(k).sum(axis=1)[None, :], dk, arith(impl).u_c)
    assert worst_excess(got, exact, bound) <= 1.0
