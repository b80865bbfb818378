"""prefix_consistency: causal SDPA and constant-G PLGA are prefix consistent; Gram-G PLGA is not.

Row r of a causal call on x must equal row r of the call on x[:r+1]. The two calls have
different shapes, so fused kernels (and BLAS) may sum in a different order: each call is
within :func:`impls.attention_bound` of the exact value, and the two rows may differ by
the sum of the two bounds. For the Gram-dependent G, Hypothesis must *find* inputs whose
rows differ by more than ``GAP_FACTOR`` times that.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from pyverify.fp.models import LIB_ACCURACY, linear_stage_bound, power_stage_bound
from pyverify.testing.bounds import metric_tensor_bound
from pyverify.testing.fp import arith, mp_excess
from pyverify.testing.impls import ALL, attention_bound, impl_ids
from pyverify.testing.stage_bounds import mp_context
from pyverify.testing.strategies import arrays, head_params, qkv, with_constant_g

pytestmark = pytest.mark.theorem("prefix_consistency")

#: [non-vacuity] A counterexample's rows must differ by more than this many times the sum
#: of the two calls' proved bounds: a change rounding cannot explain.
GAP_FACTOR = 4


@st.composite
def prefix_cases(draw):
    s = draw(st.integers(2, 8))
    dk = draw(st.sampled_from([2, 4, 6, 8]))
    dv = draw(st.integers(1, 4))
    q, k, v = draw(qkv(s, dk, dv))
    G = np.eye(dk) + draw(arrays((dk, dk), 1.0)) / dk
    return q, k, v, draw(st.integers(0, s - 1)), draw(head_params(dk)), G


def _pair_bound(impl, q, k, v, r, G) -> float:
    """Largest |full[r] - prefix[r]| two correct evaluations can show."""
    return attention_bound(impl, q, G, k, v) + attention_bound(
        impl, q[: r + 1], G, k[: r + 1], v[: r + 1]
    )


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(prefix_cases())
def test_causal_sdpa_is_prefix_consistent(impl, case):
    q, k, v, r, params, _ = case
    q, k, v = impl.round(q), impl.round(k), impl.round(v)
    dk = q.shape[1]
    tol = _pair_bound(impl, q, k, v, r, None)
    # the implementation's SDPA and its PLGA head with G = I (SDPA by sdpa_special_case)
    full = impl.sdpa(q, k, v)
    pre = impl.sdpa(q[: r + 1], k[: r + 1], v[: r + 1])
    assert np.max(np.abs(full[r] - pre[r])) <= tol
    full = impl.plga(q, k, v, params, G=np.eye(dk)).out
    pre = impl.plga(q[: r + 1], k[: r + 1], v[: r + 1], params, G=np.eye(dk)).out
    assert np.max(np.abs(full[r] - pre[r])) <= tol


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(prefix_cases())
def test_constant_g_plga_is_prefix_consistent(impl, case):
    q, k, v, r, params, G = case
    q, k, v = impl.round(q), impl.round(k), impl.round(v)
    tol = _pair_bound(impl, q, k, v, r, G)
    # a cached constant G ...
    full = impl.plga(q, k, v, params, G=G).out
    pre = impl.plga(q[: r + 1], k[: r + 1], v[: r + 1], params, G=G).out
    assert np.max(np.abs(full[r] - pre[r])) <= tol
    # ... and the uncached path with an invariant metric (G(X) = G for every X)
    inv = with_constant_g(params, G)
    full = impl.plga(q, k, v, inv).out
    pre = impl.plga(q[: r + 1], k[: r + 1], v[: r + 1], inv).out
    assert np.max(np.abs(full[r] - pre[r])) <= tol


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_later_keys_of_masking_magnitude_are_not_read(impl, data):
    """Row r of a causal call may not read the keys after it, however large their scores:
    with a constant G = I, the keys after row r are ``T sqrt(dk) e_0`` and ``q_r = e_0``,
    so row r's masked scores are ``T`` (``T = 2^31``, above an additive ``-1e9`` mask by
    more than 1e9; float16: ``2^13``, beyond a ``-1e4`` mask, its largest scores ``2^15``
    staying below float16's 65504), and the values after row r lie in [2, 3] while those
    up to row r lie in [-1, 1]: a row that leaks weight onto later keys moves by up to 1
    (by 1 at least when the masked entries take the whole weight, as an additive mask gives
    them here). The call on the prefix has no later keys at all.

    Tolerance: the prefix call's ``attention_bound`` taken for each call (triangle
    inequality): with exact masking, row r of the full call is the same computation on the
    same allowed scores (masked entries are -inf before any maximum or sum, row by row), so
    each call's row r is within that bound of the common exact row.
    """
    s = data.draw(st.integers(2, 8), label="S")
    dk = data.draw(st.sampled_from([2, 4]), label="dk")
    dv = data.draw(st.integers(1, 3), label="dv")
    r = data.draw(st.integers(0, s - 2), label="r")  # a row with later keys
    q, k, v = data.draw(qkv(s, dk, dv, scale=1.0), label="q, k, v")
    T = 2.0**13 if impl.dtype == "float16" else 2.0**31
    e0 = np.eye(dk)[0]
    q[r] = e0
    k[r + 1 :] = T * math.sqrt(dk) * e0
    v = np.where(np.arange(s)[:, None] > r, 2 + np.abs(v) / 2, v / 2)  # later: [2, 3]
    q, k, v = impl.round(q), impl.round(k), impl.round(v)
    G, params = np.eye(dk), data.draw(head_params(dk), label="params")  # unused with G given
    full = impl.plga(q, k, v, params, G=G).out
    pre = impl.plga(q[: r + 1], k[: r + 1], v[: r + 1], params, G=G).out
    row_bound = attention_bound(impl, q[: r + 1], G, k[: r + 1], v[: r + 1])
    tol = row_bound + row_bound  # the full call's row r, and the prefix call's
    assert np.max(np.abs(full[r] - pre[r])) <= tol


@st.composite
def gram_cases(draw):
    s = draw(st.integers(2, 6))
    dk = draw(st.sampled_from([2, 4, 6]))
    q, k, v = draw(qkv(s, dk, 2, scale=3.0))
    return q, k, v, draw(head_params(dk))


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
def test_gram_dependent_plga_is_not_prefix_consistent(impl):
    """Hypothesis finds q, k, v, parameters and a row r whose output changes (by more than
    ``GAP_FACTOR`` times the rounding bound) when the rows after r are dropped:
    G = G(Q^T Q) depends on every row of the call."""

    def gap(case):
        q, k, v, params = case
        q, k, v = impl.round(q), impl.round(k), impl.round(v)
        r = q.shape[0] - 2  # drop the last row
        full = impl.plga(q, k, v, params)
        pre = impl.plga(q[: r + 1], k[: r + 1], v[: r + 1], params)
        diff = float(np.max(np.abs(full.out[r] - pre.out[r])))
        bound = attention_bound(impl, q, full.G, k, v) + attention_bound(
            impl, q[: r + 1], pre.G, k[: r + 1], v[: r + 1]
        )
        return diff, bound, full, pre

    def violates(case):
        diff, bound, _, _ = gap(case)
        return diff > GAP_FACTOR * bound

    found = find(
        gram_cases(),
        violates,
        settings=settings(
            max_examples=300,
            derandomize=True,
            database=None,
            deadline=None,
            phases=(Phase.generate,),  # any counterexample will do: no shrinking
        ),
    )
    diff, bound, full, pre = gap(found)
    assert diff > GAP_FACTOR * bound
    # the reason: the two calls used different operators G
    assert not np.allclose(full.G, pre.G)


# ------------------------------------------------- prefix_consistency_head_fails
def _metric_bound(impl, A, A_LM, A_P, p) -> np.ndarray:
    """``[fp_mixed_precision]`` ``[fp_elementwise]`` The computed ``G`` of steps 4-6 from the
    exact ``A`` against the exact ``G`` (parameters ``p``; the held ones' rounding is in
    the stage bounds), stage by stage.

    ``A_LM`` from the exact ``A`` (:func:`pyverify.testing.bounds.metric_tensor_bound`);
    ``A_P`` from the computed ``A_LM``, which is within ``e_lm`` of the exact one:
    ``power_stage_bound`` centred on the computed ``A_LM`` with half-width
    ``(1 + r) e_lm`` (``r``: the power routine's accuracy, ``LIB_ACCURACY``, the exponent
    held exactly): the segment covers the exact ``A_LM``, and since the statement's
    ``r |f(x)|`` is at the exact ``x``, ``|f(x)| <= |f(x^)| + L e_lm`` costs ``r L e_lm``,
    which the factor pays (``(1 + r)^2 >= 1 + 2 r``); ``G = a A_P + b_a`` from the
    computed ``A_P`` with the propagated ``|a| e_p`` (``linear_stage_bound``).
    """
    ar = arith(impl)
    e_lm = metric_tensor_bound(impl, A, p)
    e_p = power_stage_bound(ar, A_LM, (1 + LIB_ACCURACY[ar.compute]) * e_lm, p.P, p.P)
    return linear_stage_bound(ar, p.a, A_P, p.b_a, dX=e_p)


#: The cases' ``(b, P)``: ``G_11 = (iSwiGLU(D_11 + b) + eps)^P``.
CEX_HEADS = {
    # prefix_consistency_head_fails: W = I, b = -1, P = 1: G_11 = iSwiGLU(D_11 - 1) + eps
    "head_fails": (-1.0, 1.0),
    # prefix_consistency_fails_of_metric(_hom, _pow2): any metric separating the two
    # calls' entry (1,1), here the power law at P = 2: G_11 = (iSwiGLU(D_11) + eps)^2
    "power_law_p2": (0.0, 2.0),
}


@pytest.mark.parametrize("case", sorted(CEX_HEADS))
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
def test_paper_head_fails_on_the_lean_counterexample(impl, case):
    """``prefix_consistency_head_fails`` and ``prefix_consistency_fails_of_metric``: the
    paper's head with LayerNorm and learner the identity (the learner's output
    ``A = Q^T Q`` supplied to the head), ``W = I``, ``a = I``, ``b_a = 0`` and either
    ``b = -1, P = 1`` (the theorem's parameters) or ``b = 0, P = 2`` (a power-law metric),
    on the three rows of the Lean counterexample, ``q = (1,0),(0,1),(0,1)``,
    ``k = (0,1),0,0``, ``v = 1,0,0``.

    Oracle (closed form, mpmath, independent of both implementations): ``D_11`` is 2 on
    the full call and 1 on the prefix; ``G_11 = (iSwiGLU(D_11 + b) + eps)^P``
    (``iSwiGLU(u) = u^2 sigmoid(u)``), and row 1 is ``e^{tau G_11} / (e^{tau G_11} + 1)``
    with ``tau = 1/sqrt(2)``. Tolerance: ``attention_bound`` of each call (the rows are
    compared with the oracle, then with each other); ``G_11`` within the stages' proved
    bounds (:func:`_metric_bound`) of its exact value.
    """
    from pyverify.reference.params import PLGAParams

    b, power = CEX_HEADS[case]
    dk = 2
    q = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    k = np.array([[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    v = np.array([[1.0], [0.0], [0.0]])
    params = PLGAParams(
        ln0_gamma=np.ones(dk),
        ln0_beta=np.zeros(dk),
        reslayers=[],
        W=np.eye(dk),
        b=b * np.ones((dk, dk)),
        P=power * np.ones((dk, dk)),
        a=np.eye(dk),
        b_a=np.zeros((dk, dk)),
    )
    eps = params.metric_eps
    ctx = mp_context()
    outs = []
    for rows, d11 in ((3, 2.0), (2, 1.0)):
        qs, ks, vs = q[:rows], k[:rows], v[:rows]
        got = impl.plga(qs, ks, vs, params, A=qs.T @ qs)
        tol = attention_bound(impl, qs, got.G, ks, vs)
        # G_11 against its exact value (mpmath): W = a = I, b_a = 0, so
        # G_11 = (iSwiGLU(D_11 + b) + eps) ** P
        e_g = _metric_bound(impl, qs.T @ qs, got.A_LM, got.A_P, params)
        zm = ctx.mpf(d11) + b
        g11 = (zm * zm / (1 + ctx.exp(-zm)) + ctx.mpf(eps)) ** power
        assert mp_excess(got.G[1:2, 1:2], [[g11]], e_g[1:2, 1:2]) <= 1
        e_tau = ctx.exp(g11 / ctx.sqrt(dk))  # e^{tau G_11}
        assert mp_excess(got.out[1:2], [[e_tau / (e_tau + 1)]], np.array([[tol]])) <= 1
        outs.append((float(got.out[1, 0]), tol))
    (full, t_full), (pre, t_pre) = outs
    assert abs(full - pre) > GAP_FACTOR * (t_full + t_pre)  # row 1 changes without row 2
