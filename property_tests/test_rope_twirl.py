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
The oracle is evaluated in mpmath (``MP_DPS`` digits) at the spec's exact frequencies.

The implementations supply ``x -> x R_n^T`` (their ``apply_rope``); ``R_n M R_n^T`` is two
applications: the rows of M at position n, then the rows of the transpose. Bound
(:func:`twirl_bound`): each application within
:func:`~pyverify.testing.rope_bounds.rope_row_error` of the exact rotation of its input
(angles against the spec's exact frequencies, :func:`~pyverify.testing.rope_bounds.angle_error`),
the first one's error carried through the exact second rotation, then the float64 mean
(``[fp_summation]``, one rounded quotient).

Exact form: rational unit complex numbers (Pythagorean points) as the plane rotations;
the same identity holds with equality in Fractions.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.fp.formulas import EVAL_SLACK, UNDERFLOW, fp_summation
from pyverify.precision import UNIT_ROUNDOFF, gamma
from pyverify.reference import rope_thetas
from pyverify.testing.exact import add, block_diag, matmul, rot, scale, transpose, zeros
from pyverify.testing.fp import MP_REL, arith, mp_excess
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.rope_bounds import (
    PLANE,
    angle_error,
    entry_error,
    exact_thetas,
    plane_norm1,
    rope_row_error,
    rotated_error,
    theta_excess,
    trig_excess,
)
from pyverify.testing.stage_bounds import mp_context
from pyverify.testing.strategies import arrays, even_dk, examples, pythagorean

pytestmark = pytest.mark.theorem("rope_twirl")

#: ``[fp_ieee_rounding]`` float64's unit round-off: the tests' own float64 arithmetic.
U64 = UNIT_ROUNDOFF["float64"]
#: ``[rope_twirl]`` ``rope_twirl_decay``'s right-hand side: ``|sum_{n<S} w^n|^2 (1 - c) <= 2``.
DECAY_RHS = 2


@functools.cache
def _premise_excess(dk: int, S: int, device: str) -> tuple[float, float]:
    """:func:`theta_excess` and :func:`trig_excess` on the angles ``n theta_p``, ``n < S``:
    they depend on ``(dk, S, device)`` only, so each is evaluated in mpmath once."""
    angles = np.outer(np.arange(S), rope_thetas(dk))
    return theta_excess(dk, device), trig_excess(angles, device)


def _premises(impl, dk: int, S: int) -> None:
    """The declared accuracies, checked against mpmath on this test's angles."""
    theta, trig = _premise_excess(dk, S, impl.device)
    assert theta <= 1  # LIB_ACCURACY of the frequencies
    assert trig <= 1  # TRIG_ACCURACY


def twirl_impl(impl, M: np.ndarray, S: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(1/S) sum_{n<S} R_n M R_n^T`` with the implementation's ``apply_rope``, and the
    two applications' outputs ``Y``, ``Z``."""
    dk = M.shape[0]
    X = np.repeat(impl.round(M)[:, None, :], S, axis=1)  # X[i, n] = M[i] at position n
    Y = impl.rope(X)  # Y[i, n] = M[i] R_n^T: Y_n = M R_n^T
    W = np.transpose(Y, (2, 1, 0))  # W[j, n] = (Y_n^T)[j]
    Z = impl.rope(W)  # Z[j, n] = (Y_n^T R_n^T)[j] = ((R_n Y_n)^T)[j]
    assert Z.shape == (dk, S, dk)
    return np.transpose(Z, (1, 2, 0)).mean(axis=0), Y, Z  # mean over n of R_n M R_n^T


def twirl_bound(impl, M: np.ndarray, Y: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """``[fp_summation]`` (and :func:`rope_row_error`'s theorems): the computed twirl of the
    held ``M`` against the exact twirl at the spec's frequencies, entrywise.

    ``Y``'s entries within ``E1`` (the rows of ``M``), ``Z``'s within ``E2`` (the rows of
    ``Y_n^T``, plus ``E1`` through the exact rotation); the mean: the float64 sum of ``S``
    terms (``gamma_{S-1} sum |z^|`` plus the leaves' ``sum E2``), divided by ``S`` (one
    rounding, ``u |sum^| <= u (1 + gamma_{S-1}) sum |z^|``, and its underflow).
    """
    ar = arith(impl)
    S = Y.shape[1]
    ang = np.repeat(angle_error(np.arange(S), M.shape[0]), PLANE, axis=-1)  # (S, dk)
    E1 = rope_row_error(ar, plane_norm1(np.repeat(M[:, None, :], S, axis=1)), ang)
    W = np.transpose(Y, (2, 1, 0))
    E2 = rope_row_error(ar, plane_norm1(W), ang) + rotated_error(np.transpose(E1, (2, 1, 0)))
    mass = np.abs(Z).sum(axis=1)  # (j, i): sum over n
    total = fp_summation(mass, S, U64) + E2.sum(axis=1)
    g = gamma(S - 1, U64)
    out = (total + U64 * (1 + g) * mass) / S + UNDERFLOW["float64"]
    return (out.T * EVAL_SLACK).copy()


def twirl_oracle(M: np.ndarray, S: int) -> list[list[mpmath.mpf]]:
    """The spec's decomposition in mpmath at the exact frequencies: C and N parts damped."""
    dk = M.shape[0]
    th = exact_thetas(dk)
    ctx = mp_context()
    out = [[ctx.mpf(0)] * dk for _ in range(dk)]

    def sigma(w: mpmath.mpc) -> mpmath.mpc:
        return ctx.fsum(w**k for k in range(S)) / S

    for p in range(dk // PLANE):
        for q in range(dk // PLANE):
            B = [[ctx.mpf(float(M[PLANE * p + a, PLANE * q + b])) for b in (0, 1)] for a in (0, 1)]
            c = ctx.mpc(B[0][0] + B[1][1], B[1][0] - B[0][1]) / 2
            n = ctx.mpc(B[0][0] - B[1][1], B[0][1] + B[1][0]) / 2
            c *= sigma(ctx.expj(th[p] - th[q]))
            n *= sigma(ctx.expj(th[p] + th[q]))
            blk = [[c.real + n.real, -c.imag + n.imag], [c.imag + n.imag, c.real - n.real]]
            for a in (0, 1):
                for b in (0, 1):
                    out[PLANE * p + a][PLANE * q + b] = blk[a][b]
    return out


def commutant_part(M: np.ndarray) -> np.ndarray:
    dk = M.shape[0]
    out = np.zeros_like(M)
    for p in range(dk // PLANE):
        B = M[PLANE * p : PLANE * p + PLANE, PLANE * p : PLANE * p + PLANE]
        x, y = (B[0, 0] + B[1, 1]) / 2, (B[1, 0] - B[0, 1]) / 2
        out[PLANE * p : PLANE * p + PLANE, PLANE * p : PLANE * p + PLANE] = [[x, -y], [y, x]]
    return out


def commutant_part_bound(M: np.ndarray, err) -> np.ndarray:  # type: ignore[no-untyped-def]
    """``[fp_ieee_rounding]`` :func:`commutant_part` of a matrix within ``err`` of an exact one.

    Each entry is ``fl(a +- b) / 2``: the inputs' errors averaged, one rounded sum
    (``u |a +- b| <= u (|a| + |b|)``), an exact halving but below the normal range (eta).
    """
    A = np.abs(M)
    E = np.broadcast_to(np.asarray(err, dtype=np.float64), M.shape)
    out = np.zeros_like(M)
    for p in range(M.shape[0] // PLANE):
        sl = slice(PLANE * p, PLANE * p + PLANE)
        a, e = A[sl, sl], E[sl, sl]
        x = (e[0, 0] + e[1, 1] + U64 * (a[0, 0] + a[1, 1])) / 2
        y = (e[1, 0] + e[0, 1] + U64 * (a[1, 0] + a[0, 1])) / 2
        out[sl, sl] = [[x, y], [y, x]]
    return (out + UNDERFLOW["float64"]) * EVAL_SLACK


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(even_dk, st.integers(1, 12), st.data())
def test_twirl_keeps_commutant_and_damps_each_frequency(impl, dk, S, data):
    _premises(impl, dk, S)
    M = impl.round(data.draw(arrays((dk, dk), 3.0)))
    got, Y, Z = twirl_impl(impl, M, S)
    bound = twirl_bound(impl, M, Y, Z)
    assert mp_excess(got, twirl_oracle(M, S), bound) <= 1
    # the commutant part of the twirl is the commutant part of M (its frequency is 0)
    cp_tol = commutant_part_bound(got, bound) + commutant_part_bound(M, 0.0)
    assert np.all(np.abs(commutant_part(got) - commutant_part(M)) <= cp_tol)
    # a matrix in the commutant is a fixed point (rounding to the dtype keeps x I + y J)
    P = impl.round(commutant_part(M))
    got_p, Yp, Zp = twirl_impl(impl, P, S)
    assert np.all(np.abs(got_p - P) <= twirl_bound(impl, P, Yp, Zp))


def _damping_budget(M: np.ndarray, S: int) -> np.ndarray:
    """``[rope_twirl]`` Entrywise bound of the exact twirl minus the commutant part.

    Block (p, q): ``|c| |sigma_S(w_c)|`` (not for p = q: that is the commutant part) plus
    ``|n| |sigma_S(w_n)|``, with ``|sigma_S(w)| <= 2 / (S |1 - w|)`` (``|1 - w^S| <= 2``) and
    ``|1 - e^{i a}| = 2 |sin(a / 2)|``: mpmath at the exact frequencies, rounded up.
    """
    dk = M.shape[0]
    th = exact_thetas(dk)
    ctx = mp_context()
    out = np.zeros_like(M)
    for p in range(dk // PLANE):
        for q in range(dk // PLANE):
            B = [[ctx.mpf(float(M[PLANE * p + a, PLANE * q + b])) for b in (0, 1)] for a in (0, 1)]
            size_c = ctx.hypot(B[0][0] + B[1][1], B[1][0] - B[0][1]) / 2
            size_n = ctx.hypot(B[0][0] - B[1][1], B[0][1] + B[1][0]) / 2
            budget = size_n * 2 / (S * abs(1 - ctx.expj(th[p] + th[q])))
            if p != q:  # the diagonal C part is the commutant part (w = 1, undamped)
                budget += size_c * 2 / (S * abs(1 - ctx.expj(th[p] - th[q])))
            out[PLANE * p : PLANE * p + PLANE, PLANE * q : PLANE * q + PLANE] = float(budget)
    return out * EVAL_SLACK


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(5)
@given(even_dk, st.data())
def test_long_twirl_approaches_the_commutant_projection(impl, dk, data):
    """S = 512: off-commutant components are damped to at most ``2 / (S |1 - w|)``."""
    S = 512
    _premises(impl, dk, S)
    M = impl.round(data.draw(arrays((dk, dk), 3.0)))
    got, Y, Z = twirl_impl(impl, M, S)
    tol = _damping_budget(M, S) + twirl_bound(impl, M, Y, Z) + commutant_part_bound(M, 0.0)
    assert np.all(np.abs(got - commutant_part(M)) <= tol)


def _geometric_error(w: complex, S: int) -> tuple[float, float]:
    """``[fp_dot_product]`` ``[fp_summation]`` The float64 evaluation of both sides of
    ``(1 - w) sum_{n<S} w^n = 1 - w^S`` for a float64 ``w`` (the identity is exact for it).

    A complex product: each component a 2-term dot product (``gamma_2``), so modulus
    error ``mu |x||y|``, ``mu = hypot(gamma_2, gamma_2)``; ``w^n`` by any tree of products:
    ``((1 + mu)^(n-1) - 1) |w|^n``; the sum per component (``[fp_summation]``, ``S``
    terms); ``1 - x``: one rounding. Moduli bounded by ``|re| + |im|``; ``|w|`` exactly
    (mpmath of the exact ``re^2 + im^2``). Returns (lhs bound, rhs bound).
    """
    mu = float(np.hypot(gamma(PLANE, U64), gamma(PLANE, U64))) * EVAL_SLACK
    r2 = Fraction(w.real) ** PLANE + Fraction(w.imag) ** PLANE
    ctx = mp_context()
    r = float(ctx.sqrt(ctx.mpf(r2.numerator) / r2.denominator)) * EVAL_SLACK
    pw = [w**n for n in range(S + 1)]
    rho = [float(np.expm1(max(n - 1, 0) * np.log1p(mu))) * r**n for n in range(S + 1)]
    sre, sim = sum(abs(x.real) for x in pw[:S]), sum(abs(x.imag) for x in pw[:S])
    d_sum = float(np.hypot(fp_summation(sre, S, U64), fp_summation(sim, S, U64))) + sum(rho[:S])
    a = 1 - w
    d_a = U64 * abs(a.real)
    b = sum(pw[:S])
    mod_a, mod_b = abs(a.real) + abs(a.imag), abs(b.real) + abs(b.imag)
    lhs = mu * mod_a * mod_b + mod_a * d_sum + d_a * (mod_b + d_sum)
    rhs = rho[S] + U64 * abs(1 - pw[S].real)
    return lhs * EVAL_SLACK, rhs * EVAL_SLACK


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.floats(0.01, 6.2), st.integers(1, 64))
def test_geometric_sum_identity(impl, angle, S):
    """``(1 - w) sum_{n<S} w^n = 1 - w^S`` with w from the implementation's rotation:
    ``w = cos a + i sin a`` read off ``rot2(a)`` (held in its dtype, |w| = 1 + O(u_io))."""
    assert trig_excess([angle], impl.device) <= 1
    R = impl.rot2(angle)
    w = complex(R[0, 0], R[1, 0])
    # w is the rotation by `angle` (cos and sin each within entry_error: the angle is exact,
    # theta_0 = 1), so a wrong angle or sign in rot2 fails here, not only the identity below
    e = entry_error(0.0, impl.u_io, UNDERFLOW[impl.dtype])
    ctx = mp_context()
    assert abs(ctx.mpc(w.real, w.imag) - ctx.expj(angle)) <= float(np.hypot(e, e)) * EVAL_SLACK
    lhs = (1 - w) * sum(w**n for n in range(S))
    rhs = 1 - w**S
    b_lhs, b_rhs = _geometric_error(w, S)
    assert abs(ctx.mpc(lhs.real, lhs.imag) - ctx.mpc(rhs.real, rhs.imag)) <= b_lhs + b_rhs


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
def _square_error(t: float, d: float, one_minus_c: float, e_c: float) -> float:
    """``| |a|^2 (1 - c^) - |b|^2 (1 - c) |`` for ``|a - b| <= d``,
    ``|c^ - c| <= e_c``, ``|a| <= t`` (exact algebra: ``||a|^2 - |b|^2| <= (2 |a| + d) d``,
    ``|b|^2 <= (|a| + d)^2``)."""
    return ((t + t + d) * d * one_minus_c + (t + d) * (t + d) * e_c) * EVAL_SLACK


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(even_dk, st.integers(1, 64), st.data())
def test_rope_twirl_decay_on_real_angles(impl, dk, S, data):
    """``rope_twirl_decay``: ``|sum_{n<S} w^n|^2 (1 - c) <= 2`` for the implementation's own
    RoPE angle ``w = (c, s) = e^{i theta_p}`` (read off its rotated rows), the averaged form
    ``|(1/S) sum w^n|^2 (1 - c) <= 2 / S^2``, and the exact value ``1 - cos(S theta_p)``
    of the Lean identity ``rope_twirl_decay_eq`` (mpmath, the spec's exact frequencies).

    Tolerance: each rotated unit row is ``(cos n theta, sin n theta)`` (exact frequencies)
    within ``rope_row_error`` per coordinate, so the float64 sum of ``S`` rows is within
    ``d`` (``[fp_summation]`` plus the rows' errors) of the exact one, and ``c`` within
    ``e_c``; ``|sum|^2 (1 - c)`` is then evaluated exactly (Fractions) on the computed
    values, within :func:`_square_error` of the exact one.
    """
    _premises(impl, dk, S)
    ar = arith(impl)
    p = data.draw(st.integers(0, dk // 2 - 1))
    x = np.zeros((S, dk))
    x[:, 2 * p] = 1.0  # the unit row e_{2p} at every position n < S
    rows = impl.rope(impl.round(x))[:, 2 * p : 2 * p + 2].astype(np.float64)
    z = rows[:, 0] + 1j * rows[:, 1]  # w^n (or its conjugate: |sum|^2 is the same)
    c = float(impl.rope(impl.round(x[:1]), offset=1)[0, 2 * p])  # cos theta_p, as held
    E = rope_row_error(ar, 1.0, angle_error(np.arange(S), dk)[:, p])  # (S,)
    e_c = float(rope_row_error(ar, 1.0, angle_error(1, dk)[p]))
    total = complex(np.sum(z))
    d = float(np.hypot(fp_summation(np.abs(rows[:, 0]).sum(), S, U64) + E.sum(),
                       fp_summation(np.abs(rows[:, 1]).sum(), S, U64) + E.sum()))  # fmt: skip
    one_minus_c = Fraction(1) - Fraction(c)

    def exact_sq(v: complex) -> Fraction:
        return Fraction(v.real) * Fraction(v.real) + Fraction(v.imag) * Fraction(v.imag)

    lhs = exact_sq(total) * one_minus_c
    tol = _square_error(abs(total.real) + abs(total.imag), d, float(one_minus_c), e_c)
    assert lhs <= DECAY_RHS + Fraction(tol)
    avg = total / S  # each component one rounded quotient
    d_avg = (d + U64 * (abs(total.real) + abs(total.imag))) / S + UNDERFLOW["float64"]
    tol_avg = _square_error(abs(avg.real) + abs(avg.imag), d_avg, float(one_minus_c), e_c)
    assert exact_sq(avg) * one_minus_c <= Fraction(DECAY_RHS, S * S) + Fraction(tol_avg)
    theta = exact_thetas(dk)[p]
    ctx = mp_context()
    want = 1 - ctx.cos(S * theta)
    got = ctx.mpf(lhs.numerator) / lhs.denominator
    assert abs(got - want) <= tol - MP_REL * abs(want)
