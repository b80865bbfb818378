"""dag_floor: tr(exp(N)) truncations >= d + d e; the NOTEARS penalty of A_LM o A_LM >= d eps^2.

Why exact arithmetic: with eps = 1e-9 the floor d eps^2 is ~1e-17, below the rounding
error of any float evaluation of tr(exp(N)) - d (~d u64 ~ 1e-15): a float check would pass
or fail by accident. So the A_LM each implementation produces (floats, hence exact dyadic
rationals) is converted to Fractions and the truncated series is summed exactly.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.testing.exact import exp_trace_truncation, from_numpy, hadamard, mat
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.strategies import arrays, head_params

pytestmark = pytest.mark.theorem("dag_floor")


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.integers(1, 6), st.sampled_from([2, 4, 6, 8]), st.data())
def test_notears_penalty_of_the_metric_tensor_is_bounded_below(impl, s, dk, data):
    q = impl.round(data.draw(arrays((s, dk), 2.0), label="q"))
    params = data.draw(head_params(dk), label="params")
    A_LM = impl.deductive(q, params).A_LM
    # eps as the compute dtype holds it: 1e-9 rounded to float32 for the non-float64 kernels
    eps = Fraction(impl.hold(params.metric_eps))
    A = from_numpy(A_LM)
    N = hadamard(A, A)  # N = A_LM o A_LM, exactly
    assert all(x >= 0 for row in N for x in row)
    e = min(N[i][i] for i in range(dk))
    assert e >= eps * eps  # A_LM >= eps entrywise (metric_positivity), squared
    floor = dk + dk * e
    previous = None
    for order in (1, 2, 3):
        t = exp_trace_truncation(N, order)
        assert t >= floor  # every truncation of order >= 1
        assert previous is None or t >= previous  # non-decreasing: all terms >= 0
        previous = t
    # the NOTEARS penalty tr(exp N) - d >= (any truncation) - d >= d e >= d eps^2 > 0
    assert previous - dk >= dk * eps * eps > 0


@st.composite
def nonneg_rational(draw):
    d = draw(st.integers(1, 4))
    e = Fraction(draw(st.integers(0, 5)), draw(st.integers(1, 4)))
    rows = []
    for i in range(d):
        row = [Fraction(draw(st.integers(0, 9)), draw(st.integers(1, 5))) for _ in range(d)]
        row[i] = e + Fraction(draw(st.integers(0, 4)), draw(st.integers(1, 3)))  # diag >= e
        rows.append(row)
    return mat(rows), e


@pytest.mark.implementation("reference", dtype="exact")
@given(nonneg_rational(), st.integers(1, 5))
def test_truncations_of_exp_trace_are_at_least_d_plus_d_e(case, order):
    """Exact: N >= 0 entrywise with diag >= e -> sum_{k<=K} tr(N^k)/k! >= d + d e, K >= 1."""
    N, e = case
    d = len(N)
    assert exp_trace_truncation(N, order) >= d + d * e


@pytest.mark.implementation("reference", dtype="exact")
@given(st.integers(1, 5), st.fractions(min_value=0, max_value=10, max_denominator=50))
def test_floor_is_attained_by_the_first_truncation_of_e_times_identity(d, e):
    """The bound is sharp: N = e I gives the order-1 truncation d + d e exactly."""
    N = [[e if i == j else Fraction(0) for j in range(d)] for i in range(d)]
    assert exp_trace_truncation(N, 1) == d + d * e
