"""Each stage of the float64 head pinned against hand/sympy computations."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from pyverify.reference import PLGAParams, ResUnit, SwiGLUBlock, mp, plga_forward_full
from pyverify.reference import numpy_head as nh

R = sp.Rational


def sym(a):
    """A float64 array holding dyadic rationals, as an exact sympy Matrix."""
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    return sp.Matrix([[sp.Rational(float(x)) for x in row] for row in a])


def num(M, digits=40):
    return np.array([[float(sp.N(x, digits)) for x in row] for row in M.tolist()])


def sym_ln_rows(X, gamma, beta, eps):
    rows = []
    n = X.shape[1]
    for i in range(X.shape[0]):
        r = X.row(i)
        mu = sum(r) / n
        var = sum((x - mu) ** 2 for x in r) / n
        rows.append([(r[j] - mu) / sp.sqrt(var + eps) * gamma[j] + beta[j] for j in range(n)])
    return sp.Matrix(rows)


def sym_sigmoid(x):
    return 1 / (1 + sp.exp(-x))


def sym_swiglu(X, blk):
    W1, W2, W3 = sym(blk.W1), sym(blk.W2), sym(blk.W3)
    b1, b2, b3 = sym(blk.b1), sym(blk.b2), sym(blk.b3)
    ones = sp.ones(X.shape[0], 1)
    H1 = X * W1 + ones * b1
    H2 = X * W2 + ones * b2
    gated = H1.applyfunc(lambda x: x * sym_sigmoid(x)).multiply_elementwise(H2)
    return gated * W3 + ones * b3


EPS_LN = sp.Rational(1e-6)  # the float64 number nearest 1e-6, exactly
EPS_M = sp.Rational(1e-9)


def test_density_exact():
    q = np.array([[1, 2], [3, -1], [0, 5]], dtype=np.float64)
    D = nh.density(q)
    np.testing.assert_array_equal(D, [[10, -1], [-1, 30]])
    Q = sym(q)
    assert D.tolist() == [[float(x) for x in row] for row in (Q.T * Q).tolist()]
    # global over all rows: sum of outer products
    np.testing.assert_array_equal(D, sum(np.outer(r, r) for r in q))


def test_layer_norm_rows_matches_sympy():
    X = np.array([[10.0, -1.0], [-1.0, 30.0], [0.5, 0.5]])
    gamma = np.array([1.5, -0.25])
    beta = np.array([0.125, 2.0])
    got = nh.layer_norm_rows(X, gamma, beta, 1e-6)
    want = num(sym_ln_rows(sym(X), [R(3, 2), R(-1, 4)], [R(1, 8), R(2)], EPS_LN))
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    # constant row -> beta exactly (the eps keeps it finite)
    np.testing.assert_array_equal(got[2], beta)


def test_sigmoid_silu_iswiglu_values():
    x = np.array([-3.0, -0.5, 0.0, 0.5, 2.0])
    for i, xv in enumerate(x):
        s = sym_sigmoid(sym(xv)[0])
        assert nh.sigmoid(x)[i] == pytest.approx(float(sp.N(s, 30)), rel=1e-15)
        assert nh.silu(x)[i] == pytest.approx(float(sp.N(sym(xv)[0] * s, 30)), rel=1e-15, abs=0)
        assert nh.iswiglu(x)[i] == pytest.approx(
            float(sp.N(sym(xv)[0] ** 2 * s, 30)), rel=1e-15, abs=0
        )
    assert nh.iswiglu(0.0) == 0.0
    # no overflow warnings, limits right
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        assert nh.sigmoid(np.array([-1000.0]))[0] == 0.0
        assert nh.sigmoid(np.array([1000.0]))[0] == 1.0
        assert nh.silu(np.array([-1000.0]))[0] == 0.0


def test_swiglu_and_res_unit_match_sympy():
    rng = np.random.default_rng(3)

    def dy(shape):  # dyadic rationals: exact in float64 and sympy
        return rng.integers(-8, 9, shape) / 8.0

    blk = SwiGLUBlock(dy((2, 3)), dy(3), dy((2, 3)), dy(3), dy((3, 2)), dy(2))
    X = dy((2, 2))
    got = nh.swiglu(X, blk)
    want = num(sym_swiglu(sym(X), blk))
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)

    unit = ResUnit(dense=[blk, blk], ln_gamma=np.array([1.0, 0.5]), ln_beta=np.array([0.0, 0.25]))
    Y = sym_swiglu(sym_swiglu(sym(X), blk), blk)
    want_u = num(sym_ln_rows(sym(X) + Y, [1, R(1, 2)], [0, R(1, 4)], EPS_LN))
    np.testing.assert_allclose(nh.res_unit(X, unit, 1e-6), want_u, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(nh.metric_learner(X, [unit], 1e-6), want_u, rtol=1e-13, atol=1e-14)
    np.testing.assert_array_equal(nh.metric_learner(X, [], 1e-6), X)


def test_metric_tensor_matches_sympy_and_is_positive():
    W = np.array([[1.0, -0.5], [0.25, 2.0]])
    A = np.array([[0.5, -1.0], [1.5, 0.0]])
    b = np.array([[0.0, 0.125], [-3.0, 1.0]])
    got = nh.metric_tensor(A, W, b, 1e-9)
    Y = sym(W) * sym(A) + sym(b)  # W @ A: W on the left
    want = num(Y.applyfunc(lambda x: x**2 * sym_sigmoid(x) + EPS_M))
    np.testing.assert_allclose(got, want, rtol=1e-15)
    assert np.all(got > 0)
    # exact hand case: W @ A + b = 0 gives exactly eps
    np.testing.assert_array_equal(
        nh.metric_tensor(np.eye(2), np.zeros((2, 2)), np.zeros((2, 2)), 1e-9), 1e-9
    )


def test_power_law_exact():
    A_LM = np.array([[4.0, 9.0], [0.25, 2.0]])
    P = np.array([[0.5, 0.5], [-1.0, 3.0]])
    np.testing.assert_array_equal(nh.power_law(A_LM, P), [[2.0, 3.0], [4.0, 8.0]])


def test_energy_curvature_and_scores_exact():
    a = np.array([[1.0, 2.0], [0.0, -1.0]])
    A_P = np.array([[2.0, 3.0], [4.0, 8.0]])
    b_a = np.array([[0.5, 0.0], [0.0, 0.5]])
    G = nh.energy_curvature(A_P, a, b_a)
    np.testing.assert_array_equal(G, np.array(sym(a) * sym(A_P) + sym(b_a), dtype=float))
    q = np.array([[1.0, 0, 2, 0], [0, 1, 0, 0]])
    k = np.array([[1.0, 1, 0, 0], [0, 0, 1, 3]])
    G4 = np.diag([2.0, 4.0, 6.0, 8.0])
    np.testing.assert_array_equal(nh.scores(q, k, G4), (q @ G4 @ k.T) / 2.0)
    np.testing.assert_array_equal(nh.scores(q, k, G4), [[1.0, 6.0], [2.0, 0.0]])


def test_masked_softmax_exact_and_causal():
    E = np.array([[0.0, np.log(2.0), 5.0], [0.0, np.log(3.0), 7.0]])
    w = nh.masked_softmax(E, nh.causal_mask(2, 3))
    np.testing.assert_allclose(w[0], [1 / 3, 2 / 3, 0.0], rtol=1e-15)
    np.testing.assert_allclose(
        w[1], np.array([1.0, 3.0, np.exp(7.0)]) / (4 + np.exp(7.0)), rtol=1e-15
    )
    assert w[0, 2] == 0.0
    np.testing.assert_array_equal(
        nh.causal_mask(3), [[True, False, False], [True, True, False], [True, True, True]]
    )
    np.testing.assert_array_equal(nh.causal_mask(1, 3), [[True, True, True]])


def test_masked_softmax_stable_for_huge_scores():
    E = np.array([[1e300, -1e300, 1e300 - 1e285], [1e308, 1e308, -1e308]])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        w = nh.masked_softmax(E)
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    np.testing.assert_allclose(w[1], [0.5, 0.5, 0.0])
    # shift invariance
    E2 = np.random.default_rng(0).normal(size=(4, 5))
    np.testing.assert_allclose(nh.masked_softmax(E2 + 1e6), nh.masked_softmax(E2), atol=1e-10)


def test_exclusion_equals_additive_minus_1e9_for_moderate_scores():
    rng = np.random.default_rng(1)
    E = rng.normal(scale=20.0, size=(6, 6))
    m = nh.causal_mask(6)
    add = E + np.where(m, 0.0, -1e9)
    ex = np.exp(add - add.max(axis=1, keepdims=True))
    ref = ex / ex.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(nh.masked_softmax(E, m), ref, rtol=1e-15, atol=0)


def _dyadic_params():
    dk = 2
    z = np.zeros(dk)
    return PLGAParams(
        ln0_gamma=np.array([1.0, 0.5]),
        ln0_beta=np.array([0.25, 0.0]),
        reslayers=[],
        W=np.array([[1.0, -0.5], [0.5, 1.0]]),
        b=np.array([[0.25, 0.0], [-0.5, 0.125]]),
        P=np.array([[0.5, 1.5], [2.0, 1.0]]),
        a=np.array([[1.0, 0.25], [-0.5, 1.0]]),
        b_a=np.array([[0.0, 0.125], [0.0, 0.0]]) + z[:, None] * 0,
    )


def test_whole_head_2x2_against_sympy_and_mp():
    """A third, independent implementation (sympy, exact then 50 digits) on a 2x2 case."""
    p = _dyadic_params()
    q = np.array([[1.0, 0.5], [-0.5, 2.0]])
    k = np.array([[0.25, 1.0], [1.0, -1.0]])
    v = np.array([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]])
    Q, K, V = sym(q), sym(k), sym(v)
    D = Q.T * Q
    A = sym_ln_rows(D, [1, R(1, 2)], [R(1, 4), 0], EPS_LN)
    Y = sym(p.W) * A + sym(p.b)
    A_LM = Y.applyfunc(lambda x: x**2 * sym_sigmoid(x) + EPS_M)
    A_P = sp.Matrix(2, 2, lambda i, j: A_LM[i, j] ** sym(p.P)[i, j])
    G = sym(p.a) * A_P + sym(p.b_a)
    E = Q * G * K.T / sp.sqrt(2)
    e00 = 1  # causal: row 0 attends only key 0
    row1 = [sp.exp(E[1, 0]), sp.exp(E[1, 1])]
    Wt = sp.Matrix([[e00, 0], [row1[0] / sum(row1), row1[1] / sum(row1)]])
    H = Wt * V

    res = plga_forward_full(q, k, v, p)
    for got, want in [
        (res.ded.A, A),
        (res.ded.A_LM, A_LM),
        (res.ded.A_P, A_P),
        (res.ded.G, G),
        (res.E, E),
        (res.weights, Wt),
        (res.out, H),
    ]:
        np.testing.assert_allclose(got, num(want, 50), rtol=1e-13, atol=1e-15)
    # the mpmath oracle agrees with sympy to ~dps digits
    out_mp, ded_mp = mp.plga_forward(q, k, v, p, dps=50)
    for got, want in [(ded_mp.G, G), (out_mp, H)]:
        for i in range(got.rows):
            for j in range(got.cols):
                w = sp.N(want[i, j], 60)
                assert abs(sp.Float(str(got[i, j]), 60) - w) <= sp.Float("1e-45") * (1 + abs(w))
