"""fp_flush_to_zero: sums computed with flush-to-zero are within the FTZ bound.

Lean: ``Pldr.fp_flush_to_zero`` (``lean/Pldr/Float/Ftz.lean``): when every partial sum is
rounded with ``|fl x - x| <= u |x| + rho`` (flush-to-zero: ``rho = 2^emin``,
``fp_flush_to_zero_rounding``), a sum of ``n`` terms in any order is within
``gamma_{n-1} sum |f| + (1 + gamma_{n-1})(n - 1) rho``; with leaves off by
``e M_i + eta_i``, ``fp_flush_to_zero_perturbed``.

Both implementations run with the CPU's flush-to-zero and denormals-are-zero modes on
(``torch.set_flush_denormal(True)``; it sets the thread's MXCSR, so NumPy's float64
arithmetic is flushed too), on terms around the smallest normal number of the compute
format, where partial sums fall below it and are flushed instead of kept. The sum is
reached as in ``test_fp_summation``: ``scores(q, k, I)`` with a query row of ones gives
``sum_a k_a / sqrt(dk)``. The bound covers both places of the scaling ``1/sqrt(dk)``
(a power of two): on the query (every leaf one FTZ product ``tau k_a``) or on the sum
(one FTZ product at the end); inputs read under DAZ are off by at most ``rho``
(``fp_flush_to_zero_daz``). Oracle: the exact rational sum of the held keys.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pyverify.fp import ieee
from pyverify.fp.stages import fp_flush_to_zero_perturbed
from pyverify.testing.fp import arith
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.strategies import examples

pytestmark = pytest.mark.theorem("fp_flush_to_zero")


def _ftz_bound(abs_sum: Fraction, n: int, u: Fraction, rho: Fraction, tau: Fraction) -> Fraction:
    """``|got - sum k|`` for ``got = scores * sqrt(dk)``, scaling on either side."""
    # scaling last: leaves off by rho (DAZ), the sum, one FTZ product tau s^
    e_sum = fp_flush_to_zero_perturbed(abs_sum, n * rho, n, u, Fraction(0), rho)
    last = e_sum + u * (abs_sum + e_sum) + rho / tau
    # scaling first: leaves fl(tau k~) off by u tau |k| + (1 + u) tau rho + rho
    first = fp_flush_to_zero_perturbed(tau * abs_sum, n * ((1 + u) * tau * rho + rho), n, u, u, rho)
    return max(last, first / tau)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(30)
@given(st.data())
def test_flushed_sums_within_the_ftz_bound(impl, data):
    u_c = arith(impl).u_c
    comp = ieee.BINARY64 if arith(impl).compute == "float64" else ieee.BINARY32
    rho = comp.eta_ftz
    dk = data.draw(st.sampled_from([4, 16, 64]), label="dk")
    ms = data.draw(st.lists(st.integers(-(2**10), 2**10), min_size=dk, max_size=dk), label="m")
    es = data.draw(st.lists(st.integers(-14, 2), min_size=dk, max_size=dk), label="e")
    raw = [float(m * rho * ieee.pow2(e)) for m, e in zip(ms, es, strict=True)]
    k = impl.round(np.asarray([raw], dtype=np.float64))
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU has no flush-to-zero mode")
    try:
        got = impl.scores(np.ones((1, dk)), k, np.eye(dk))[0, 0]
    finally:
        torch.set_flush_denormal(False)
    got_q = Fraction(float(got)) * int(np.sqrt(dk))  # exact: sqrt(dk) a power of two
    exact = sum((Fraction(float(x)) for x in k[0]), Fraction(0))
    abs_sum = sum((abs(Fraction(float(x))) for x in k[0]), Fraction(0))
    bound = _ftz_bound(abs_sum, dk, Fraction(u_c), rho, Fraction(1, int(np.sqrt(dk))))
    assert abs(got_q - exact) <= bound, (impl.name, impl.dtype, float(got_q), float(exact))


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(30)
@given(st.data())
def test_flushed_rounding_within_u_plus_smallest_normal(impl, data):
    """``fp_flush_to_zero_rounding``: ``|fl x - x| <= u |x| + 2^emin`` under flush-to-zero."""
    fmt = ieee.FORMATS[impl.dtype]
    ms = data.draw(st.lists(st.integers(1, 2**52), min_size=16, max_size=16), label="m")
    es = data.draw(st.lists(st.integers(-60, 4), min_size=16, max_size=16), label="e")
    xs = [float(m * fmt.eta_ftz * ieee.pow2(e - 52)) for m, e in zip(ms, es, strict=True)]
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU has no flush-to-zero mode")
    try:
        got = impl.round(np.asarray(xs, dtype=np.float64))
    finally:
        torch.set_flush_denormal(False)
    for x, g in zip(xs, got.tolist(), strict=True):
        q = Fraction(x)
        assert abs(Fraction(g) - q) <= fmt.u * abs(q) + fmt.eta_ftz, (impl.dtype, x, g)
