"""fp_mixed_precision: inputs rounded to a storage format, wider accumulation, result rounded.

Lean: ``Pldr.fp_mixed_precision`` and ``_matmul`` (``lean/Pldr/Float/Sum.lean``): inputs
``a``, ``b`` rounded at ``u_a``, ``u_b`` (normal range), products and any summation order
at ``u_acc``, the result rounded at ``u_out``:
``|y^ - sum a b| <= ((1 + u_out)(1 + u_a)(1 + u_b)(1 + gamma_n(u_acc)) - 1) sum |a||b|
+ (1 + u_out)(1 + gamma_{n-1}) sum eta + eta_out``. This is what bfloat16/float16 kernels
with float32 accumulation do.

Through ``density(q)`` on queries *not* representable in the implementation's dtype: the
implementation rounds them on entry (``u_a = u_b = u_io`` below float64; the float64
reference holds them exactly, ``u_in = 0``), accumulates ``Q^T Q`` in its compute dtype
and returns it there (``u_out = 0``). Oracle: the exact product of the *unrounded*
queries; the comparison is exact. The drawn magnitudes (0 or >= 1e-3) keep every input in
the normal range of every dtype, the premise of the input rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.fp.formulas import SMALLEST_NORMAL, UNDERFLOW, fp_mixed_precision
from pyverify.testing.fp import arith, exact_product, worst_excess
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.strategies import arrays, examples

pytestmark = pytest.mark.theorem("fp_mixed_precision")


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(30)
@given(st.data())
def test_rounded_inputs_wide_accumulation(impl, data):
    s = data.draw(st.integers(1, 48), label="S")
    dk = data.draw(st.integers(1, 6), label="dk")
    q = data.draw(arrays((s, dk), 4.0), label="q")  # float64: rounded by the implementation
    nz = np.abs(q[q != 0])
    ar = arith(impl)
    assert nz.size == 0 or nz.min() >= SMALLEST_NORMAL[ar.dtype]  # the premise
    got = impl.density(q)
    u_in = 0.0 if ar.dtype == "float64" else ar.u_io
    bound = fp_mixed_precision(
        np.abs(q).T @ np.abs(q), s, ar.u_c, u_a=u_in, u_b=u_in, eta_sum=s * UNDERFLOW[ar.compute]
    )
    assert worst_excess(got, exact_product(q.T, q), bound) <= 1.0
