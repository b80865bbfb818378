"""RoPE as the reference model: adjacent planes, base 10000, R_n group properties."""

from __future__ import annotations

import numpy as np
import pytest

from pyverify.reference import (
    PLGAParams,
    apply_rope,
    plga_forward_full,
    rope_angles,
    rope_thetas,
    rot2,
    rotation_matrix,
)


def test_thetas_formula():
    th = rope_thetas(8)
    np.testing.assert_allclose(th, [10000.0 ** (-2 * p / 8) for p in range(4)], rtol=1e-15)
    assert th[0] == 1.0
    np.testing.assert_allclose(rope_thetas(4, base=100.0), [1.0, 0.1], rtol=1e-15)
    np.testing.assert_allclose(rope_angles([0, 3], 4), [[0, 0], [3.0, 0.03]], rtol=1e-15)


def test_matches_per_plane_formula_adjacent_pairs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 6))
    y = apply_rope(x)
    th = 10000.0 ** (-np.arange(3) * 2 / 6)
    for n in range(5):
        for p in range(3):
            c, s = np.cos(n * th[p]), np.sin(n * th[p])
            a, b = x[n, 2 * p], x[n, 2 * p + 1]
            assert y[n, 2 * p] == pytest.approx(a * c - b * s, rel=1e-14, abs=1e-15)
            assert y[n, 2 * p + 1] == pytest.approx(a * s + b * c, rel=1e-14, abs=1e-15)
    np.testing.assert_array_equal(y[0], x[0])  # position 0 is the identity


def test_rotation_matrix_structure_and_row_convention():
    R = rotation_matrix(3, 6)
    for p in range(3):
        np.testing.assert_array_equal(
            R[2 * p : 2 * p + 2, 2 * p : 2 * p + 2], rot2(3 * 10000.0 ** (-2 * p / 6))
        )
    off = R.copy()
    for p in range(3):
        off[2 * p : 2 * p + 2, 2 * p : 2 * p + 2] = 0
    assert np.all(off == 0)  # block diagonal on ADJACENT planes
    x = np.random.default_rng(1).normal(size=(4, 6))
    y = apply_rope(x)
    for n in range(4):
        np.testing.assert_allclose(y[n], x[n] @ rotation_matrix(n, 6).T, rtol=1e-14, atol=1e-15)


def test_group_properties():
    for m, n in [(0, 0), (1, 2), (5, 7), (-3, 11), (0.5, 2.25)]:
        Rm, Rn = rotation_matrix(m, 8), rotation_matrix(n, 8)
        np.testing.assert_allclose(Rm @ Rn, rotation_matrix(m + n, 8), atol=1e-13)
        np.testing.assert_allclose(Rm.T, rotation_matrix(-m, 8), atol=1e-15)
        np.testing.assert_allclose(Rm @ Rm.T, np.eye(8), atol=1e-15)
        assert np.linalg.det(Rm) == pytest.approx(1.0)
    a, b = 0.3, -1.1
    np.testing.assert_allclose(rot2(a) @ rot2(b), rot2(a + b), atol=1e-15)


def test_batched_and_offset():
    x = np.random.default_rng(2).normal(size=(3, 7, 4))  # (heads, S, dk)
    y = apply_rope(x)
    for h in range(3):
        np.testing.assert_array_equal(y[h], apply_rope(x[h]))
    np.testing.assert_allclose(apply_rope(x[:, 4:], offset=4), y[:, 4:], rtol=0, atol=0)
    np.testing.assert_allclose(
        apply_rope(x[0], positions=np.arange(7) + 2), apply_rope(x[0], offset=2), atol=0
    )


def test_sdpa_scores_relative_position():
    """With G = I (commutes with every R_n) scores depend on n - m only."""
    rng = np.random.default_rng(3)
    q, k = rng.normal(size=(2, 8))
    s = [
        [apply_rope(q[None], offset=m)[0] @ apply_rope(k[None], offset=n)[0] for n in range(6)]
        for m in range(6)
    ]
    for m in range(5):
        for n in range(5):
            assert s[m + 1][n + 1] == pytest.approx(s[m][n], rel=1e-12, abs=1e-12)


def test_rope_then_head():
    rng = np.random.default_rng(4)
    p = PLGAParams.random(dk=8, a_dff=8, num_reslayer=1, num_dense=1, seed=4)
    q, k, v = rng.normal(size=(3, 6, 8))
    res = plga_forward_full(apply_rope(q), apply_rope(k), v, p)
    G = res.ded.G
    for m in range(6):
        for n in range(m + 1):
            want = q[m] @ rotation_matrix(m, 8).T @ G @ rotation_matrix(n, 8) @ k[n] / np.sqrt(8)
            assert res.E[m, n] == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(
    ("call", "exc", "msg"),
    [
        (lambda: apply_rope(np.ones((3, 5))), ValueError, "dk .* must be even"),
        (lambda: apply_rope(np.ones(4)), ValueError, "x must have shape"),
        (lambda: apply_rope(np.ones((3, 4)) * 1j), TypeError, "x must be a real"),
        (lambda: apply_rope(np.full((3, 4), np.nan)), ValueError, "x must be finite"),
        (lambda: apply_rope(np.ones((3, 4)), positions=[0, 1]), ValueError, "positions"),
        (lambda: apply_rope(np.ones((3, 4)), offset=1.5), TypeError, "offset"),
        (lambda: rotation_matrix(1, 7), ValueError, "dk must be even"),
        (lambda: rotation_matrix(np.nan, 4), ValueError, "n must be finite"),
        (lambda: rope_thetas(4, base=-1.0), ValueError, "base"),
    ],
)
def test_rope_validation(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()
