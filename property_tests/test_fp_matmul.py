"""fp_matmul: every entry of a matrix product is within gamma_n (|A||B|) of the exact one.

Lean: ``Pldr.fp_matmul`` (``lean/Pldr/Float/Sum.lean``): each entry a dot product in its
own order (blocked, split, reordered), ``|C^ - A B| <= gamma_n |A||B| + (1 + gamma_{n-1})
n eta``.

Through the protocol's optional ``density(q)``: ``Q^T Q`` over the held queries, in the
compute dtype (``n = S``). Oracle: the exact rational product; the comparison is exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyverify.fp.formulas import UNDERFLOW, fp_matmul
from pyverify.testing.fp import arith, exact_product, worst_excess
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.strategies import arrays, examples, subnormal_floats, underflow_band

pytestmark = pytest.mark.theorem("fp_matmul")


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(30)
@given(st.data())
def test_matrix_product_within_gamma_n(impl, data):
    s = data.draw(st.integers(1, 40), label="S")
    dk = data.draw(st.integers(1, 6), label="dk")
    q = impl.round(data.draw(arrays((s, dk), 4.0), label="q"))
    got = impl.density(q)
    ar = arith(impl)
    bound = fp_matmul(abs(q).T, abs(q), ar.u_c, UNDERFLOW[ar.compute])
    assert worst_excess(got, exact_product(q.T, q), bound) <= 1.0


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(20)
@given(st.data())
def test_matrix_product_below_the_normal_range(impl, data):
    """Entries ``m 2^e`` whose products fall below the arithmetic's normal range
    (:func:`~pyverify.testing.strategies.underflow_band`): each rounded product carries
    the absolute error ``eta`` of the statement, partial sums of subnormals are exact
    (gradual underflow, probed by the bound: a flushing device refuses it)."""
    s = data.draw(st.integers(1, 24), label="S")
    dk = data.draw(st.integers(1, 4), label="dk")
    band = underflow_band(impl.dtype, arith(impl).compute)
    q = impl.round(data.draw(hnp.arrays(np.float64, (s, dk), elements=subnormal_floats(band)),
                             label="q"))  # fmt: skip
    got = impl.density(q)
    ar = arith(impl)
    bound = fp_matmul(abs(q).T, abs(q), ar.u_c, UNDERFLOW[ar.compute])
    assert worst_excess(got, exact_product(q.T, q), bound) <= 1.0
