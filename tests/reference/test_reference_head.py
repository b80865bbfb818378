"""The float64 head: cached paths, masking, properties, overflow handling."""

from __future__ import annotations

import numpy as np
import pytest

from pyverify.reference import (
    Deductive,
    NonFiniteStageError,
    PLGAParams,
    PowerLawOverflowError,
    plga_forward,
    plga_forward_full,
)
from pyverify.reference import numpy_head as nh


def make(S=7, dk=8, dv=5, seed=0):
    rng = np.random.default_rng(seed)
    p = PLGAParams.random(dk=dk, a_dff=12, num_reslayer=2, num_dense=2, seed=seed)
    return rng.normal(size=(S, dk)), rng.normal(size=(S, dk)), rng.normal(size=(S, dv)), p


def test_contract_example_and_shapes():
    q, k, v, p = make()
    out, ded = plga_forward(q, k, v, p, causal=True)
    assert isinstance(ded, Deductive)
    assert out.shape == (7, 5) and out.dtype == np.float64
    for f in ("A", "A_LM", "A_P", "G"):
        assert getattr(ded, f).shape == (8, 8)
    out2, ded2 = plga_forward(q, k, v, p, causal=True, G=ded.G)
    np.testing.assert_array_equal(out2, out)
    assert ded2.A is None and ded2.A_LM is None and ded2.A_P is None
    np.testing.assert_array_equal(ded2.G, ded.G)


def test_stages_compose_to_forward():
    q, k, v, p = make(seed=2)
    D = nh.density(q)
    A0 = nh.layer_norm_rows(D, p.ln0_gamma, p.ln0_beta, p.ln_eps)
    A = nh.metric_learner(A0, p.reslayers, p.ln_eps)
    A_LM = nh.metric_tensor(A, p.W, p.b, p.metric_eps)
    A_P = nh.power_law(A_LM, p.P)
    G = nh.energy_curvature(A_P, p.a, p.b_a)
    w = nh.masked_softmax(nh.scores(q, k, G), nh.causal_mask(len(q)))
    out = nh.attend(w, v)
    res = plga_forward_full(q, k, v, p)
    np.testing.assert_array_equal(res.out, out)
    np.testing.assert_array_equal(res.ded.G, G)
    np.testing.assert_array_equal(res.weights, w)


def test_metric_positivity_and_causal_structure():
    q, k, v, p = make(S=9, seed=4)
    res = plga_forward_full(q, k, v, p)
    assert np.all(res.ded.A_LM > 0) and np.all(res.ded.A_P > 0)
    assert np.all(res.ded.A_LM >= p.metric_eps)
    np.testing.assert_allclose(res.weights.sum(axis=1), 1.0, rtol=1e-15)
    assert np.all(res.weights[np.triu_indices(9, 1)] == 0.0)
    np.testing.assert_array_equal(res.out[0], v[0])  # first row attends only itself


def test_sdpa_special_case():
    q, k, v, p = make(seed=5)
    out, _ = plga_forward(q, k, v, p, G=np.eye(8))
    E = q @ k.T / np.sqrt(8) + np.where(np.tri(7, dtype=bool), 0.0, -1e9)
    w = np.exp(E - E.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, (w / w.sum(axis=1, keepdims=True)) @ v, rtol=1e-13)


def test_A_cache_path_and_decoding_rows():
    q, k, v, p = make(S=8, seed=6)
    full = plga_forward_full(q, k, v, p)
    via_A = plga_forward_full(q, k, v, p, A=full.ded.A)
    np.testing.assert_array_equal(via_A.out, full.out)
    np.testing.assert_array_equal(via_A.ded.G, full.ded.G)
    # cached paths accept S_q < S_k: the queries are the last positions
    for s in (1, 3):
        out_g, _ = plga_forward(q[-s:], k, v, p, G=full.ded.G)
        np.testing.assert_allclose(out_g, full.out[-s:], rtol=1e-14, atol=1e-15)
        out_a, _ = plga_forward(q[-s:], k, v, p, A=full.ded.A)
        np.testing.assert_allclose(out_a, full.out[-s:], rtol=1e-14, atol=1e-15)


def test_density_is_global_not_prefix_consistent():
    q, k, v, p = make(S=8, seed=7)
    full, _ = plga_forward(q, k, v, p)
    pre, _ = plga_forward(q[:4], k[:4], v[:4], p)
    assert np.max(np.abs(full[:4] - pre)) > 1e-6  # Gram G changes with the sequence
    _, ded = plga_forward(q, k, v, p)
    pre_g, _ = plga_forward(q[:4], k[:4], v[:4], p, G=ded.G)
    np.testing.assert_allclose(pre_g, full[:4], rtol=1e-14, atol=1e-15)  # constant G: consistent


def test_explicit_mask_and_non_causal():
    q, k, v, p = make(S=5, seed=8)
    m = np.ones((5, 5), dtype=bool)
    m[:, 0] = False
    m[0, 0] = True
    res = plga_forward_full(q, k, v, p, causal=False, mask=m)
    assert np.all(res.weights[1:, 0] == 0.0)
    assert np.all(res.weights[0, 1:] > 0)
    both = plga_forward_full(q, k, v, p, causal=True, mask=m)
    np.testing.assert_array_equal(both.weights == 0, ~(m & np.tri(5, dtype=bool)))
    nc = plga_forward_full(q, k, v, p, causal=False)
    assert np.all(nc.weights > 0)


def test_accepts_float32_and_int_inputs():
    q, k, v, p = make(seed=9)
    qi = np.round(q * 4).astype(np.int32)
    out_i, _ = plga_forward(qi, k.astype(np.float32), v, p)
    out_f, _ = plga_forward(qi.astype(np.float64), k.astype(np.float32).astype(np.float64), v, p)
    np.testing.assert_array_equal(out_i, out_f)
    out_l, _ = plga_forward(q.tolist(), k.tolist(), v.tolist(), p)
    np.testing.assert_array_equal(out_l, plga_forward(q, k, v, p)[0])


def _tiny_metric_params(dk, P_value, a_scale=1.0):
    """W = 0, b = -50 make A_LM = iswiglu(-50) + 1e-9 ~= 1e-9 everywhere."""
    p = PLGAParams.random(dk=dk, a_dff=4, num_reslayer=0, num_dense=0, seed=0)
    return PLGAParams(
        ln0_gamma=p.ln0_gamma,
        ln0_beta=p.ln0_beta,
        reslayers=[],
        W=np.zeros((dk, dk)),
        b=np.full((dk, dk), -50.0),
        P=np.full((dk, dk), P_value),
        a=np.full((dk, dk), a_scale),
        b_a=np.zeros((dk, dk)),
    )


def test_power_law_overflow_raises_naming_stage():
    q, k, v, _ = make(S=3, dk=4)
    with pytest.raises(PowerLawOverflowError, match="power_law") as ei:
        plga_forward(q, k, v, _tiny_metric_params(4, -40.0))
    assert ei.value.stage == "power_law"
    assert isinstance(ei.value, ValueError)
    with pytest.raises(PowerLawOverflowError) as ei:
        plga_forward(q, k, v, _tiny_metric_params(4, -33.0, a_scale=1e20))
    assert ei.value.stage == "energy_curvature"
    with pytest.raises(PowerLawOverflowError) as ei:
        plga_forward(q * 1e150, k * 1e150, v, _tiny_metric_params(4, 1.0), G=np.eye(4) * 1e10)
    assert ei.value.stage == "scores"
    # just below the edge: finite, huge, no error
    out, ded = plga_forward(q, k, v, _tiny_metric_params(4, -34.0))
    assert np.all(np.isfinite(out)) and ded.A_P.max() > 1e300


def test_early_overflow_raises_non_finite_stage_error():
    _, _, v, p = make(S=3, dk=4)
    q = np.full((3, 4), 1e160)
    with pytest.raises(NonFiniteStageError) as ei:
        plga_forward(q, q, v, p)
    assert ei.value.stage == "density"
    assert not isinstance(ei.value, PowerLawOverflowError)


def test_power_law_rejects_non_positive_base():
    with pytest.raises(ValueError, match="A_LM"):
        nh.power_law(np.array([[0.0, 1.0]]), np.ones((1, 2)))
