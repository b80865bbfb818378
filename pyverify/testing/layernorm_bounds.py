"""Error bounds of the metric learner (row LayerNorm, residual SwiGLU units): derived, not proved.

Unlike :mod:`pyverify.testing.bounds`, these bounds are no Lean theorem: the row
LayerNorm's moments are outside the Lean model (torch computes them with Welford's
updating algorithm and a cascade of partial moments, ATen's ``RowwiseMoments``; the
float64 reference with two passes). The derivation below is exact-form (every rounding a
``(1 + delta)``, ``|delta| <= u``; no first-order truncation, no safety factor) for the
two-pass algorithm and for both ways of applying the statistics (``(x - mu) r`` and
torch's ``x r + (-mu r)``); its one assumption is that torch's moments are no less
accurate than the two-pass analysis here (``|mu^ - mu|``, ``|v^ - v|`` below). The linear
and entrywise pieces are the proved ones (``fp_mixed_precision``, ``fp_elementwise``).

Each function takes float64 values (the implementation's own input ``X`` and a bound
``dX`` of its distance to the exact input) and returns an entrywise bound of the computed
stage against the exact stage on the exact input.
"""

from __future__ import annotations

import numpy as np

from pyverify.fp.formulas import UNDERFLOW, fp_elementwise, fp_mixed_precision
from pyverify.fp.learner import SILU_LIP
from pyverify.fp.models import LIB_ACCURACY
from pyverify.precision import UNIT_ROUNDOFF, gamma
from pyverify.reference import numpy_head as nh

__all__ = ["SILU_LIP", "layer_norm_bound", "metric_learner_bound", "swiglu_bound"]


def _compute(u: float) -> str:
    return "float64" if u <= UNIT_ROUNDOFF["float64"] else "float32"


def layer_norm_bound(X, dX, gamma_ln, beta, eps: float, u: float) -> np.ndarray:
    """LayerNorm over the rows of ``X`` (off by ``dX``): biased variance, ``+ eps`` inside.

    ``X`` is the nominal input (float64), the implementation's input lies within ``dX`` of
    it and the exact input too: every quantity is taken at its worst over that box
    (``sigma`` moves by at most ``||dX||_2 / sqrt(n)``). Propagated (exact, not first
    order): for ``x' = x + d``, ``|LN(x')_i - LN(x)_i| <= 2 |gamma_i| ||d||_2 / sigma(x')``
    (the centring is a projection; ``sqrt(a^2 + eps)`` is 1-Lipschitz in ``a``;
    ``|c_i| <= sqrt(n) sigma``). Local, on the implementation's input: the mean within
    ``((1 + gamma_{n-1})(1 + u) - 1) mean|x|`` (any-order sum, one division), the centred
    values within ``u |c| + (1 + u) dmu``, the variance within
    ``t (v + dv0) + dv0`` (``dv0 = mean(dc (2 |c| + dc))``, ``t = (1 + gamma_n)(1 + u) - 1``),
    ``+ eps`` and the square root each one rounding (``sqrt(1 +- rho)`` exactly), the
    reciprocal one more; then the normalised value by either formulation, times ``gamma``
    and plus ``beta``, one rounding each.
    """
    X = np.asarray(X, dtype=np.float64)
    dX = np.broadcast_to(np.asarray(dX, dtype=np.float64), X.shape)
    n = X.shape[-1]
    g, bt = np.abs(np.asarray(gamma_ln, np.float64)), np.abs(np.asarray(beta, np.float64))
    mu = X.mean(axis=-1, keepdims=True)
    c = X - mu
    var = (c * c).mean(axis=-1, keepdims=True)
    sig = np.sqrt(var + eps)
    # the implementation's input is within dX of X: every quantity below at its worst over
    # that box (sigma moves by at most ||dX||_2 / sqrt(n))
    dn = np.sqrt((dX**2).sum(axis=-1, keepdims=True))
    # LayerNorm's range: |c_i| / sigma <= sqrt(n), so any two outputs differ by at most
    # 2 |gamma| sqrt(n); where the input's error reaches sigma this is the propagated bound
    sig_lo = sig - dn / np.sqrt(n)
    ok_sig = sig_lo > 0
    sig_lo = np.where(ok_sig, sig_lo, sig)  # placeholder where unused
    sig_hi = sig + dn / np.sqrt(n)
    prop = np.where(ok_sig, np.minimum(2 * g * dn / sig_lo, 2 * g * np.sqrt(n)), 2 * g * np.sqrt(n))
    ax = np.abs(X) + dX
    ac = np.abs(c) + dX + dX.mean(axis=-1, keepdims=True)
    var_hi, var_lo = sig_hi**2 - eps, np.maximum(sig_lo**2 - eps, 0.0)
    dmu = ((1 + gamma(max(n - 1, 0), u)) * (1 + u) - 1) * ax.mean(axis=-1, keepdims=True)
    dc = u * ac + (1 + u) * dmu
    dv0 = (dc * (2 * ac + dc)).mean(axis=-1, keepdims=True)
    dv = ((1 + gamma(n, u)) * (1 + u) - 1) * (var_hi + dv0) + dv0
    rho = (u * (var_hi + eps + dv) + dv) / (var_lo + eps)
    ok = ok_sig & (rho < 1)
    rho = np.where(ok, rho, 0.0)
    lo, hi = np.sqrt(1 - rho) * (1 - u), np.sqrt(1 + rho) * (1 + u)  # sigma^ / sigma
    r_rel = np.maximum((1 + u) / lo - 1, 1 - (1 - u) / hi)  # r^ = fl(1 / sigma^) vs 1 / sigma
    r_up = (1 + r_rel) / sig_lo
    # centred: t^ = fl(c^ r^)
    e_cent = u * (ac + dc) * r_up + dc * r_up + ac * r_rel / sig_lo
    # scale-bias (torch): t^ = fl(fl(x r^) + fl(-mu^ r^))
    amu = np.abs(mu) + dX.mean(axis=-1, keepdims=True) + dmu
    e_sb = u * (ax + amu) * r_up + dmu * r_up + ac * r_rel / sig_lo
    e_sb = e_sb + u * ((ac + dmu) * r_up + u * (ax + amu) * r_up)
    # where the variance is not resolved (its error bound reaches it): the computed
    # variance is >= 0, so r^ <= (1 + u) / ((1 - u) sqrt(eps (1 - u))) and |t^| is at most
    # that times the computed centred value, |t| <= sqrt(n)
    if eps > 0:
        r_max = (1 + u) / ((1 - u) * np.sqrt(eps * (1 - u)))
        t_fb = (1 + u) ** 2 * np.maximum(ac + dc, ax + amu) * r_max + np.sqrt(n)
    else:
        t_fb = np.full_like(ac, np.inf)
    e_t = np.where(ok, np.maximum(e_cent, e_sb), t_fb)
    t = np.where(ok, np.minimum(ac / sig_lo, np.sqrt(n)), np.sqrt(n))
    e_g = u * g * (t + e_t) + g * e_t  # fl(t^ gamma)
    local = u * (g * t + bt + e_g) + e_g  # fl(. + beta)
    return prop + local


def swiglu_bound(X, dX, blk, u: float) -> tuple[np.ndarray, np.ndarray]:
    """One SwiGLU block on rows ``X`` (off by ``dX``): returns (value, bound).

    ``h = X W + b`` (``fp_mixed_precision`` + the propagated ``|dX| |W|``); ``silu`` by
    ``fp_elementwise`` (``L = SILU_LIP``; the routine ``exp``, ``1 + .``, a quotient, a
    product: relative ``1 / ((1 - u_lib)^2 (1 - u)^4) - 1``); the product ``silu(h1) h2``
    with both factors off, one rounding; the output ``p W3 + b3`` as the first.
    """
    comp = _compute(u)
    eta, r = UNDERFLOW[comp], 1.0 / ((1 - LIB_ACCURACY[comp]) ** 2 * (1 - u) ** 4) - 1

    def lin(Xv, dXv, W, b):
        n = Xv.shape[-1] + 1
        mass = np.abs(Xv) @ np.abs(W) + np.abs(b)
        local = fp_mixed_precision(mass, n, u, eta_sum=(n - 1) * eta)
        return Xv @ W + b, local + np.asarray(dXv) @ np.abs(W)

    h1, dh1 = lin(X, dX, blk.W1, blk.b1)
    h2, dh2 = lin(X, dX, blk.W2, blk.b2)
    s = nh.silu(h1)
    ds = fp_elementwise(SILU_LIP, dh1, r, np.abs(s), 2.0**-100 if comp == "float32" else 0.0)
    p = s * h2
    dp = ds * (np.abs(h2) + dh2) + np.abs(s) * dh2
    dp = dp + u * (np.abs(p) + dp)
    return lin(p, dp, blk.W3, blk.b3)


def metric_learner_bound(D, dD, params, u: float) -> tuple[np.ndarray, np.ndarray]:
    """Steps 2-3 from ``D`` (off by ``dD``): ``A = Phi(LN_rows(D))``; returns (value, bound).

    The chain of :func:`layer_norm_bound` and :func:`swiglu_bound`, each unit's residual
    sum one more rounding (``u |Z|`` plus its own error).
    """
    eps = params.ln_eps
    X = nh.layer_norm_rows(D, params.ln0_gamma, params.ln0_beta, eps)
    dX = layer_norm_bound(D, dD, params.ln0_gamma, params.ln0_beta, eps, u)
    for unit in params.reslayers:
        Y, dY = X, dX
        for blk in unit.dense:
            Y, dY = swiglu_bound(Y, dY, blk, u)
        Z = X + Y
        dZ = dX + dY
        dZ = dZ + u * (np.abs(Z) + dZ)
        X = nh.layer_norm_rows(Z, unit.ln_gamma, unit.ln_beta, eps)
        dX = layer_norm_bound(Z, dZ, unit.ln_gamma, unit.ln_beta, eps, u)
    return X, dX
