"""Forward error bounds of the PLGA stages, for comparing an implementation with mpmath.

The oracle is the mpmath reference (``pyverify.reference.mp``, 30 digits: its own error is
~1e-30, nothing next to float rounding) applied to the *same* floating-point inputs the
implementation received; so only the implementation's rounding inside the stage counts.

Standard first-order model (Higham): every elementary operation is exact up to a relative
u (the unit round-off of the arithmetic, ``impl.u_compute``); a length-n dot product is off
by ``gamma_n |a|.|b|``; exp, pow and the logistic are within a few ulps (libm, SLEEF).
Where a stage consumes an input that is itself off by ``dX`` (the metric learner chain),
the bound adds the stage's Jacobian acting on ``|dX|``, bounded entrywise. The first-order
bound is doubled on use (``SAFETY``): that covers the neglected second-order terms (of
relative size n u << 1) and the one rounding of the mpmath value to float64.

All functions take float64 NumPy values (the implementation's own intermediates, or the
reference's) and return entrywise absolute bounds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pyverify.precision import UNIT_ROUNDOFF, gamma
from pyverify.reference import numpy_head as nh

if TYPE_CHECKING:
    from pyverify.testing.impls import Impl


def rel_err(x: object, y: object) -> float:
    """Norm-wise relative error ``max|x - y| / max|y|`` in float64 (arrays or tensors)."""
    xa, ya = (
        np.asarray(t.detach().cpu().double()) if hasattr(t, "detach") else np.asarray(t, float)
        for t in (x, y)
    )
    return float(np.max(np.abs(xa - ya)) / np.max(np.abs(ya)))


SAFETY = 2.0
SILU_LIP = 1.0998  # max |silu'(x)| = 1.0998 (at x ~ 2.4)
U64 = UNIT_ROUNDOFF["float64"]


def matmul_bound(X, W, b, dX, u: float) -> np.ndarray:
    """``X @ W + b`` with X off by dX: propagated ``|dX| |W|`` plus ``gamma_{n+1}`` local."""
    aX, aW = np.abs(X), np.abs(W)
    local = gamma(X.shape[-1] + 1, u) * (aX @ aW + (0 if b is None else np.abs(b)))
    return dX @ aW + local


def density_bound(q, u: float) -> np.ndarray:
    """``Q^T Q`` (exact input): ``gamma_S |Q|^T |Q|``."""
    a = np.abs(q)
    return gamma(q.shape[0], u) * (a.T @ a)


def layer_norm_bound(X, dX, gamma_ln, beta, eps: float, u: float) -> np.ndarray:
    """LayerNorm over rows of X (off by dX), biased variance, ``+ eps`` inside the root.

    Propagated: ``dy = (gamma / sigma) P dx`` with P an orthogonal projection (||P||_2 <= 1),
    so ``|dy_i| <= |gamma_i| ||dx_row||_2 / sigma``. Local (exact input): the mean is off by
    ``gamma_n max|x|``, the centred values by ``u |xc|`` more, the variance by
    ``gamma_{n+1} var + 2 mean(|xc| dxc)``, the root by half the variance's relative error
    plus 2u, the quotient and the affine map by u each.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[-1]
    g, bt = np.abs(gamma_ln), np.abs(beta)
    mu = X.mean(axis=-1, keepdims=True)
    xc = X - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    sig = np.sqrt(var + eps)
    prop = g * np.sqrt((np.asarray(dX) ** 2).sum(axis=-1, keepdims=True)) / sig
    dmu = gamma(n, u) * np.abs(X).max(axis=-1, keepdims=True)
    dxc = u * np.abs(xc) + dmu
    dvar = gamma(n + 1, u) * var + 2 * (np.abs(xc) * dxc).mean(axis=-1, keepdims=True)
    dsig_rel = 0.5 * dvar / (var + eps) + 2 * u
    y0 = np.abs(xc) / sig
    dy0 = dxc / sig + y0 * (dsig_rel + u)
    local = g * dy0 + u * (g * y0) + u * (g * y0 + bt)
    return prop + local


def swiglu_bound(X, dX, blk, u: float) -> tuple[np.ndarray, np.ndarray]:
    """One SwiGLU block on rows X (off by dX): returns (value, bound)."""
    h1 = X @ blk.W1 + blk.b1
    h2 = X @ blk.W2 + blk.b2
    s = nh.silu(h1)
    p = s * h2
    dh1 = matmul_bound(X, blk.W1, blk.b1, dX, u)
    dh2 = matmul_bound(X, blk.W2, blk.b2, dX, u)
    ds = SILU_LIP * dh1 + 6 * u * np.abs(s)  # silu: exp, 1 + z, division, product
    dp = ds * np.abs(h2) + np.abs(s) * dh2 + u * np.abs(p)
    return p @ blk.W3 + blk.b3, matmul_bound(p, blk.W3, blk.b3, dp, u)


def metric_learner_bound(D, dD, params, u: float) -> tuple[np.ndarray, np.ndarray]:
    """Steps 2-3 from D (off by dD): ``A = Phi(LN_rows(D))``; returns (value, bound)."""
    eps = params.ln_eps
    X = nh.layer_norm_rows(D, params.ln0_gamma, params.ln0_beta, eps)
    dX = layer_norm_bound(D, dD, params.ln0_gamma, params.ln0_beta, eps, u)
    for unit in params.reslayers:
        Y, dY = X, dX
        for blk in unit.dense:
            Y, dY = swiglu_bound(Y, dY, blk, u)
        Z = X + Y
        dZ = dX + dY + u * np.abs(Z)
        X = nh.layer_norm_rows(Z, unit.ln_gamma, unit.ln_beta, eps)
        dX = layer_norm_bound(Z, dZ, unit.ln_gamma, unit.ln_beta, eps, u)
    return X, dX


def iswiglu_derivative(z) -> np.ndarray:
    """``d/dz z^2 sigmoid(z) = z sigmoid(z) (2 + z (1 - sigmoid(z)))``."""
    s = nh.sigmoid(z)
    return z * s * (2 + z * (1 - s))


def metric_tensor_bound(A, params, u: float) -> np.ndarray:
    """``A_LM = iSwiGLU(W @ A + b) + eps`` from an exact A.

    ``Z`` is off by ``gamma_{dk+1}(|W||A| + |b|)``, moved through iSwiGLU's derivative;
    iSwiGLU itself (z silu(z)) adds 8u relative; the ``+ eps`` u.
    """
    Z = params.W @ A + params.b
    dZ = matmul_bound(params.W, A, params.b, np.zeros_like(params.W), u)
    isw = nh.iswiglu(Z)
    return np.abs(iswiglu_derivative(Z)) * dZ + 8 * u * isw + u * (isw + params.metric_eps)


def power_law_bound(A_LM, P, u: float) -> np.ndarray:
    """``A_LM ** P`` from exact inputs: pow within 2 ulp -> 4u relative."""
    return 4 * u * np.abs(np.power(A_LM, P))


def energy_bound(A_P, params, u: float) -> np.ndarray:
    """``G = a @ A_P + b_a`` from an exact A_P."""
    return matmul_bound(params.a, A_P, params.b_a, np.zeros_like(params.a), u)


LOG2E = 1.4426950408889634


def softmax_entry_rel_error(impl: Impl, E: np.ndarray) -> float:
    """Relative error bound ``eps`` of one computed softmax entry (exactly held scores).

    * fused kernels may evaluate ``exp2(x log2e - m log2e)``: each product with log2e is
      rounded, the argument moves by <= 2 u_c M log2e (M = max|E|), exp by that relatively;
    * exp itself, the normaliser (S_k terms) and the division: gamma_{S_k + 4}(u_c);
    * low-precision fused kernels round the row to the input dtype before ``p V`` and the
      result again: 2 u_io (u_io, the output rounding, for float32/float64).
    """
    M = float(np.max(np.abs(E))) if E.size else 0.0
    arg = 2 * impl.u_compute * M * LOG2E
    low = 2 * impl.u_io if impl.dtype in ("bfloat16", "float16") else impl.u_io
    return 2 * arg + gamma(E.shape[1] + 4, impl.u_compute) + low
