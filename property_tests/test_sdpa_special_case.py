"""sdpa_special_case: G = I gives exactly the SDPA scores, attention rows and outputs.

Floating point: where the head and the oracle are two different evaluations of the same
exact value, each is within its proved bound of it (``[fp_head_scores]``,
``[fp_softmax]``, ``[fp_head_output]``) and the tolerance is the sum of the two bounds.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyverify.fp.models import REFERENCE_ARITHMETIC, scores_bound
from pyverify.reference import mp, plga_forward, plga_forward_full
from pyverify.reference import numpy_head as nh
from pyverify.testing.fp import arith, attention_path
from pyverify.testing.impls import ALL, REFERENCE, attention_bound, impl_ids
from pyverify.testing.softmax_bounds import U64, reference_error
from pyverify.testing.strategies import head_params, qkv, with_constant_g

pytestmark = pytest.mark.theorem("sdpa_special_case")

EXACT_SDPA = ("float64", "float32")  # Q I = Q exactly and SDPA then sees the same Q


@st.composite
def cases(draw):
    s_q = draw(st.integers(1, 8))
    s_k = draw(st.integers(s_q, 8))
    dk = draw(st.sampled_from([1, 2, 3, 4, 6, 8]))  # no RoPE here: odd dk is allowed
    dv = draw(st.integers(1, 6))
    q, k, v = draw(qkv(s_q, dk, dv, s_k=s_k))
    return q, k, v, draw(head_params(dk)), draw(st.booleans())


def _check_is_sdpa(impl, res, q, k, v, causal):
    """``res`` (a head's result with G = I) against SDPA on the same rounded inputs."""
    dk = q.shape[1]
    if impl.name not in ("reference", "kernels"):
        # Any other implementation: against the reference's independent textbook SDPA
        # (float64) on the same rounded inputs; the implementation's evaluation and the
        # float64 one are each within their attention_bound of the exact value.
        want = REFERENCE.sdpa(q, k, v, causal=causal)
        own = attention_bound(impl, q, None, k, v)
        oracle = attention_bound(REFERENCE, q, None, k, v)
        assert np.max(np.abs(res.out - want)) <= own + oracle
        if res.E is not None:  # scores: Q I = Q exactly, then one product and the scale
            E = q @ k.T / np.sqrt(dk)
            eye = np.eye(dk)
            own_e = scores_bound(arith(impl), q, k, eye, None, attention_path(impl))
            oracle_e = scores_bound(REFERENCE_ARITHMETIC, q, k, eye, None, "reference")
            assert np.all(np.abs(res.E - E) <= own_e + oracle_e)
        return
    want = impl.sdpa(q, k, v, causal=causal)
    if impl.name == "reference":
        # Scores: (Q I) K^T / sqrt(dk); Q I = Q exactly (products with 1 and 0, sums with
        # exact zeros), so the scores equal SDPA's Q K^T / sqrt(dk) bitwise.
        E0 = q @ k.T / np.sqrt(dk)
        assert np.array_equal(res.E, E0)
        # Rows and outputs against the independent textbook SDPA: two float64 evaluations
        # of the same softmax(E) V, the head's and the textbook's, each within the
        # reference's attention_bound (impl is the reference: one bound, for each).
        each = attention_bound(impl, q, None, k, v)
        assert np.max(np.abs(res.out - want)) <= each + each
        s_q, s_k = E0.shape
        # The spec's bottom-right causal mask, written out rather than the reference's
        # causal_mask: the head masks with that function, so this oracle must not share it.
        allowed = np.arange(s_k)[None] <= np.arange(s_q)[:, None] + s_k - s_q
        allowed = allowed if causal else np.ones_like(allowed)
        E = np.where(allowed, E0, -np.inf)
        p = np.exp(E - E.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        # rows: the head's masked softmax and the textbook's, both NumPy's float64 softmax
        # of the same held scores: each within reference_error ([fp_softmax] at u64) of the
        # exact rows, one bound per evaluation
        row = reference_error(E0, allowed)
        assert np.all(np.abs(res.weights - p) <= row + row)
    elif impl.dtype in EXACT_SDPA:
        # Q G with G = I is exact and the same fused SDPA call follows: bitwise equal.
        assert np.array_equal(res.out, want)
    else:
        # bf16/fp16: Q G enters SDPA as [hi, lo] = [Q, 0] against [K, K] (head dim 2 dk):
        # a different kernel shape, so two evaluations each within its attention_bound
        # (the head's scores path sdpa_split, the plain SDPA's sdpa_plain).
        head = attention_bound(impl, q, None, k, v)
        plain = attention_bound(impl, q, None, k, v, path="sdpa_plain")
        assert np.max(np.abs(res.out - want)) <= head + plain


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(cases())
def test_identity_operator_gives_sdpa(impl, case):
    q, k, v, params, causal = case
    q, k, v = impl.round(q), impl.round(k), impl.round(v)
    dk = q.shape[1]
    res = impl.plga(q, k, v, params, G=np.eye(dk), causal=causal)
    _check_is_sdpa(impl, res, q, k, v, causal)
    if impl.name == "reference" and causal:  # the spec's API: causal=True is the default
        assert np.array_equal(plga_forward(q, k, v, params, G=np.eye(dk))[0], res.out)
        assert np.array_equal(plga_forward_full(q, k, v, params, G=np.eye(dk)).out, res.out)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(cases())
def test_metric_constant_identity_gives_sdpa_on_the_uncached_path(impl, case):
    """Steps 1-6 run (a = 0, b_a = I, so G(X) = I for every X) and still give SDPA."""
    q, k, v, params, causal = case
    q, k, v = impl.round(q), impl.round(k), impl.round(v)
    dk = q.shape[1]
    if q.shape[0] != k.shape[0]:
        k, v = k[: q.shape[0]], v[: q.shape[0]]  # the uncached path needs S_k = S_q
    res = impl.plga(q, k, v, with_constant_g(params, np.eye(dk)), causal=causal)
    # G = 0 A_P + I: the product with the zero matrix is exactly 0, so G = I exactly.
    assert np.array_equal(res.G, np.eye(dk))
    _check_is_sdpa(impl, res, q, k, v, causal)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_identity_scores_exact_on_integers(impl, data):
    """Exact arithmetic: dk = 4 (sqrt(dk) = 2) and integer Q, K with |entries| <= 3 make every
    score a multiple of 1/2 below 18, exact in every dtype; G = I must give Q K^T / 2 exactly."""
    s_q, s_k = data.draw(st.integers(1, 6), label="s_q"), data.draw(st.integers(1, 6), label="s_k")
    q = data.draw(hnp.arrays(np.float64, (s_q, 4), elements=st.integers(-3, 3)), label="q")
    k = data.draw(hnp.arrays(np.float64, (s_k, 4), elements=st.integers(-3, 3)), label="k")
    want = [[Fraction(int(x)) / 2 for x in row] for row in (q @ k.T).astype(int)]
    got = impl.scores(q, k, np.eye(4))
    assert [[Fraction(float(x)) for x in row] for row in got] == want


@pytest.mark.implementation("reference", dtype="mpmath")
@given(st.data())
def test_identity_scores_exact_in_mpmath_and_float64_reference(data):
    """Exact arithmetic: dyadic rationals (numerators <= 20, denominators 4 and 8) and dk = 4;
    every product and sum is exact in mpmath at 30 digits and in float64, and 1/sqrt(4) = 1/2
    is exact: both reference heads must give (Q I K^T) / 2 = Q K^T / 2 exactly."""
    s_q, s_k = data.draw(st.integers(1, 4), label="s_q"), data.draw(st.integers(1, 4), label="s_k")
    q = data.draw(hnp.arrays(np.int64, (s_q, 4), elements=st.integers(-20, 20)), label="q")
    k = data.draw(hnp.arrays(np.int64, (s_k, 4), elements=st.integers(-20, 20)), label="k")
    qf = [[Fraction(int(x), 4) for x in row] for row in q]
    kf = [[Fraction(int(x), 8) for x in row] for row in k]
    eye = [[Fraction(int(i == j)) for j in range(4)] for i in range(4)]
    want = [[sum(qi[t] * kj[t] for t in range(4)) / 2 for kj in kf] for qi in qf]
    ctx = mpmath.MPContext()
    ctx.dps = 30
    E = mp.scores(qf, kf, eye, ctx=ctx)
    for i in range(s_q):
        for j in range(s_k):
            w = want[i][j]
            assert E[i][j] == ctx.mpf(w.numerator) / w.denominator
    En = nh.scores(np.array(qf, dtype=float), np.array(kf, dtype=float), np.eye(4))
    assert [[Fraction(float(x)) for x in row] for row in En] == want


@pytest.mark.implementation("kernels", dtype="float64")
def test_oracle_sdpa_is_torch_sdpa():
    """The kernels' `sdpa` (the oracle above for the kernels) is torch's fused SDPA."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 5, 4, generator=g, dtype=torch.float64) for _ in range(3))
    from pyverify.kernels import sdpa

    assert torch.equal(sdpa(q, k, v), F.scaled_dot_product_attention(q, k, v, is_causal=True))


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(cases())
def test_identity_operator_output_is_exact_sdpa_within_bound(impl, case):
    """Against exact arithmetic: the head with G = I is within attention_bound of the exact
    softmax(Q K^T / sqrt(dk)) V (mpmath, 30 digits, on the same rounded inputs), plus the
    oracle's rounding to float64 (``u64 |want|``, ``[fp_ieee_rounding]``)."""
    q, k, v, params, causal = case
    q, k, v = impl.round(q), impl.round(k), impl.round(v)
    dk = q.shape[1]
    got = impl.plga(q, k, v, params, G=np.eye(dk), causal=causal).out
    want = mp.to_numpy(mp.plga_forward(q, k, v, params, causal, G=np.eye(dk), dps=30)[0])
    assert np.all(np.abs(got - want) <= attention_bound(impl, q, None, k, v) + U64 * np.abs(want))
