"""rope_twirl: averaging R_n M R_n^T over n < S keeps the commutant part of M and damps
every other frequency component by ``(1/S) sum_{n<S} w^n``.

The spec, written out (the oracle). Split each 2 x 2 block ``B = M[2p:2p+2, 2q:2q+2]`` into
``C = x I + y J`` (commutes with rotations; ``c = x + i y``) and ``N = z K + t L``
(``K = diag(1, -1)``, ``L = [[0, 1], [1, 0]]``, anticommute with J; ``n = z + i t``). Then
``rot(a) C rot(-b) <-> c e^{i(a-b)}`` and ``rot(a) N rot(-b) <-> n e^{i(a+b)}``; with
``a = n theta_p``, ``b = n theta_q`` the twirl multiplies ``c_pq`` by ``sigma_S(w)`` for
``w = e^{i(theta_p - theta_q)}`` and ``n_pq`` by ``sigma_S(e^{i(theta_p + theta_q)})``,
``sigma_S(w) = (1/S) sum_{n<S} w^n``. For p = q the C part has w = 1: the commutant part
(block diagonal, blocks in span{I, J}) is kept exactly. ``(1 - w) sum_{n<S} w^n = 1 - w^S``
gives ``|sigma_S(w)| <= 2 / (S |1 - w|)``: the twirl tends to the commutant projection.

The implementations supply ``x -> x R_n^T`` (their ``apply_rope``); ``R_n M R_n^T`` is two
applications: the rows of M at position n, then the rows of the transpose. Tolerance:
every 2 x 2 block keeps its Frobenius norm under rotations, so every intermediate entry is
at most ``beta = max_pq ||B_pq||_F``; one application computes ``cos x0 - sin x1`` with
cos/sin rounded to the compute dtype and one product, one sum (four roundings of ``u_c``
relative to ``|x0| + |x1| <= 2 beta``) and rounds to the input dtype (u_io); two
applications and the error of the first carried (rotations do not grow it): each a factor
``(1 + u_c)^4 (1 + u_io)``, exactly (the product lemma, ``Pldr.fp_prod_gamma``):
``((1 + u_c)^8 (1 + u_io)^2 - 1) 2 beta`` per term, averaged. The float64 oracle adds
``S`` roundings of complex powers (``8 S u_64 beta``).

Exact form: rational unit complex numbers (Pythagorean points) as the plane rotations;
the same identity holds with equality in Fractions.
"""

from __future__ import annotations

import cmath
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.precision import UNIT_ROUNDOFF
from pyverify.testing.exact import add, block_diag, matmul, rot, scale, transpose, zeros
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.strategies import arrays, even_dk, examples, pythagorean

pytestmark = pytest.mark.theorem("rope_twirl")

U64 = UNIT_ROUNDOFF["float64"]


def twirl_impl(impl, M: np.ndarray, S: int) -> np.ndarray:
    """``(1/S) sum_{n<S} R_n M R_n^T`` with the implementation's ``apply_rope``."""
    dk = M.shape[0]
    X = np.repeat(impl.round(M)[:, None, :], S, axis=1)  # X[i, n] = M[i] at position n
    Y = impl.rope(X)  # Y[i, n] = M[i] R_n^T: Y_n = M R_n^T
    W = np.transpose(Y, (2, 1, 0))  # W[j, n] = (Y_n^T)[j]
    Z = impl.rope(W)  # Z[j, n] = (Y_n^T R_n^T)[j] = ((R_n Y_n)^T)[j]
    assert Z.shape == (dk, S, dk)
    return np.transpose(Z, (1, 2, 0)).mean(axis=0)  # mean over n of R_n M R_n^T


def spec_thetas(dk: int) -> np.ndarray:
    """The spec's frequencies ``theta_p = 10000^(-2p/dk)``, written out (not imported)."""
    return 10000.0 ** (-2.0 * np.arange(dk // 2) / dk)


def sigma(w: complex, S: int) -> complex:
    return complex(np.mean(w ** np.arange(S)))


def twirl_oracle(M: np.ndarray, S: int, thetas: np.ndarray) -> np.ndarray:
    """The spec's decomposition: commuting and anticommuting parts, damped per frequency."""
    dk = M.shape[0]
    out = np.zeros_like(M)
    for p in range(dk // 2):
        for q in range(dk // 2):
            B = M[2 * p : 2 * p + 2, 2 * q : 2 * q + 2]
            c = complex((B[0, 0] + B[1, 1]) / 2, (B[1, 0] - B[0, 1]) / 2)
            n = complex((B[0, 0] - B[1, 1]) / 2, (B[0, 1] + B[1, 0]) / 2)
            c *= sigma(np.exp(1j * (thetas[p] - thetas[q])), S)
            n *= sigma(np.exp(1j * (thetas[p] + thetas[q])), S)
            Cm = np.array([[c.real, -c.imag], [c.imag, c.real]])
            Nm = np.array([[n.real, n.imag], [n.imag, -n.real]])
            out[2 * p : 2 * p + 2, 2 * q : 2 * q + 2] = Cm + Nm
    return out


def commutant_part(M: np.ndarray) -> np.ndarray:
    dk = M.shape[0]
    out = np.zeros_like(M)
    for p in range(dk // 2):
        B = M[2 * p : 2 * p + 2, 2 * p : 2 * p + 2]
        x, y = (B[0, 0] + B[1, 1]) / 2, (B[1, 0] - B[0, 1]) / 2
        out[2 * p : 2 * p + 2, 2 * p : 2 * p + 2] = [[x, -y], [y, x]]
    return out


def block_beta(M: np.ndarray) -> float:
    dk = M.shape[0]
    return max(
        float(np.linalg.norm(M[2 * p : 2 * p + 2, 2 * q : 2 * q + 2]))
        for p in range(dk // 2)
        for q in range(dk // 2)
    )


def twirl_tol(impl, M: np.ndarray, S: int) -> float:
    beta = block_beta(M)
    per = (1 + impl.u_compute) ** 8 * (1 + impl.u_io) ** 2 - 1
    return per * 2 * beta + 8 * S * U64 * beta


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(even_dk, st.integers(1, 12), st.data())
def test_twirl_keeps_commutant_and_damps_each_frequency(impl, dk, S, data):
    M = impl.round(data.draw(arrays((dk, dk), 3.0)))
    got = twirl_impl(impl, M, S)
    want = twirl_oracle(M, S, spec_thetas(dk))
    tol = twirl_tol(impl, M, S)
    assert np.max(np.abs(got - want)) <= tol
    # the commutant part of the twirl is the commutant part of M (its frequency is 0)
    assert np.max(np.abs(commutant_part(got) - commutant_part(M))) <= tol
    # a matrix in the commutant is a fixed point
    P = commutant_part(M)
    assert np.max(np.abs(twirl_impl(impl, P, S) - P)) <= twirl_tol(impl, P, S)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(5)
@given(even_dk, st.data())
def test_long_twirl_approaches_the_commutant_projection(impl, dk, data):
    """S = 512: off-commutant components are damped to at most ``2 / (S |1 - w|)``."""
    S = 512
    M = impl.round(data.draw(arrays((dk, dk), 3.0)))
    got = twirl_impl(impl, M, S)
    th = spec_thetas(dk)
    budget = 0.0
    for p in range(dk // 2):
        for q in range(dk // 2):
            B = M[2 * p : 2 * p + 2, 2 * q : 2 * q + 2]
            size_c = np.hypot((B[0, 0] + B[1, 1]) / 2, (B[1, 0] - B[0, 1]) / 2)
            size_n = np.hypot((B[0, 0] - B[1, 1]) / 2, (B[0, 1] + B[1, 0]) / 2)
            parts = [(np.exp(1j * (th[p] + th[q])), size_n)]
            if p != q:  # the diagonal C part is the commutant part (w = 1, undamped)
                parts.append((np.exp(1j * (th[p] - th[q])), size_c))
            for w, size in parts:  # an entry gets both parts of its block: factor 2
                budget = max(budget, 2 * size * 2 / (S * abs(1 - w)))
    off = np.max(np.abs(got - commutant_part(M)))
    assert off <= budget + twirl_tol(impl, M, S)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.floats(0.01, 6.2), st.integers(1, 64))
def test_geometric_sum_identity(impl, angle, S):
    """``(1 - w) sum_{n<S} w^n = 1 - w^S`` with w from the implementation's rotation:
    ``w = cos a + i sin a`` read off ``rot2(a)`` (held in its dtype, |w| = 1 + O(u_io)).
    Powers by S products (float64): ``|error| <= 4 S (u_io + u_64)`` on each side."""
    R = impl.rot2(angle)
    w = complex(R[0, 0], R[1, 0])
    # w is the rotation by `angle` (cos and sin each rounded once to the dtype), so a
    # wrong angle or sign in rot2 fails here, not only the identity below
    assert abs(w - cmath.exp(1j * angle)) <= 2 * (impl.u_io + impl.u_compute)
    lhs = (1 - w) * sum(w**n for n in range(S))
    rhs = 1 - w**S
    assert abs(lhs - rhs) <= 8 * S * (impl.u_io + U64) + 8 * S * U64


# --------------------------------------------------------------------------- exact
def _cmul(a, b):
    return (a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0])


def _cpow(z, n):
    out = (Fraction(1), Fraction(0))
    for _ in range(n):
        out = _cmul(out, z)
    return out


def _conj(z):
    return (z[0], -z[1])


@pytest.mark.implementation("reference", dtype="exact")
@examples(25)
@given(st.integers(1, 3), st.integers(1, 6), st.data())
def test_twirl_exactly_with_rational_rotations(planes, S, data):
    dk = 2 * planes
    zs = [data.draw(pythagorean(nonzero_sin=False)) for _ in range(planes)]
    entries = st.builds(Fraction, st.integers(-9, 9), st.integers(1, 5))
    M = [[data.draw(entries) for _ in range(dk)] for _ in range(dk)]
    T = zeros(dk, dk)
    for n in range(S):
        R = block_diag([rot(*_cpow(z, n)) for z in zs])
        T = add(T, matmul(matmul(R, M), transpose(R)))
    T = scale(Fraction(1, S), T)
    for p in range(planes):
        for q in range(planes):
            B = [r[2 * q : 2 * q + 2] for r in M[2 * p : 2 * p + 2]]
            c = ((B[0][0] + B[1][1]) / 2, (B[1][0] - B[0][1]) / 2)
            nn = ((B[0][0] - B[1][1]) / 2, (B[0][1] + B[1][0]) / 2)
            wc = _cmul(zs[p], _conj(zs[q]))  # e^{i(theta_p - theta_q)}
            wn = _cmul(zs[p], zs[q])  # e^{i(theta_p + theta_q)}
            sc = tuple(sum(_cpow(wc, k)[i] for k in range(S)) / S for i in (0, 1))
            sn = tuple(sum(_cpow(wn, k)[i] for k in range(S)) / S for i in (0, 1))
            c, nn = _cmul(c, sc), _cmul(nn, sn)
            want = [[c[0] + nn[0], -c[1] + nn[1]], [c[1] + nn[1], c[0] - nn[0]]]
            got = [r[2 * q : 2 * q + 2] for r in T[2 * p : 2 * p + 2]]
            assert got == want
            if p == q:  # the commutant part is untouched
                assert ((got[0][0] + got[1][1]) / 2, (got[1][0] - got[0][1]) / 2) == (
                    (B[0][0] + B[1][1]) / 2,
                    (B[1][0] - B[0][1]) / 2,
                )
            # geometric sum identity: (1 - w) sum w^n = 1 - w^S
            for w in (wc, wn):
                s = tuple(sum(_cpow(w, k)[i] for k in range(S)) for i in (0, 1))
                one_minus = (1 - w[0], -w[1])
                wS = _cpow(w, S)
                assert _cmul(one_minus, s) == (1 - wS[0], -wS[1])


# --------------------------------------------------------------------- decay bound
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(even_dk, st.integers(1, 64), st.data())
def test_rope_twirl_decay_on_real_angles(impl, dk, S, data):
    """``rope_twirl_decay``: ``|sum_{n<S} w^n|^2 (1 - c) <= 2`` for the implementation's own
    RoPE angle ``w = (c, s) = e^{i theta_p}`` (read off its rotated rows), the averaged form
    ``|(1/S) sum w^n|^2 (1 - c) <= 2 / S^2``, and the exact value ``1 - cos(S theta_p)``
    of the Lean identity ``rope_twirl_decay_eq`` against the float64 oracle from the spec's
    frequencies (independent of the implementation).

    Tolerance: each rotated unit row is ``(cos n theta, sin n theta)`` up to
    ``e = (1 + 4 u_c)^2 (1 + u_io)^2 - 1`` per coordinate (cos/sin in the compute dtype,
    rounded to the input dtype), so the float64 sum of ``S`` rows is within
    ``d = S (e + 2 u_64)`` of the exact one, ``|sum|^2`` within ``2 |sum| d + d^2``
    (exactly: ``||a|^2 - |b|^2| <= (2 |b| + |a - b|) |a - b|``), and ``c`` within ``e``; the
    product with ``1 - c`` (``<= 2``, computed ``<= 2 + e``) is within
    ``(2 |sum| d + d^2)(2 + e) + |sum|^2 e``.
    """
    p = data.draw(st.integers(0, dk // 2 - 1))
    x = np.zeros((S, dk))
    x[:, 2 * p] = 1.0  # the unit row e_{2p} at every position n < S
    rows = impl.rope(impl.round(x))[:, 2 * p : 2 * p + 2].astype(np.float64)
    z = rows[:, 0] + 1j * rows[:, 1]  # w^n (or its conjugate: |sum|^2 is the same)
    c = float(impl.rope(impl.round(x[:1]), offset=1)[0, 2 * p])  # cos theta_p, as held
    total = complex(np.sum(z))
    e = (1 + 4 * impl.u_compute) ** 2 * (1 + impl.u_io) ** 2 - 1
    d = S * (e + 2 * U64)
    tol = (2 * abs(total) * d + d * d) * (2 + e) + abs(total) ** 2 * e
    lhs = abs(total) ** 2 * (1 - c)
    assert lhs <= 2 + tol
    assert abs(total / S) ** 2 * (1 - c) <= 2 / S**2 + tol / S**2
    theta = float(spec_thetas(dk)[p])
    assert abs(lhs - (1 - np.cos(S * theta))) <= tol + 4 * S * U64
