"""fp_dot_product: a dot product in any order is within gamma_n sum |a_i||b_i|.

Lean: ``Pldr.fp_dot_product`` (``lean/Pldr/Float/Sum.lean``): each product rounded or
exact (it feeds a fused multiply-add), the products added in any order, ``n u < 1``:
``|a^.b - a.b| <= gamma_n sum |a_i||b_i| + (1 + gamma_{n-1}) sum eta_i`` (``eta_i``: a
product's underflow, here ``n`` times the compute format's).

Through the protocol: ``scores(q, k, I)`` is ``q_i . k_j / sqrt(dk)``, dot products of the
held rows in the compute dtype (``Q I`` is exact; ``dk`` a power of 4: the scaling is
exact). Oracle: exact rational dot products; the comparison is exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.fp.formulas import UNDERFLOW, fp_dot_product
from pyverify.testing.fp import arith, exact_product, worst_excess
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.strategies import arrays, examples

pytestmark = pytest.mark.theorem("fp_dot_product")


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(30)
@given(st.data())
def test_dot_products_within_gamma_n(impl, data):
    dk = data.draw(st.sampled_from([4, 16, 64]), label="dk")
    s_q, s_k = data.draw(st.integers(1, 4), label="s_q"), data.draw(st.integers(1, 4), label="s_k")
    q = impl.round(data.draw(arrays((s_q, dk), 10.0), label="q"))
    k = impl.round(data.draw(arrays((s_k, dk), 10.0), label="k"))
    got = impl.scores(q, k, np.eye(dk)) * np.sqrt(dk)
    ar = arith(impl)
    bound = fp_dot_product(np.abs(q) @ np.abs(k).T, dk, ar.u_c, dk * UNDERFLOW[ar.compute])
    assert worst_excess(got, exact_product(q, k.T), bound) <= 1.0
