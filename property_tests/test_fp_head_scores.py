"""fp_head_scores: computed scores Q G K^T / sqrt(dk) are within the proved bound.

Lean: ``Pldr.fp_head_scores`` (``lean/Pldr/Float/Head.lean``) with the metric's error as
an input bound: ``X ~ Q G^`` and the score product from ``fp_mixed_precision``, the scale
and its rounding:
``|E^ - tau Q G K^T| <= |tau| ((C (1 + e1)(1 + e2) - 1) |Q||G^||K|^T + C ((1 + e2) h1 |K|^T
+ h2) + |Q| dG |K|^T) + eta_s``.

Through the protocol's ``scores(q, k, G)`` with ``G`` drawn in float64: the kernels hold
it in their compute dtype (``dG = |fl(G) - G|``, the input bound), form ``Q G`` there (and
round it to bfloat16/float16 below float32), then ``@ K^T`` and the scale
(:func:`pyverify.fp.models.scores_bound`, path ``matmul``; the reference: ``reference``).
Oracle: exact rationals (``dk`` a power of 4, so ``1/sqrt(dk)`` is rational); the
comparison is exact.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.fp.models import scores_bound
from pyverify.testing.fp import arith, exact_product, scores_path, worst_excess
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.strategies import arrays, examples

pytestmark = pytest.mark.theorem("fp_head_scores")


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(25)
@given(st.data())
def test_scores_within_proved_bound(impl, data):
    dk = data.draw(st.sampled_from([4, 16]), label="dk")
    s_q, s_k = data.draw(st.integers(1, 5), label="s_q"), data.draw(st.integers(1, 6), label="s_k")
    q = impl.round(data.draw(arrays((s_q, dk), 3.0), label="q"))
    k = impl.round(data.draw(arrays((s_k, dk), 3.0), label="k"))
    G = data.draw(arrays((dk, dk), 20.0), label="G")
    got = impl.scores(q, k, G)
    ar = arith(impl)
    held = G if ar.impl == "reference" else impl.hold(G)
    bound = scores_bound(ar, q, k, held, np.abs(held - G), scores_path(impl))
    tau = Fraction(1, {4: 2, 16: 4}[dk])
    qg = exact_product(q, G)
    kt = [[Fraction(float(x)) for x in col] for col in k]  # rows of K = columns of K^T
    exact = [[tau * sum((a * b for a, b in zip(r, c, strict=True)), Fraction(0)) for c in kt]
             for r in qg]  # fmt: skip
    assert worst_excess(got, exact, bound) <= 1.0
