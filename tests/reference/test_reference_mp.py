"""The mpmath oracle: agreement with float64, precision, independence, timing."""

from __future__ import annotations

import time
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import pyverify.reference as r
from pyverify.reference import PLGAParams, mp, plga_forward_full
from pyverify.testing.bounds import rel_err

FIELDS = ("out", "weights", "E")
DED = ("A", "A_LM", "A_P", "G")


def compare(q, k, v, p, **kw):
    f = plga_forward_full(q, k, v, p, **kw)
    m = mp.to_numpy(mp.plga_forward_full(q, k, v, p, dps=50, **kw))
    errs = {n: rel_err(getattr(f, n), getattr(m, n)) for n in FIELDS}
    for n in DED:
        if getattr(f.ded, n) is not None:
            errs[n] = rel_err(getattr(f.ded, n), getattr(m.ded, n))
    # elementwise relative error of the output (entries away from 0)
    big = np.abs(m.out) > 1e-3 * np.max(np.abs(m.out))
    errs["out_elementwise"] = float(np.max(np.abs(f.out - m.out)[big] / np.abs(m.out)[big]))
    return errs


CASES = [(S, dk, seed) for seed in range(3) for S, dk in [(16, 8), (9, 6), (5, 4), (1, 2)]]


@pytest.mark.parametrize(("S", "dk", "seed"), CASES)
def test_float64_matches_mp50(S, dk, seed):
    rng = np.random.default_rng(100 + seed)
    p = PLGAParams.random(dk=dk, a_dff=12, num_reslayer=2, num_dense=2, seed=seed)
    q, k = rng.normal(size=(2, S, dk))
    v = rng.normal(size=(S, 5))
    errs = compare(q, k, v, p)
    print(f"S={S} dk={dk} seed={seed} max rel err {max(errs.values()):.2e}")
    assert max(errs.values()) <= 1e-12, errs


def test_float64_matches_mp50_cached_and_masked_paths():
    rng = np.random.default_rng(7)
    p = PLGAParams.random(dk=8, a_dff=12, num_reslayer=2, num_dense=2, seed=7)
    q, k = rng.normal(size=(2, 12, 8))
    v = rng.normal(size=(12, 3))
    G = plga_forward_full(q, k, v, p).ded.G
    assert max(compare(q, k, v, p, G=G).values()) <= 1e-12
    assert max(compare(q[-3:], k, v, p, G=G).values()) <= 1e-12
    A = plga_forward_full(q, k, v, p).ded.A
    assert max(compare(q[-1:], k, v, p, A=A).values()) <= 1e-12
    mask = rng.random((12, 12)) < 0.7
    np.fill_diagonal(mask, True)
    assert max(compare(q, k, v, p, causal=False, mask=mask).values()) <= 1e-12


def test_precision_converges():
    rng = np.random.default_rng(1)
    p = PLGAParams.random(dk=4, a_dff=6, num_reslayer=1, num_dense=2, seed=1)
    q, k, v = rng.normal(size=(3, 5, 4))
    o30, _ = mp.plga_forward(q, k, v, p, dps=30)
    o60, _ = mp.plga_forward(q, k, v, p, dps=60)
    assert max(abs(a - b) for a, b in zip(o30, o60, strict=True)) < mpmath.mpf("1e-27")
    assert mpmath.mp.dps == 15  # the global context is untouched


def test_mp_returns_matrices_and_package_attribute():
    rng = np.random.default_rng(2)
    p = PLGAParams.random(dk=4, a_dff=6, num_reslayer=1, num_dense=1, seed=2)
    q, k, v = rng.normal(size=(3, 6, 4))
    out, ded = r.mp.plga_forward(q, k, v, p, dps=50)
    assert (out.rows, out.cols) == (6, 4)
    assert all((getattr(ded, f).rows, getattr(ded, f).cols) == (4, 4) for f in DED)
    assert mpmath.mpf(ded.A_LM[0, 0]) > 0
    out2, ded2 = r.mp.plga_forward(q, k, v, p, G=ded.G)
    assert ded2.A is None and ded2.A_LM is None and ded2.A_P is None
    np.testing.assert_array_equal(mp.to_numpy(out2), mp.to_numpy(out))
    assert mp.to_numpy(None) is None
    conv = mp.to_numpy(ded2)
    assert conv.A is None and conv.G.shape == (4, 4)


def test_mp_accepts_exact_rationals():
    p = PLGAParams.random(dk=2, a_dff=3, num_reslayer=1, num_dense=1, seed=3)
    q = [[Fraction(1, 3), 1], [2, "0.1"]]
    k = [[1, Fraction(-2, 7)], [Fraction(1, 5), 1]]
    v = [[1, 0], [0, 1]]
    out, _ = mp.plga_forward(q, k, v, p, dps=40)
    ref, _ = r.plga_forward(
        np.array([[1 / 3, 1], [2, 0.1]]), np.array([[1, -2 / 7], [0.2, 1]]), np.eye(2), p
    )
    np.testing.assert_allclose(mp.to_numpy(out), ref, rtol=1e-14)
    assert out[0, 0] == 1 and out[0, 1] == 0  # causal first row = v[0], exactly


def test_mp_stage_functions_parallel_numpy():
    from pyverify.reference import numpy_head as nh

    rng = np.random.default_rng(4)
    p = PLGAParams.random(dk=4, a_dff=6, num_reslayer=1, num_dense=2, seed=4)
    q, k = rng.normal(size=(2, 5, 4))
    D = nh.density(q)
    np.testing.assert_allclose(mp.to_numpy(mp.density(q)), D, rtol=1e-15)
    A0 = nh.layer_norm_rows(D, p.ln0_gamma, p.ln0_beta, p.ln_eps)
    np.testing.assert_allclose(
        mp.to_numpy(mp.layer_norm_rows(D, p.ln0_gamma, p.ln0_beta, p.ln_eps)), A0, rtol=1e-13
    )
    A = nh.metric_learner(A0, p.reslayers, p.ln_eps)
    np.testing.assert_allclose(
        mp.to_numpy(mp.metric_learner(A0, p.reslayers, p.ln_eps)), A, rtol=1e-12, atol=1e-14
    )
    A_LM = nh.metric_tensor(A, p.W, p.b, p.metric_eps)
    np.testing.assert_allclose(
        mp.to_numpy(mp.metric_tensor(A, p.W, p.b, p.metric_eps)), A_LM, rtol=1e-12
    )
    A_P = nh.power_law(A_LM, p.P)
    np.testing.assert_allclose(mp.to_numpy(mp.power_law(A_LM, p.P)), A_P, rtol=1e-14)
    G = nh.energy_curvature(A_P, p.a, p.b_a)
    np.testing.assert_allclose(mp.to_numpy(mp.energy_curvature(A_P, p.a, p.b_a)), G, rtol=1e-13)
    E = nh.scores(q, k, G)
    np.testing.assert_allclose(mp.to_numpy(mp.scores(q, k, G)), E, rtol=1e-13, atol=1e-15)
    m = nh.causal_mask(5)
    assert mp.causal_mask(5) == m.tolist()
    np.testing.assert_allclose(
        mp.to_numpy(mp.masked_softmax(E, m.tolist())), nh.masked_softmax(E, m), rtol=1e-14
    )
    with pytest.raises(ValueError, match="A_LM"):
        mp.power_law([[0, 1]], [[1, 1]])
    with pytest.raises(ValueError, match="allows no key"):
        mp.masked_softmax(E, [[False] * 5] * 5)


def test_mp_module_does_not_call_numpy_arithmetic():
    """Independence: the oracle imports nothing from the float64 head, has no ``@`` and
    calls no NumPy math (NumPy is used only to read/validate inputs)."""
    import ast
    import inspect

    from pyverify.reference import mp_stages

    tree = ast.parse(inspect.getsource(mp) + "\n" + inspect.getsource(mp_stages))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.module not in (
                "pyverify.reference.numpy_head",
                "pyverify.reference.numpy_stages",
            )
        if isinstance(node, ast.BinOp):
            assert not isinstance(node.op, ast.MatMult)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "np":
                assert node.attr in {
                    "ndarray",
                    "asarray",
                    "float64",
                    "bool_",
                    "floating",
                    "integer",
                    "array",
                }, node.attr


def test_mp_timing_S16_dk8_dps50():
    """Measured and printed (no assertion): the oracle's cost at S=16, dk=8, dps=50."""
    rng = np.random.default_rng(0)
    p = PLGAParams.random(dk=8, a_dff=12, num_reslayer=2, num_dense=2, seed=0)
    q, k, v = rng.normal(size=(3, 16, 8))
    t0 = time.perf_counter()
    mp.plga_forward(q, k, v, p, dps=50)
    print(f"mp head S=16 dk=8 dps=50: {time.perf_counter() - t0:.3f} s")
