"""The metric learner's proved bound (steps 1-3), evaluated per call on its operands.

``[fp_layernorm]`` ``Pldr.fp_layernorm_certified`` (``lean/Pldr/Float/LayerNorm.lean``)
takes any mean and reciprocal square root routine through two numbers: the computed mean
within ``m`` of the mean of the actual input ``x^``, and ``|r^ - rho| <= u_rs rho`` with
``rho = 1 / sqrt(sum c^^2 / n + eps)`` (it instantiates ``fp_layernorm`` with the
witnesses ``v^ := sum c^^2 / n``, ``w^ := v^ + eps``, ``e_v = eta_v = 0`` and
``Delta mu = m + sum d / n``). Nothing about the routine is assumed here: each call's
``m`` and ``u_rs`` are *certified* on the actual row (:func:`certify_layernorm`, exact
rational arithmetic): the mean's actual distance and the actual ``|r^ sqrt(w^) - 1|``;
Welford's moments, a float32 ``eps``: whatever the routine did is in those two numbers.
The products and sums after the statistics are the theorem's IEEE roundings, their
witnesses ``c^ = fl(x^ - mu^)``, ``t^ = fl(c^ r^)`` computed here in the
routine's format, the output checked entry by entry against them
(:func:`check_scale_shift`).

The exact trajectory is not computed: each stage's bound is the theorem's right-hand side
at the worst point of the *enclosure* ``|x - x^| <= d`` of the exact input around the
implementation's own (``x^``, ``d``). Every term of ``fp_layernorm`` and ``fp_swiglu`` is
nondecreasing in ``|c_i|``, ``D_i``, ``r``, ``R``, ``|h|``, ``|silu h|`` and ``R``
nonincreasing in ``w = v + eps`` (``omega = W / (w - W)`` with ``W = (1 + u) V + u w``
has ``d omega / d w = -(1 + u) V / (w - W)^2``), so the bound is taken at upper bounds of
the magnitudes (``|c_i| <= |x^_i - mean x^| + d_i + mean d``), a lower bound of ``w``
(``sqrt v`` moves by at most ``||d||_2 / sqrt n``: centring is an orthogonal projection)
and ``r <= 1 / sqrt(w_lo)``. Held parameters (float64 weights rounded to the compute
format, relative ``u_hold``) enter as ``fp_mixed_precision``'s input rounding and, for
LayerNorm's ``gamma``, ``beta``, as the exact LayerNorm's own change
``u_hold (|gamma| |c| r + |beta|)``.

Evaluation: per-row scalars (``W``, ``omega``, ``R``, ``u_rs``, the mean's distance) in
Fractions; the rest are sums and products of nonnegative terms in float64, each result
times :data:`~pyverify.fp.formulas.EVAL_SLACK`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from pyverify.fp import stages
from pyverify.fp.formulas import EVAL_SLACK, fp_mixed_precision
from pyverify.precision import UNIT_ROUNDOFF

__all__ = [
    "HIDDEN_LIMIT",
    "SILU_LIP",
    "LayerNormCertificate",
    "certify_layernorm",
    "check_scale_shift",
    "density_bound",
    "float_up",
    "layernorm_bound",
    "reference_sigmoid_exp",
    "statistics_ratio",
    "swiglu_bound",
]

#: ``max |silu'(x)| = 1.0998...`` (at ``x ~ 2.40``; ``silu' = sigma (1 + x (1 - sigma))``):
#: silu is ``SILU_LIP``-Lipschitz on the whole line. Rounded up.
SILU_LIP = 1.0999
#: [fp_swiglu] Largest hidden value ``|h|`` the SwiGLU bound is evaluated for: ``exp(-h)``
#: stays in float32's normal range (no underflow term, no overflow), the premise of
#: taking the exponential's relative accuracy alone (``eta_e = 0``).
HIDDEN_LIMIT = 60.0

_U64 = UNIT_ROUNDOFF["float64"]


def float_up(q: Fraction) -> float:
    """The least float64 ``>= q``."""
    f = float(q)
    return f if Fraction(f) >= q else float(np.nextafter(f, np.inf))


def reference_sigmoid_exp(u_lib: Fraction) -> Fraction:
    """``[fp_swiglu]`` The float64 reference's sigmoid, as ``fp_swiglu_sigmoid`` models it.

    ``where(z >= 0, 1 / (1 + e), e / (1 + e))``, ``e = exp(-|z|)``: for ``z < 0`` it is
    ``fl(1 / D)`` with ``D = fl(1 + e) / e`` exact, ``1 + 1/e`` rounded once and ``1/e`` an
    exponential of ``-z`` of accuracy ``u_lib / (1 - u_lib)``: that accuracy covers both
    branches.
    """
    return u_lib / (1 - u_lib)


def _down(q: Fraction) -> float:
    """The greatest float64 ``<= q``."""
    f = float(q)
    return f if Fraction(f) <= q else float(np.nextafter(f, -np.inf))


def _row_sums(x: np.ndarray) -> tuple[list[int], list[int], int]:
    """Per row, ``sum x`` and ``sum x^2`` exactly: integers at the scales ``2^e``, ``2^2e``."""
    f, e = np.frexp(np.asarray(x, np.float64))
    m = (f * 2.0**53).astype(np.int64)  # exact: a float64 significand has 53 bits
    e = e.astype(np.int64) - 53
    nz = m != 0
    e0 = int(e[nz].min()) if nz.any() else 0
    sh = np.where(nz, e - e0, 0)
    s1, s2 = [], []
    for mr, sr in zip(m.tolist(), sh.tolist(), strict=True):
        ints = [mi << si for mi, si in zip(mr, sr, strict=True)]
        s1.append(sum(ints))
        s2.append(sum(i * i for i in ints))
    return s1, s2, e0


def _scale(e: int) -> Fraction:
    return Fraction(2) ** e


def _certify_rel(q: Fraction) -> float:
    """``[fp_layernorm]`` A float ``u < 1``, ``(1 - u)^2 <= q <= (1 + u)^2``, checked exactly.

    ``q = r^2 w``: then ``|r - 1/sqrt(w)| <= u / sqrt(w)``, the hypothesis ``hrh``.
    """
    u = abs(math.sqrt(float(q)) - 1.0) * (1 + 2.0**-20) + 2.0**-60
    while u < 1:
        fu = Fraction(u)
        if (1 - fu) ** 2 <= q <= (1 + fu) ** 2:
            return u
        u *= 2.0
    raise ValueError("fp_layernorm: the routine's rstd is off by 100 % or more (u_rs >= 1)")


def _sq_mean(c2: int, e: int, n: int) -> Fraction:
    return Fraction(c2) * _scale(2 * e) / n


@dataclass(frozen=True)
class LayerNormCertificate:
    """One LayerNorm call's statistics, certified per row against its actual input.

    Attributes
    ----------
    dist_mean : numpy.ndarray
        ``|mu^ - mean(x^)|`` (rounded up), ``(N,)``.
    u_rs : numpy.ndarray
        ``|r^ sqrt(sum c^^2 / n + eps) - 1|`` (certified upper bound), ``(N,)``.
    mean : numpy.ndarray
        ``mean(x^)`` rounded to nearest (within ``u64`` of it), ``(N,)``.
    var_lo : numpy.ndarray
        A lower bound of the variance of ``x^`` (exact, rounded down), ``(N,)``.
    var_c : numpy.ndarray
        ``sum c^^2 / n`` (rounded up), ``(N,)``.
    """

    dist_mean: np.ndarray
    u_rs: np.ndarray
    mean: np.ndarray
    var_lo: np.ndarray
    var_c: np.ndarray


def certify_layernorm(
    x: np.ndarray, mu_hat: np.ndarray, r_hat: Sequence[Fraction], c_hat: np.ndarray, eps: float
) -> LayerNormCertificate:
    """Certify one LayerNorm call on rows ``x`` (``(N, n)``, the values it was given).

    ``mu_hat``: the mean it used per row; ``r_hat``: its reciprocal square root (exact
    values: a float's, or ``1 / s`` for a routine that divides by ``s``); ``c_hat``: the
    centred witnesses ``fl(x - mu^)`` in its format; ``eps`` the exact LayerNorm's.
    """
    x = np.asarray(x, np.float64)
    N, n = x.shape
    s1, s2, e = _row_sums(x)
    _, c2, ec = _row_sums(np.asarray(c_hat, np.float64))
    ep = Fraction(float(eps))
    dist, urs, mean, vlo, vc = [], [], [], [], []
    for i in range(N):
        mu = Fraction(s1[i]) * _scale(e) / n
        var = Fraction(n * s2[i] - s1[i] * s1[i]) * _scale(2 * e) / (n * n)
        w = _sq_mean(c2[i], ec, n) + ep
        dist.append(float_up(abs(Fraction(float(mu_hat[i])) - mu)))
        urs.append(_certify_rel(Fraction(r_hat[i]) ** 2 * w))
        mean.append(float(mu))
        vlo.append(_down(var))
        vc.append(float_up(w - ep))
    return LayerNormCertificate(*(np.array(a, np.float64) for a in (dist, urs, mean, vlo, vc)))


def statistics_ratio(
    x: np.ndarray, cert: LayerNormCertificate, eps: float, *, u: float, eta: float, u_rs: float
) -> tuple[float, float]:
    """The certified statistics over the two-pass routine's proved worst case, per call.

    ``(max dist_mean / Delta mu, max u_rs / U)`` over the rows, with ``Delta mu`` of
    ``fp_layernorm_mean`` (a sum in any order and a rounded division, ``u_d = u``,
    ``eta_d = eta``, an exact input) and ``U`` the accuracy the two-pass statistics give
    ``r^`` (the steps of ``fp_layernorm``): the variance of ``fp_layernorm_variance``
    (``eta_m = eta_d = eta``) off by ``V = e_v v_c + eta_v``, ``+ eps`` rounded
    (``W = V + u (w_c + V)``), ``omega = W / (w_c - W)`` (``absv_rsqrt_sub_le``) and a
    reciprocal square root routine of accuracy ``u_rs``:
    ``U = (1 + u_rs)(1 + omega) - 1``. Ratios above 1: the routine's statistics are less
    accurate than that textbook routine is proved to be.
    """
    x = np.asarray(x, np.float64)
    n = x.shape[1]
    fu, fe, fr = Fraction(u), Fraction(eta), Fraction(u_rs)
    ev, etav = stages.fp_layernorm_variance(n, fu, fu, fe, fe)
    ep = Fraction(float(eps))
    abs_sum = EVAL_SLACK * np.abs(x).sum(axis=1)
    rm = ru = 0.0
    for i in range(x.shape[0]):
        dmu = stages.fp_layernorm_mean(Fraction(float(abs_sum[i])), 0, n, fu, fu, fe)
        vc = Fraction(float(cert.var_c[i]))
        V = ev * vc + etav
        W = V + fu * (vc + ep + V)
        wc = vc + ep
        U = (1 + fr) * (1 + W / (wc - W)) - 1 if W < wc else None
        rm = max(rm, float(Fraction(float(cert.dist_mean[i])) / dmu) if dmu else np.inf)
        ru = max(ru, float(Fraction(float(cert.u_rs[i])) / U) if U else np.inf)
    return rm, ru


def _passes(y: np.ndarray, s: np.ndarray, beta: np.ndarray, u: float) -> np.ndarray:
    """``[fp_layernorm]`` Entrywise ``hy``: ``|y - (s + beta)| <= u |s + beta|``, exactly.

    A float64 screen, then Fractions.

    The screen accepts ``|y - z64| <= u |z64| (1 - 2^-20)`` with ``z64 = fl64(s + beta)``
    (for ``u >= 2^-24`` this implies the exact statement: ``|z64 - z| <= u64 |z|``).
    """
    ok = np.zeros(y.shape, dtype=bool)
    if u >= 2.0**-24:
        z = s + beta
        ok = np.abs(y - z) <= u * np.abs(z) * (1 - 2.0**-20)
    fu = Fraction(u)
    for idx in zip(*np.nonzero(~ok), strict=True):
        zq = Fraction(float(s[idx])) + Fraction(float(beta[idx]))
        ok[idx] = abs(Fraction(float(y[idx])) - zq) <= fu * abs(zq)
    return ok


def check_scale_shift(
    y: np.ndarray, t_hat: np.ndarray, gamma: np.ndarray, beta: np.ndarray, u: float, fmt: type
) -> None:
    """``[fp_layernorm]`` The hypotheses ``hs``, ``hy`` on the actual outputs ``y``, entrywise.

    A witness ``s^`` per entry: ``t^ gamma`` (a fused multiply-add: ``hs`` holds with zero
    error), else ``fl(t^ gamma)`` in ``fmt``; ``hy``: ``|y - (s^ + beta)| <= u |s^ + beta|``.

    Raises
    ------
    ValueError
        If an entry has neither witness: the output is not ``t^`` scaled and shifted with
        the modelled roundings (outside ``fp_layernorm``).
    """
    t = np.asarray(t_hat, np.float64)
    g = np.broadcast_to(np.asarray(gamma, np.float64), t.shape)
    b = np.broadcast_to(np.asarray(beta, np.float64), t.shape)
    y = np.asarray(y, np.float64)
    exact = t * g  # exact for float32 operands (48-bit products); a witness for float64 only
    if u < 2.0**-24:  # float64: t gamma is not exact in float64; check it with Fractions
        ok = np.zeros(y.shape, dtype=bool)
        fu = Fraction(u)
        for idx in np.ndindex(*y.shape):
            zq = Fraction(float(t[idx])) * Fraction(float(g[idx])) + Fraction(float(b[idx]))
            ok[idx] = abs(Fraction(float(y[idx])) - zq) <= fu * abs(zq)
    else:
        ok = _passes(y, exact, b, u)
    if not ok.all():
        rounded = (t.astype(fmt) * g.astype(fmt)).astype(np.float64)
        rest = ~ok
        ok[rest] = _passes(y[rest], rounded[rest], b[rest], u)
    if not ok.all():
        raise ValueError(
            f"fp_layernorm: {int((~ok).sum())} LayerNorm outputs are not fl(fl(x - mu) rstd) "
            "scaled and shifted with the modelled roundings"
        )


def layernorm_bound(
    x: np.ndarray, d: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float,
    cert: LayerNormCertificate, *, u: float, eta: float, u_hold: float = 0.0,
) -> np.ndarray:  # fmt: skip
    """``[fp_layernorm]`` ``Pldr.fp_layernorm_certified`` on the enclosure ``|x - x^| <= d``.

    ``x``: the routine's actual input rows ``(N, n)``; ``d``: the bound of their distance
    to the exact rows; the right-hand side at the enclosure's worst point (module
    docstring).

    ``gamma``, ``beta``: the held parameters (the exact ones within ``u_hold`` of them);
    ``cert``: :func:`certify_layernorm` of the call; ``u``, ``eta``: the format's rounding.
    """
    x, d = np.asarray(x, np.float64), np.asarray(d, np.float64)
    N, n = x.shape
    g, bt = np.abs(np.asarray(gamma, np.float64)), np.abs(np.asarray(beta, np.float64))
    mu = cert.mean[:, None]
    d_mean = d.mean(axis=1, keepdims=True)
    c_up = EVAL_SLACK * (np.abs(x - mu) + 2 * _U64 * np.abs(mu) + d + d_mean)
    dn = EVAL_SLACK * np.sqrt((d * d).sum(axis=1) / n)
    sig_lo = np.maximum(np.sqrt(cert.var_lo) * (1 - 2 * _U64) - dn, 0.0) * (1 - 2 * _U64)
    w_lo = (sig_lo * sig_lo * (1 - 2 * _U64) + eps) * (1 - 2 * _U64)
    r_hi = EVAL_SLACK / np.sqrt(w_lo)
    dmu = EVAL_SLACK * (cert.dist_mean + d_mean[:, 0])
    D = EVAL_SLACK * ((d + dmu[:, None]) * (1 + u) + u * c_up)
    Q = EVAL_SLACK * (D * (2 * c_up + D)).mean(axis=1)
    fu = Fraction(u)
    R = np.empty(N)
    for i in range(N):
        wl = Fraction(float(w_lo[i]))
        W = (1 + fu) * Fraction(float(Q[i])) + fu * wl
        if not W < wl:
            raise ValueError("fp_layernorm: a row's variance is not resolved (W >= v + eps)")
        om = W / (wl - W)
        us = Fraction(float(cert.u_rs[i]))
        R[i] = float_up(us + om + us * om)
    r, Rr = r_hi[:, None], R[:, None] * r_hi[:, None]
    T = (D * r + c_up * Rr + D * Rr) * (1 + u) + u * c_up * r + eta
    S = T * g * (1 + u) + u * c_up * r * g + eta
    y_abs = g * c_up * r + bt
    held = u_hold * (1 + 2 * u_hold) * y_abs  # the exact LayerNorm with the exact gamma, beta
    return EVAL_SLACK * EVAL_SLACK * (S * (1 + u) + u * y_abs + held)


def density_bound(q: np.ndarray, u: float, eta: float) -> np.ndarray:
    """``[fp_mixed_precision]`` ``D^ = fl(Q^T Q)`` (``q``: ``(S, dk)`` exact values), any order."""
    q = np.abs(np.asarray(q, np.float64))
    S = q.shape[0]
    return EVAL_SLACK * fp_mixed_precision(q.T @ q, S, u, eta_sum=S * eta)


def _kappa1(u: float, u_exp: float) -> float:
    """``(1 + u)(1 + kappa) - 1`` of ``fp_swiglu_silu`` (``kappa``: ``fp_swiglu_sigmoid``'s)."""
    fu = Fraction(u)
    kappa = stages.fp_swiglu_kappa(fu, Fraction(u_exp), Fraction(0))
    return float_up((1 + fu) * (1 + kappa) - 1)


def swiglu_bound(
    Y: np.ndarray, d: np.ndarray, blk, h1: np.ndarray, h2: np.ndarray, s1: np.ndarray,
    g: np.ndarray, *, u: float, eta: float, u_exp: float, u_hold: float = 0.0,
    acc: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """``[fp_swiglu]`` ``Pldr.fp_swiglu``: one block on rows ``Y^`` (off by ``d``).

    ``h1``, ``h2``, ``s1 = silu^(h1)``, ``g = fl(s1 h2)``: the block's computed values;
    ``blk``: the exact weights (float64; held within ``u_hold``). The exact magnitudes:
    ``|h_k| <= |h^_k| + d_k`` (``d_k = B_k + d |W_k|``), ``|silu h1| <= (|s1| + eta) /
    (1 - k1) + L d_1`` (``fp_swiglu_silu`` on the computed argument, then ``L``-Lipschitz).
    ``acc``: the fused residual's accumulator ``fl(X^ + b3)`` (the output is then
    ``acc + g W3``, ``n + 1`` leaves in any order, ``acc`` within ``u / (1 - u) |acc|`` of
    ``X^ + b3``); the caller adds the residual's input error.
    """
    if np.any(np.abs(h1) > HIDDEN_LIMIT):
        raise ValueError(
            f"fp_swiglu: a hidden value beyond {HIDDEN_LIMIT}: exp(-h) may leave the range"
        )
    Y, d = np.abs(np.asarray(Y, np.float64)), np.asarray(d, np.float64)
    W1, W2, W3 = (np.abs(np.asarray(w, np.float64)) for w in (blk.W1, blk.W2, blk.W3))
    n, f = W1.shape

    def local(mass: np.ndarray, k: int) -> np.ndarray:
        return EVAL_SLACK * fp_mixed_precision(mass, k + 1, u, u_a=u_hold, eta_sum=k * eta)

    B1 = local(Y @ W1 + np.abs(blk.b1), n)
    B2 = local(Y @ W2 + np.abs(blk.b2), n)
    d1, d2 = EVAL_SLACK * (B1 + d @ W1), EVAL_SLACK * (B2 + d @ W2)
    k1 = _kappa1(u, u_exp)
    s_up = EVAL_SLACK * ((np.abs(s1) + eta) / (1 - k1) + SILU_LIP * d1)
    h2_up = EVAL_SLACK * (np.abs(h2) + d2)
    ds = EVAL_SLACK * (k1 * (s_up + SILU_LIP * d1) + eta + SILU_LIP * d1)
    dp = EVAL_SLACK * ((ds * h2_up + s_up * d2 + ds * d2) * (1 + u) + u * s_up * h2_up + eta)
    g = np.abs(np.asarray(g, np.float64))
    if acc is None:
        B3 = local(g @ W3 + np.abs(blk.b3), f)
    else:
        a = np.abs(np.asarray(acc, np.float64))
        b3 = u_hold * (1 + 2 * u_hold) * np.abs(blk.b3)  # acc's b3 is the held one
        B3 = local(g @ W3 + a, f) + EVAL_SLACK * ((u / (1 - u)) * a + b3)
    return EVAL_SLACK * (B3 + dp @ W3)
