"""What each implementation computes, as the parameters of the proved error bounds.

:mod:`pyverify.fp.formulas` evaluates the Lean theorems of ``lean/Pldr/Float/``; this module
says which roundings, which exponential and which order each implementation uses, and
chains the theorems stage by stage into entrywise bounds of its results against exact
arithmetic on the same inputs. These are the premises of the theorems, stated once:

* the float64 reference (NumPy): everything in float64; BLAS products in any order
  (``fp_dot_product`` covers blocking and FMA); softmax in the normalise-first order
  (``exp(E - max)``, row sum, quotient, then ``p @ V``); NumPy's ``exp`` within
  :data:`EXP_ACCURACY` ``["numpy"]``;
* the torch kernels: statistics, learner and ``G`` in the compute dtype (float64, else
  float32), parameters held in it; ``Q G`` formed in the compute dtype and, at
  bfloat16/float16, split ``hi + lo`` (compensated, the default) or rounded once
  (``collapsed``); attention by torch's CPU flash kernel, whose key blocks are 512 long
  (``cpu_flash_attention<..., 512>`` in ATen's ``FlashAttentionKernel.cpp``): with at most
  :data:`KV_BLOCK` keys there is one block, no online rescaling. Its scores accumulate in
  float32 (exact products of bfloat16/float16 inputs), its exponential is ATen's
  ``exp_u20`` (float32) or ``fexp_u20`` (bfloat16/float16 outputs; the weights are then
  rounded to the input format before ``p V``), the output is the numerator times the
  reciprocal of the denominator. torch has used the normalise-first order in earlier
  versions, so the kernels' attention bound is the larger of the two orders' bounds
  (``fp_head_output`` and ``fp_head_output_normalized``).

Any other implementation is held to the kernels' premises (an assumption about it).
Inputs are float64 NumPy arrays of the values the implementation holds (already rounded
to its formats); every function returns an entrywise bound of ``|computed - exact|``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pyverify.fp.formulas import (
    EVAL_SLACK,
    UNDERFLOW,
    fp_elementwise,
    fp_head_output,
    fp_head_output_normalized,
    fp_head_scores,
    fp_mixed_precision,
    fp_softmax_coefficients,
    fp_softmax_exp_factor,
)
from pyverify.precision import UNIT_ROUNDOFF, gamma

__all__ = [
    "EXP_ACCURACY",
    "KV_BLOCK",
    "LIB_ACCURACY",
    "Arithmetic",
    "arithmetic",
    "attention_bound",
    "linear_stage_bound",
    "metric_tensor_bound",
    "power_stage_bound",
    "scores_bound",
    "softmax_bound",
]

#: The longest key row of one flash-attention block (torch's ``kvSplitSize``).
KV_BLOCK = 512

#: ``(u_exp, eta_exp)`` of the softmax exponential: relative error and absolute error
#: below the normal range (ATen flushes to 0 under ``ln(FLT_MIN)``). ``numpy``: NumPy's
#: SIMD ``exp`` (measured <= 0.6 ulp; 2 ulp declared). ``sleef``: ATen's float64
#: ``exp_u20`` = ``Sleef_expd8_u10`` (1 ulp; 2 declared). ``exp_u20``: ATen's float32
#: ``exp_u20`` ("ULP=20" in its source; 3.2 ulp measured on a re-implementation,
#: ``tests/test_fp_models.py``). ``fexp_u20``: ATen's degree-3 ``fexp_u20``, used when
#: the output is bfloat16/float16 (1.13e-4 measured on a re-implementation; 2^-12
#: declared).
EXP_ACCURACY: dict[str, tuple[float, float]] = {
    "numpy": (2.0**-51, 2.0**-1021),
    "sleef": (2.0**-51, 2.0**-1021),
    "exp_u20": (20 * 2.0**-23, 2.0**-125),
    "fexp_u20": (2.0**-12, 2.0**-125),
}

#: Relative error of the library ``exp`` and ``pow`` of the metric stages (1 ulp for
#: NumPy/glibc and Sleef ``u10``; 2 ulp declared), by compute dtype.
LIB_ACCURACY: dict[str, float] = {"float64": 2.0**-51, "float32": 2.0**-22}

#: The exact iSwiGLU where the computed exponential leaves the range (``|z| > 87``,
#: float32; ``> 708``, float64) is below ``z^2 e^-|z|``: under these absolute terms.
_ISWIGLU_TAIL: dict[str, float] = {"float64": 2.0**-1000, "float32": 2.0**-100}


@dataclass(frozen=True)
class Arithmetic:
    """One implementation's arithmetic at one dtype (the premises of the bounds).

    Attributes
    ----------
    impl : str
        ``"reference"`` or ``"kernels"`` (any other name follows the kernels).
    dtype : str
        Format of inputs and outputs.
    compute : str
        Format of the arithmetic (accumulation, statistics, softmax).
    exp : str
        Key of :data:`EXP_ACCURACY` for the softmax exponential.
    """

    impl: str
    dtype: str
    compute: str
    exp: str

    @property
    def u_io(self) -> float:
        """Unit round-off of the input/output format."""
        return UNIT_ROUNDOFF[self.dtype]

    @property
    def eta_io(self) -> float:
        """Underflow of one rounding to the input/output format."""
        return UNDERFLOW[self.dtype]

    @property
    def u_c(self) -> float:
        """Unit round-off of the arithmetic."""
        return UNIT_ROUNDOFF[self.compute]

    @property
    def eta_c(self) -> float:
        """Underflow of one product or quotient in the arithmetic."""
        return UNDERFLOW[self.compute]

    @property
    def reduced(self) -> bool:
        """Whether inputs are bfloat16/float16 (rounded below the compute format)."""
        return self.dtype in ("bfloat16", "float16")

    @property
    def u_hold(self) -> float:
        """Rounding of float64 parameters to the compute format (0 in float64)."""
        return 0.0 if self.compute == "float64" else self.u_c


def arithmetic(impl: str, dtype: str, compute: str | None = None) -> Arithmetic:
    """The :class:`Arithmetic` of implementation ``impl`` at ``dtype``."""
    comp = compute or ("float64" if dtype == "float64" else "float32")
    if impl == "reference":
        return Arithmetic("reference", "float64", "float64", "numpy")
    if comp == "float64":
        return Arithmetic(impl, dtype, comp, "sleef")
    return Arithmetic(
        impl, dtype, comp, "fexp_u20" if dtype in ("bfloat16", "float16") else "exp_u20"
    )


REFERENCE_ARITHMETIC = arithmetic("reference", "float64")


def _gm(n: int, u: float) -> float:
    """``gamma_n(u)``, 0 for ``n <= 0``; refuses ``n u >= 1`` (``precision.gamma``)."""
    return gamma(n, u) if n > 0 else 0.0


# --------------------------------------------------------------------------- scores
def scores_bound(ar: Arithmetic, q, k, G, dG=None, path: str = "sdpa") -> np.ndarray:
    """Entrywise bound of the computed scores against exact ``Q G K^T / sqrt(dk)``.

    ``[fp_head_scores]`` with ``X`` and the score product from ``fp_mixed_precision``.
    ``G`` is the metric the implementation uses (held), ``dG`` a bound of its distance
    to the exact metric (None: 0). Paths: ``reference`` (``(Q G) K^T / sqrt(dk)`` in
    float64); ``matmul`` (the kernels' ``scores``: ``Q G`` in the compute dtype, rounded
    to the input format when that is lower, ``@ K^T``, times ``dk^-1/2``); ``split``
    (``Q G = hi + lo``, ``hi K^T + lo K^T``, as the compensated kernels feed SDPA);
    ``sdpa`` (SDPA on ``fl(Q G)``); ``sdpa_split`` (SDPA on ``[hi, lo]``); ``sdpa_rounded``
    (SDPA on ``Q G`` rounded to the input format: ``collapsed``); ``sdpa_plain`` (SDPA on
    ``Q``, ``G = I`` never formed).
    """
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    dk = q.shape[-1]
    G = np.eye(dk) if G is None else np.asarray(G, np.float64)
    qa, ka, Ga = np.abs(q), np.abs(k), np.abs(G)
    QG = qa @ Ga
    P = QG @ ka.T
    krow = ka.sum(axis=-1)[None, :]
    q_dg_k = 0.0 if dG is None else (qa @ np.asarray(dG, np.float64)) @ ka.T
    tau = dk**-0.5
    u, eta = ar.u_c, ar.eta_c
    g = _gm(dk, u)
    h = (1 + _gm(dk - 1, u)) * dk * eta  # product underflows in one row of Q G
    h2 = (1 + _gm(dk - 1, u)) * dk * eta
    u_tau = (1 + 2 * UNIT_ROUNDOFF["float64"]) * (1 + u) - 1  # dk**-0.5 in double, then held
    u_s, eta_s = u, eta
    uio, etaio = ar.u_io, ar.eta_io
    if path == "reference":
        e1, h1, e2 = g, h, g
        u_tau = _gm(1, u)  # 1 / fl(sqrt(dk))
    elif path in ("sdpa", "matmul") and not (path == "matmul" and ar.reduced):
        e1, h1, e2 = g, h, g
    elif path in ("matmul", "sdpa_rounded"):
        e1, h1, e2 = (1 + uio) * (1 + g) - 1, (1 + uio) * h + etaio, g
    elif path in ("split", "sdpa_split"):
        e1, h1 = (1 + uio * uio) * (1 + g) - 1, (1 + uio * uio) * h + (1 + uio) * etaio
        # the 2 dk products of [hi, lo] with [k, k] are exact in float32; their sum is
        # within gamma_{2dk} of sum (|hi| + |lo|)|k|, bounded a priori through |Q G|
        hl = (1 + uio) ** 2 * ((1 + g) * P + h * krow) + (3 + uio) * etaio * krow
        e2 = 0.0
        h2 = gamma(2 * dk, u) * hl + (1 + _gm(2 * dk - 1, u)) * 2 * dk * eta
    elif path == "sdpa_plain":
        e1, h1, e2 = 0.0, 0.0, g
    else:
        raise ValueError(f"unknown scores path {path!r}")
    return EVAL_SLACK * fp_head_scores(
        P, tau, e1, e2, u_tau, u_s, h1k=h1 * krow, h2=h2, q_dg_k=q_dg_k, eta_s=eta_s
    )


# --------------------------------------------------------------------------- attention
def _rows(shape: tuple[int, int], causal: bool) -> np.ndarray:
    s_q, s_k = shape
    if not causal:
        return np.ones((s_q, s_k), dtype=bool)
    return np.arange(s_k)[None, :] <= (np.arange(s_q)[:, None] + (s_k - s_q))


def _row_params(ar: Arithmetic, x, delta, dx, allowed):
    """Per row: keys ``n``, ``sigma >= 1/S``, ``c_e`` (``fp_softmax_exp``)."""
    big = np.where(allowed, x, -np.inf).max(axis=-1)
    small = np.where(allowed, x, np.inf).min(axis=-1)
    dmax = np.where(allowed, delta, 0.0).max(axis=-1)
    spread = big - small + 2 * np.where(allowed, delta + dx, 0.0).max(axis=-1)
    if np.any(dmax >= 1):
        raise ValueError("a score's error bound reaches 1: no softmax bound")
    sigma = 1.0 / (1.0 - dmax)  # S >= exp(x_j* - m) >= 1 - delta (m = max computed score)
    u_exp, _ = EXP_ACCURACY[ar.exp]
    ce = fp_softmax_exp_factor(dmax, spread, ar.u_c, u_exp)
    return allowed.sum(axis=-1), sigma, ce


def _output_bounds(ar: Arithmetic, mass, n, ce, sigma, vsum) -> np.ndarray:
    """The output bound of every row (arrays: rows x columns, row quantities as (S, 1)).

    The reference: ``fp_head_output_normalized`` with ``fp_softmax`` weights. The kernels:
    the larger of ``fp_head_output`` (fused: ``N^ * (1 / D^)``) and the normalise-first
    order of older torch versions (weights rounded to the input format before ``p V``).
    """
    u, uio, etaio, eta = ar.u_c, ar.u_io, ar.eta_io, ar.eta_c
    _, eta_e = EXP_ACCURACY[ar.exp]
    low = ar.impl != "reference" and ar.reduced
    u_d = (1 + u) * (1 + uio) - 1 if low else u
    eta_d = (etaio + eta) if low else eta
    rel, ab = fp_softmax_coefficients(ce, n, u, u_d, sigma, eta_e, eta_d)
    bound = fp_head_output_normalized(
        mass, rel, n, u, 0.0 if low else u, uio if low else 0.0, vsum,
        eta_p=ab, eta_g_sum=n * eta, eta_y=etaio if low else 0.0,
    )  # fmt: skip
    if ar.impl == "reference":
        return bound
    if low:  # exponentials rounded to the input format for p V; exact float32 products
        e_p, eta_g, w, eta_y = (
            uio,
            etaio * vsum + n * eta,
            (1 + u) ** 2 * (1 + uio) - 1,
            etaio + eta,
        )
    else:
        e_p, eta_g, w, eta_y = u, n * eta, (1 + u) ** 2 - 1, eta
    fused = fp_head_output(mass, ce, n, u, e_p, w, sigma, vsum, eta_e, eta_g, eta_y)
    return np.maximum(bound, fused)


def attention_bound(
    ar: Arithmetic,
    q,
    k,
    v,
    G=None,
    dG=None,
    *,
    causal: bool = True,
    path: str | None = None,
    mass=None,
) -> np.ndarray:
    """Entrywise bound of the computed ``softmax(Q G K^T / sqrt(dk) + mask) V`` (S_q, dv).

    The scores' bound (:func:`scores_bound` on ``path``; default ``reference`` for the
    reference, ``sdpa_split`` for reduced kernels, else ``sdpa``) enters each row's
    exponentials through ``fp_softmax_exp``; the output is ``fp_head_output_normalized``
    (reference) or the larger of ``fp_head_output`` and ``fp_head_output_normalized``
    (kernels). ``mass`` bounds ``sum_j p_ij |v_jc|`` (default ``max_j |v_jc|`` over the
    row's keys, since the weights sum to 1).
    """
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    if path is None:
        path = "reference" if ar.impl == "reference" else ("sdpa_split" if ar.reduced else "sdpa")
    if ar.impl != "reference" and k.shape[0] > KV_BLOCK:
        raise ValueError(f"more than {KV_BLOCK} keys: torch rescales blocks (not covered)")
    dk = q.shape[-1]
    Gm = np.eye(dk) if G is None else np.asarray(G, np.float64)
    delta = scores_bound(ar, q, k, Gm, dG, path)
    x = (q @ Gm) @ k.T / math.sqrt(dk)
    dx = scores_bound(REFERENCE_ARITHMETIC, q, k, Gm, dG, "reference")
    allowed = _rows((q.shape[0], k.shape[0]), causal)
    n_row, sigma, ce = _row_params(ar, x, delta, dx, allowed)
    va = np.abs(v)
    if mass is None:
        mass = np.where(allowed[:, :, None], va[None, :, :], 0.0).max(axis=1)
    vsum = allowed.astype(np.float64) @ va
    col = (n_row[:, None], ce[:, None], sigma[:, None])
    return EVAL_SLACK * _output_bounds(ar, np.asarray(mass, np.float64), *col, vsum)


def softmax_bound(ar: Arithmetic, E, dE=None, *, causal: bool = False, p=None) -> np.ndarray:
    """Entrywise bound of the implementation's ``softmax(E)`` against the exact softmax.

    ``E`` as held (rounded), ``dE`` its distance to the exact scores (None: 0), ``p`` an
    entrywise upper bound of the exact weights (default 1). The reference computes
    ``fp_softmax``; the kernels run SDPA with ``Q = E``, ``K = V = I``, ``scale = 1``
    (exact scores): an attention output whose ``v`` is a unit vector, bounded as in
    :func:`attention_bound` (mass ``p_ik``, ``sum_j |v_j| = 1``).
    """
    E = np.asarray(E, np.float64)
    s_q, s_k = E.shape
    delta = np.zeros_like(E) if dE is None else np.asarray(dE, np.float64)
    allowed = _rows((s_q, s_k), causal)
    n_row, sigma, ce = _row_params(ar, E, delta, 0.0 * E, allowed)
    pw = np.ones_like(E) if p is None else np.asarray(p, np.float64)
    col = (n_row[:, None], ce[:, None], sigma[:, None])
    if ar.impl == "reference":
        u = ar.u_c
        n_c, ce_c, sigma_c = col
        eta_e = EXP_ACCURACY[ar.exp][1]
        rel, ab = fp_softmax_coefficients(ce_c, n_c, u, u, sigma_c, eta_e, ar.eta_c)
        bound = rel * pw + ab
    else:
        bound = _output_bounds(ar, pw, *col, np.ones_like(E))
    return EVAL_SLACK * np.where(allowed, bound, 0.0)


# --------------------------------------------------------------------------- pipeline stages
def linear_stage_bound(ar: Arithmetic, W, X, b=None, dX=None) -> np.ndarray:
    """Bound of ``W X + b`` computed on input ``X`` (off by ``dX``) vs the exact stage.

    ``[fp_mixed_precision]``: ``W``, ``b`` held in the compute format (relative
    ``u_hold``), ``X`` the implementation's own input, ``dk + 1`` leaves (the bias one of
    them) in any order at ``u_c``; ``fp_mixed_precision_propagated`` adds ``|W| dX``.
    """
    W, X = np.asarray(W, np.float64), np.asarray(X, np.float64)
    n = W.shape[-1] + (0 if b is None else 1)
    mass = np.abs(W) @ np.abs(X) + (0.0 if b is None else np.abs(np.asarray(b, np.float64)))
    bound = fp_mixed_precision(mass, n, ar.u_c, u_a=ar.u_hold, eta_sum=W.shape[-1] * ar.eta_c)
    if dX is not None:
        bound = bound + np.abs(W) @ np.asarray(dX, np.float64)
    return EVAL_SLACK * bound


def metric_tensor_bound(ar: Arithmetic, z, dz, eps: float) -> np.ndarray:
    """Bound of ``A_LM = iSwiGLU(Z) + eps`` computed from an input within ``dz`` of ``z``.

    ``[fp_elementwise]``: ``|d/dz z^2 sigma(z)| <= |z| (2 + |z|)`` (``0 < sigma < 1``), so
    ``L = M (2 + M)`` with ``M = |z| + dz`` on the segment; the routine (``exp``, ``1 + .``,
    quotient, two products, ``+ eps``) has relative error
    ``1 / ((1 - u_lib)^2 (1 - u)^5) - 1``; the held ``eps`` is off by ``u_hold eps``.
    """
    z, dz = np.abs(np.asarray(z, np.float64)), np.asarray(dz, np.float64)
    m = z + dz
    lip = m * (2 + m)
    u, ul = ar.u_c, LIB_ACCURACY[ar.compute]
    r = 1.0 / ((1 - ul) ** 2 * (1 - u) ** 5) - 1
    s = 1.0 / (1.0 + np.exp(-np.clip(z, -700, 700)))
    f = z * z * np.maximum(s, 1.0 - s) + eps  # >= |iSwiGLU(+-z)| + eps
    bound = fp_elementwise(lip, dz, r, f, _ISWIGLU_TAIL[ar.compute]) + ar.u_hold * eps
    return EVAL_SLACK * bound


def power_stage_bound(ar: Arithmetic, x, dx, P, P_held) -> np.ndarray:
    """Bound of ``A_P = A_LM ** P`` computed from an input within ``dx`` of ``x > 0``.

    ``[fp_elementwise]``: ``L = |P| max((x - dx)^(P-1), (x + dx)^(P-1))`` (``t^(P-1)`` is
    monotone), the routine's relative error ``(1 + u_lib) exp(|ln x^| |P^ - P|) - 1``
    (the held exponent ``P^``), absolute ``SMALLEST_NORMAL``-level underflow.
    """
    x, dx = np.asarray(x, np.float64), np.asarray(dx, np.float64)
    P, Ph = np.asarray(P, np.float64), np.asarray(P_held, np.float64)
    lo = x - dx
    if np.any(lo <= 0):
        raise ValueError("the power law's input interval reaches 0: no Lipschitz bound")
    lip = np.abs(P) * np.maximum(lo ** (P - 1), (x + dx) ** (P - 1))
    xh = np.maximum(lo, 1e-300)
    logx = np.maximum(np.abs(np.log(xh)), np.abs(np.log(x + dx)))
    r = (1 + LIB_ACCURACY[ar.compute]) * np.exp(logx * np.abs(Ph - P)) - 1
    bound = fp_elementwise(lip, dx, r, x**P, 2 * UNDERFLOW[ar.compute])
    return EVAL_SLACK * bound
