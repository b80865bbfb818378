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
  (``collapsed``); attention by torch's SDPA, its backend fixed by the shapes and pinned
  by every check (:mod:`pyverify.fp.attention`: the fused CPU kernel, one key block of at
  most 512, or the MATH backend); the device keeps subnormal numbers (probed on every
  bound, :mod:`pyverify.fp.underflow`); the exponentials as certified or declared in
  :mod:`pyverify.fp.exps`.

Any other implementation is held to the kernels' premises (an assumption about it).
Inputs are float64 NumPy arrays of the values the implementation holds (already rounded
to its formats); every function returns an entrywise bound of ``|computed - exact|``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pyverify.fp.exps import DECLARED, LIB_ACCURACY
from pyverify.fp.formulas import (
    EVAL_SLACK,
    UNDERFLOW,
    fp_elementwise,
    fp_head_scores,
    fp_matmul,
    fp_mixed_precision,
    fp_summation_perturbed,
    inv1m,
    prod1m,
)
from pyverify.fp.underflow import require_gradual
from pyverify.precision import UNIT_ROUNDOFF, gamma

__all__ = [
    "EXP_ACCURACY",
    "LIB_ACCURACY",
    "Arithmetic",
    "arithmetic",
    "linear_stage_bound",
    "metric_tensor_bound",
    "power_stage_bound",
    "scores_bound",
    "scores_bound_perturbed",
]


#: Declared exponential accuracies (:mod:`pyverify.fp.exps`, which certifies where it can).
EXP_ACCURACY = DECLARED

#: ``[fp_elementwise]`` The exact iSwiGLU where the computed exponential leaves the range
#: (``|z| > 87``,
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
    device : str
        Where it computes: a torch device, or ``"numpy"`` (the reference).
    """

    impl: str
    dtype: str
    compute: str
    exp: str
    device: str = "cpu"

    def require_gradual(self) -> None:
        """Probe this arithmetic's device for subnormal numbers, as the bounds assume them.

        Every call (a process can change the mode); raises
        :class:`~pyverify.fp.underflow.FlushToZero` unless the device keeps them
        (:mod:`pyverify.fp.underflow`).
        """
        require_gradual(self.device, self.dtype, self.compute)

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


def _arithmetic(impl: str, dtype: str, compute: str | None, device: str) -> Arithmetic:
    comp = compute or ("float64" if dtype == "float64" else "float32")
    if impl == "reference":
        return Arithmetic("reference", "float64", "float64", "numpy", "numpy")
    if comp == "float64":
        return Arithmetic(impl, dtype, comp, "sleef", device)
    exp = "fexp_u20" if dtype in ("bfloat16", "float16") else "exp_u20"
    return Arithmetic(impl, dtype, comp, exp, device)


def arithmetic(
    impl: str, dtype: str, compute: str | None = None, device: str = "cpu"
) -> Arithmetic:
    """The :class:`Arithmetic` of implementation ``impl`` at ``dtype`` on ``device``.

    Probes the device for subnormal numbers first (:meth:`Arithmetic.require_gradual`):
    raises :class:`~pyverify.fp.underflow.FlushToZero` where the bounds do not hold.
    """
    ar = _arithmetic(impl, dtype, compute, device)
    ar.require_gradual()
    return ar


#: The float64 reference's arithmetic (not probed here: every bound function probes).
REFERENCE_ARITHMETIC = _arithmetic("reference", "float64", None, "numpy")


def _gm(n: int, u: float) -> float:
    """``gamma_n(u)``, 0 for ``n <= 0``; refuses ``n u >= 1`` (``precision.gamma``)."""
    return gamma(n, u) if n > 0 else 0.0


# --------------------------------------------------------------------------- scores
#: The score paths: how the scores are formed (:func:`scores_bound`).
SCORE_PATHS = ("reference", "matmul", "split", "sdpa", "sdpa_split", "sdpa_rounded", "sdpa_plain")


def _x_error(ar: Arithmetic, q, G, path: str):
    """``(|X|, dX)``: bounds of the exact ``|Q G|`` and of the error of the product's input.

    The input is ``fl(Q G)``, rounded to the input format, or split ``hi + lo``:
    ``[fp_matmul]`` for ``fl(Q G)`` (``dk`` terms at ``u_c``), one rounding to the input
    format (``[fp_elementwise]``, ``L = 1``: ``u_io |x| + eta_io``), or the split:
    ``|hi + lo - x| <= u_io |x - hi| + eta_io``.
    """
    dk = q.shape[-1]
    qa, Ga = np.abs(q), np.abs(G)
    QG = qa @ Ga
    absX = np.abs(q @ G) + gamma(dk, UNIT_ROUNDOFF["float64"]) * QG  # float64 evaluation
    if path == "sdpa_plain":
        return qa, np.zeros_like(q)
    u, eta, uio, etaio = ar.u_c, ar.eta_c, ar.u_io, ar.eta_io
    dX = fp_matmul(qa, Ga, u, eta)
    rounded = path == "sdpa_rounded" or (path == "matmul" and ar.reduced)
    if rounded:
        dX = dX + uio * (absX + dX) + etaio
    elif path in ("split", "sdpa_split"):
        dX = dX + uio * (uio * (absX + dX) + etaio) + etaio
    return absX, dX


def scores_bound(
    ar: Arithmetic, q, k, G, dG=None, path: str = "sdpa", backend: str = "flash"
) -> np.ndarray:
    """Entrywise bound of the computed scores against exact ``Q G K^T / sqrt(dk)``.

    ``G`` is the metric the implementation uses (held), ``dG`` a bound of its distance
    to the exact metric (None: 0). Paths (:data:`SCORE_PATHS`): ``reference``
    (``(Q G) K^T / sqrt(dk)`` in float64); ``matmul`` (the kernels' ``scores``: ``Q G`` in
    the compute dtype, rounded to the input format when that is lower, ``@ K^T``, times
    ``dk^-1/2``); ``split`` (``Q G = hi + lo``, ``hi K^T + lo K^T``); ``sdpa`` (SDPA on
    ``fl(Q G)``); ``sdpa_split`` (SDPA on ``[hi, lo]`` against ``[K, K]``: the compensated
    kernels); ``sdpa_rounded`` (SDPA on ``Q G`` rounded to the input format:
    ``collapsed``); ``sdpa_plain`` (SDPA on ``Q``, ``G = I`` never formed). ``backend``:
    how SDPA forms its scores: ``flash`` (torch's fused CPU kernel: ``fl(fl(X K^T) fl(tau))``)
    or ``math`` (its MATH backend: ``fl(X fl(sqrt tau))`` and ``fl(K fl(sqrt tau))``, then
    their product, in float32 for every dtype below it).

    The bound is the smaller of two proved ones: ``[fp_head_scores]`` (``X ~ Q G`` and the
    score product from ``fp_mixed_precision``, the scale and its rounding), and the chain
    ``[fp_matmul]`` (``X``) -> ``[fp_mixed_precision]`` propagated (the product on the
    computed ``X``, ``+ |K| dX``) -> ``[fp_elementwise]`` (the scale: ``L = tau``), which
    charges the second product ``|X| |K|`` instead of ``|Q| |G| |K|`` (``|X| = |Q G|``,
    evaluated in float64 with its own error added).
    """
    ar.require_gradual()
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    dk = q.shape[-1]
    G = np.eye(dk) if G is None else np.asarray(G, np.float64)
    if path not in SCORE_PATHS:
        raise ValueError(f"unknown scores path {path!r}")
    sdpa = path.startswith("sdpa")
    if backend == "math" and sdpa:
        return _math_scores(ar, q, k, G, dG, path)
    a = _scores_theorem(ar, q, k, G, dG, path)
    return np.minimum(a, _scores_chain(ar, q, k, G, dG, path))


def _scale(ar: Arithmetic, path: str) -> tuple[float, float, float]:
    """``(u_tau, u_s, eta_s)``: the held scale's and the scaling's roundings.

    ``[fp_head_scores]``'s ``u_tau``, ``u_s``, ``eta_s``.
    """
    u, eta = ar.u_c, ar.eta_c
    if path == "reference":
        return _gm(1, u), u, eta  # / fl(sqrt(dk))
    return prod1m(2 * UNIT_ROUNDOFF["float64"], u), u, eta  # dk**-0.5 in double, held


def _scores_theorem(ar: Arithmetic, q, k, G, dG, path: str, dq=None, dk_=None) -> np.ndarray:
    """``[fp_head_scores]`` as stated (``|Q||G^||K|`` on both products).

    ``dq``, ``dk_`` (paths ``reference``, ``sdpa`` not reduced): the implementation's queries
    and keys are within them of ``q``, ``k``: ``h1 += (1 + gamma_dk) dQ |G|`` (``fp_matmul``
    on ``Q^``, ``|Q^| <= |Q| + dQ``) and ``h2 += (1 + gamma_dk) X_up dK^T`` with
    ``X_up = (1 + gamma_dk)|Q||G| + h1 >= |X|`` (``|K^| <= |K| + dK``).
    """
    dk = q.shape[-1]
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
    u_tau, u_s, eta_s = _scale(ar, path)
    uio, etaio = ar.u_io, ar.eta_io
    whole = path in ("reference", "sdpa") or (path == "matmul" and not ar.reduced)
    if dq is not None and (not whole or ar.reduced):
        raise ValueError(f"no perturbed scores bound for path {path!r} at {ar.dtype}")
    if whole:
        e1, h1, e2 = g, h, g
        if dq is not None:  # computed inputs: h1 per entry of X
            h1 = h + (1 + g) * (np.asarray(dq, np.float64) @ Ga)
            h2 = h2 + (1 + g) * (((1 + g) * QG + h1) @ np.asarray(dk_, np.float64).T)
    elif path in ("matmul", "sdpa_rounded"):
        e1, h1, e2 = prod1m(uio, g), (1 + uio) * h + etaio, g
    elif path in ("split", "sdpa_split"):
        e1, h1 = prod1m(uio * uio, g), (1 + uio * uio) * h + (1 + uio) * etaio
        # the 2 dk products of [hi, lo] with [k, k]; their sum is within gamma_{2dk} of
        # sum (|hi| + |lo|)|k|, bounded a priori through |Q G|
        hl = (1 + uio) ** 2 * ((1 + g) * P + h * krow) + (3 + uio) * etaio * krow
        e2 = 0.0
        h2 = gamma(2 * dk, u) * hl + (1 + _gm(2 * dk - 1, u)) * 2 * dk * eta
    else:  # sdpa_plain
        e1, h1, e2 = 0.0, 0.0, g
    h1k = h1 @ ka.T if np.ndim(h1) == 2 else h1 * krow
    return EVAL_SLACK * fp_head_scores(
        P, tau, e1, e2, u_tau, u_s, h1k=h1k, h2=h2, q_dg_k=q_dg_k, eta_s=eta_s
    )


def scores_bound_perturbed(ar: Arithmetic, q, k, G, dq, dk_, path: str) -> np.ndarray:
    """``[fp_head_scores]`` The computed scores from computed queries and keys.

    ``q``, ``k``: the exact queries and keys (float64); the implementation's are within
    ``dq``, ``dk_`` of them; ``G`` as held (exact). :func:`_scores_theorem` with the inputs'
    errors in the statement's ``h1`` and ``h2``: paths ``reference``, ``sdpa`` and
    ``matmul`` at a format that is not reduced (elsewhere it raises ``ValueError``).
    """
    ar.require_gradual()
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    return _scores_theorem(ar, q, k, np.asarray(G, np.float64), None, path, dq, dk_)


def _product(ar: Arithmetic, absX, dX, k, path: str):
    """``(|P|, dP)``: the unscaled score product on the computed ``X`` and its error.

    ``[fp_mixed_precision]`` with ``+ |K| dX`` (``fp_mixed_precision_propagated``).
    """
    dk = k.shape[-1]
    ka = np.abs(k)
    u, eta, uio, etaio = ar.u_c, ar.eta_c, ar.u_io, ar.eta_io
    Xc = absX + dX  # |computed X|
    if path in ("split", "sdpa_split"):  # sum over the 2 dk leaves hi k and lo k
        mass = ((1 + uio) ** 2 * Xc + (3 + uio) * etaio) @ ka.T
        n = 2 * dk
    else:
        mass, n = Xc @ ka.T, dk
    dP = fp_mixed_precision(mass, n, u, eta_sum=n * eta) + dX @ ka.T
    return absX @ ka.T, dP


def _scores_chain(ar: Arithmetic, q, k, G, dG, path: str) -> np.ndarray:
    """``[fp_head_scores]`` by a chain of theorems.

    ``[fp_matmul]`` -> ``[fp_mixed_precision]`` (propagated) -> ``[fp_elementwise]`` (the
    scale ``tau = dk^-1/2``).
    """
    dk = q.shape[-1]
    tau = dk**-0.5
    absX, dX = _x_error(ar, q, G, path)
    absP, dP = _product(ar, absX, dX, k, path)
    u_tau, u_s, eta_s = _scale(ar, path)
    r = prod1m(u_tau, u_s)
    bound = fp_elementwise(tau, dP, r, tau * absP, eta_s)
    if dG is not None:
        bound = bound + tau * (np.abs(q) @ np.asarray(dG, np.float64)) @ np.abs(k).T
    return EVAL_SLACK * bound


def _math_scores(ar: Arithmetic, q, k, G, dG, path: str) -> np.ndarray:
    """Scores of torch's MATH SDPA backend on the computed ``X`` (``[fp_summation]``).

    Leaves ``fl(fl(x_i s) fl(k_i s))``, ``s = fl32(sqrt(tau))`` (``sqrt`` in double, then
    held: ``s^2 = tau (1 + d0)^2``), summed in any order: each leaf within
    ``e M_i + eta_i`` of ``x_i k_i s^2`` with ``M_i = s^2 |x_i k_i|``, ``e = (1 + u)^3 - 1``
    and ``eta_i = (1 + u)(eta s (1 + u)(|x_i| + |k_i|) + eta^2) + eta`` (the two scalings and
    the product may underflow), ``fp_summation_perturbed``; then ``s^2`` against ``tau``
    (``((1 + d0)^2 - 1) tau sum |x k|``) and the propagated ``tau |K| dX``.
    """
    dk = q.shape[-1]
    tau = dk**-0.5
    u, eta = ar.u_c, ar.eta_c
    absX, dX = _x_error(ar, q, G, path)
    Xc = absX + dX
    ka = np.abs(k)
    if path == "sdpa_split":  # the 2 dk leaves hi k and lo k
        Xc = (1 + ar.u_io) ** 2 * Xc + (3 + ar.u_io) * ar.eta_io
        krow, n = 2 * ka.sum(axis=-1)[None, :], 2 * dk
    else:
        krow, n = ka.sum(axis=-1)[None, :], dk
    d0 = prod1m(2 * UNIT_ROUNDOFF["float64"], u)  # fl32(sqrt(tau)), sqrt in double
    s_hi = math.sqrt(tau) * (1 + d0)
    mass = s_hi**2 * (Xc @ ka.T)
    eta_sum = (1 + u) * (eta * s_hi * (1 + u) * (Xc.sum(axis=-1)[:, None] + krow) + n * eta**2)
    bound = fp_summation_perturbed(mass, eta_sum + n * eta, n, u, prod1m(u, u, u))
    bound = bound + prod1m(d0, d0) * tau * (Xc @ ka.T) + tau * (dX @ ka.T)
    if dG is not None:
        bound = bound + tau * (np.abs(q) @ np.asarray(dG, np.float64)) @ ka.T
    return EVAL_SLACK * bound


# --------------------------------------------------------------------------- pipeline stages
def linear_stage_bound(ar: Arithmetic, W, X, b=None, dX=None) -> np.ndarray:
    """Bound of ``W X + b`` computed on input ``X`` (off by ``dX``) vs the exact stage.

    ``[fp_mixed_precision]``: ``W``, ``b`` held in the compute format (relative
    ``u_hold``), ``X`` the implementation's own input, ``dk + 1`` leaves (the bias one of
    them) in any order at ``u_c``; ``fp_mixed_precision_propagated`` adds ``|W| dX``.
    """
    ar.require_gradual()
    W, X = np.asarray(W, np.float64), np.asarray(X, np.float64)
    n = W.shape[-1] + (0 if b is None else 1)
    mass = np.abs(W) @ np.abs(X) + (0.0 if b is None else np.abs(np.asarray(b, np.float64)))
    bound = fp_mixed_precision(mass, n, ar.u_c, u_a=ar.u_hold, eta_sum=W.shape[-1] * ar.eta_c)
    if dX is not None:
        bound = bound + np.abs(W) @ np.asarray(dX, np.float64)
    return EVAL_SLACK * bound


def metric_tensor_bound(ar: Arithmetic, z, dz, eps: float) -> np.ndarray:
    """Bound of ``A_LM = iSwiGLU(Z) + eps`` computed from an input within ``dz`` of ``z``.

    ``[fp_elementwise]``: ``d/dz z^2 sigma(z) = 2 z sigma + z^2 sigma (1 - sigma)``, so
    ``|.| <= |z| (2 + |z| / 4)`` (``0 < sigma < 1``, ``sigma (1 - sigma) <= 1/4``) and
    ``L = M (2 + M / 4)`` with ``M = |z| + dz`` on the segment; the routine (``exp``, ``1 + .``,
    quotient, two products, ``+ eps``) has relative error
    ``1 / ((1 - u_lib)^2 (1 - u)^5) - 1``; the held ``eps`` is off by ``u_hold eps``.
    """
    ar.require_gradual()
    z, dz = np.abs(np.asarray(z, np.float64)), np.asarray(dz, np.float64)
    m = z + dz
    lip = m * (2 + m / 4)
    u, ul = ar.u_c, LIB_ACCURACY[ar.compute]
    r = inv1m(ul, ul, u, u, u, u, u)
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
    ar.require_gradual()
    x, dx = np.asarray(x, np.float64), np.asarray(dx, np.float64)
    P, Ph = np.asarray(P, np.float64), np.asarray(P_held, np.float64)
    lo = x - dx
    if np.any(lo <= 0):
        raise ValueError("the power law's input interval reaches 0: no Lipschitz bound")
    lip = np.abs(P) * np.maximum(lo ** (P - 1), (x + dx) ** (P - 1))
    xh = np.maximum(lo, 1e-300)
    logx = np.maximum(np.abs(np.log(xh)), np.abs(np.log(x + dx)))
    r = np.expm1(np.log1p(LIB_ACCURACY[ar.compute]) + logx * np.abs(Ph - P))
    bound = fp_elementwise(lip, dx, r, x**P, 2 * UNDERFLOW[ar.compute])
    return EVAL_SLACK * bound
