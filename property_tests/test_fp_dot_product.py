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
import torch
from hypothesis import given
from hypothesis import strategies as st

from pyverify.conformance.subject import not_applicable
from pyverify.fp.formulas import (
    SMALLEST_NORMAL,
    UNDERFLOW,
    fp_dot_product,
    fp_flush_to_zero_dot_product,
)
from pyverify.fp.underflow import FlushToZero
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


def _underflowing_column(impl) -> np.ndarray:
    """Two entries ``a = (1 + 2^-7) 2^e`` (8 significant bits: every dtype but float16
    holds them) whose square ``2^2e + 2^(2e-6) + 2^(2e-14)`` lies below the arithmetic's
    normal range with its last term below half the subnormal spacing ``2^sub``: each
    rounded product drops it, a relative error of ``2^-14``, far above ``gamma_n``, but an
    absolute error below ``eta = 2^(sub-1)``."""
    sub = {"float64": -1074, "float32": -149}[arith(impl).compute]
    return np.full((2, 1), (1 + 2.0**-7) * 2.0 ** ((sub + 13) // 2 - 1))


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
def test_the_eta_term_is_what_covers_an_underflowing_product(impl):
    """The statement's ``eta`` is exercised: without it the bound is violated, with it
    the computed dot product is within. (Float16 inputs cannot make a float32 product
    underflow: every product of two float16 numbers is normal in float32.)"""
    if impl.dtype == "float16":
        not_applicable("float16 inputs: no product underflows in float32")
    q = _underflowing_column(impl)
    assert np.array_equal(impl.round(q), q)  # held exactly
    got = impl.density(q)  # sum of the two squares
    ar = arith(impl)
    exact = exact_product(q.T, q)
    mass = np.abs(q).T @ np.abs(q)
    n = q.shape[0]  # the products of one entry of Q^T Q
    assert worst_excess(got, exact, fp_dot_product(mass, n, ar.u_c)) > 1.0  # no eta: out
    with_eta = fp_dot_product(mass, n, ar.u_c, n * UNDERFLOW[ar.compute])
    assert worst_excess(got, exact, with_eta) <= 1.0


@pytest.mark.parametrize("impl", [i for i in ALL if i.device == "cpu" and i.dtype in
                                  ("float64", "float32")], ids=impl_ids)  # fmt: skip
def test_flush_to_zero_is_refused_where_it_would_break_the_bound(impl):
    """Under ``torch.set_flush_denormal(True)`` (this thread's FTZ and DAZ: NumPy's float64
    too) the same products are flushed to 0, outside the gradual-underflow bound: the
    gradual arithmetic refuses with one line naming the device, the dtype and the mode,
    and the flush-to-zero bound (``Pldr.fp_flush_to_zero_dot_product``, ``rho = 2^emin``
    per product and per partial sum) holds. Mode restored after."""
    q = _underflowing_column(impl)
    ar = arith(impl)
    n = q.shape[0]  # the products summed
    bound = fp_dot_product(np.abs(q).T @ np.abs(q), n, ar.u_c, n * UNDERFLOW[ar.compute])
    exact = exact_product(q.T, q)
    if not torch.set_flush_denormal(True):
        not_applicable("no flush-to-zero mode on this CPU")
    try:
        got = impl.density(q)
        with pytest.raises(FlushToZero, match="flush-to-zero") as refused:
            arith(impl)
    finally:
        torch.set_flush_denormal(False)
    assert worst_excess(got, exact, bound) > 1.0  # what a gradual bound would have judged
    assert ar.device in str(refused.value) and "refused" in str(refused.value)
    rho = SMALLEST_NORMAL[ar.compute]
    ftz = fp_flush_to_zero_dot_product(np.abs(q).T @ np.abs(q), 2, ar.u_c, rho, rho)
    assert worst_excess(got, exact, ftz) <= 1.0
