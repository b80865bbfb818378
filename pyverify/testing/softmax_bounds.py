"""Proved error bounds of softmax rows, as the softmax property tests compose them.

A computed row is held to ``[fp_softmax]`` (the reference's normalise-first order) or
``[fp_head_output]`` (the kernels' fused SDPA) through
:func:`pyverify.fp.attention.softmax_bound`; the tests' own float64 oracle (NumPy's
``exp(E - max)``, a row sum, a quotient: the reference's order, any mask) through
:func:`spec_coefficients`, ``[fp_softmax]`` at ``u64`` with NumPy's declared ``exp``
(:data:`~pyverify.fp.exps.DECLARED` ``["numpy"]``). Scores off by ``d`` move each exact
weight by a factor within ``exp(+-2 d)`` (``[score_perturbation]``, :data:`WEIGHT_SPAN`).
What a test derives from computed weights, a row sum or a log-ratio, adds the float64
roundings of that derivation (:func:`row_sum_bound`, :func:`log_ratio_bound`); NumPy's
``log`` is declared (:data:`LOG_ACCURACY`) and checked against mpmath
(:func:`log_excess`). The base-2 rows (scores ``x ln 2``) are held to the exact base-2
softmax through the held scores' measured distance to ``x ln 2`` (:func:`base2_weights`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pyverify.fp.attention import softmax_bound
from pyverify.fp.exps import DECLARED, LIB_ACCURACY
from pyverify.fp.formulas import (
    EVAL_SLACK,
    UNDERFLOW,
    fp_elementwise,
    fp_softmax_coefficients,
    fp_softmax_exp_excess,
    fp_summation,
    prod1m,
)
from pyverify.precision import UNIT_ROUNDOFF
from pyverify.testing.bounds import softmax_rel_bound
from pyverify.testing.fp import arith, mp_excess
from pyverify.testing.stage_bounds import mp_context

__all__ = [
    "LOG_ACCURACY",
    "U64",
    "WEIGHT_SPAN",
    "base2_weights",
    "exact_weight_range",
    "log_excess",
    "log_ratio_bound",
    "log_ratios",
    "reference_error",
    "row_sum_bound",
    "softmax_error",
    "spec_coefficients",
]

#: ``[fp_ieee_rounding]`` float64's unit round-off: the oracles' and the tests' arithmetic.
U64 = UNIT_ROUNDOFF["float64"]
#: ``[fp_elementwise]`` Relative error of NumPy's float64 ``log`` (the routine's ``r``):
#: declared 2 ulp as :data:`~pyverify.fp.exps.LIB_ACCURACY`'s ``exp`` and ``pow`` (glibc's
#: ``log`` is below 1 ulp); checked against mpmath on the tests' inputs (:func:`log_excess`).
LOG_ACCURACY = LIB_ACCURACY["float64"]
#: ``[score_perturbation]`` the statement's weight factor ``exp(+-2 eta)``: scores moved by
#: at most ``eta`` move each softmax weight by a factor within it.
WEIGHT_SPAN = 2


def spec_coefficients(
    E: ArrayLike, allowed: ArrayLike, dE: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``[fp_softmax]`` The float64 masked softmax's error: ``|p^_j - p_j| <= rel p_j + ab``.

    NumPy's order, any mask (the reference's ``masked_softmax``, the tests' spec written
    out): ``fl(E - m)`` with ``m`` the row's largest allowed held score, ``exp`` within
    ``DECLARED["numpy"]``, the row sum in any order, one quotient, all at ``u64``. ``E``
    is held exactly, within ``dE`` (None: 0) of the exact scores ``x``. Per row,
    ``fp_softmax_exp``'s ``delta = max dE``, ``|E_j - m| <= max - min``; the maximum's
    ``exp(x - m) >= exp(-delta) >= 1 - delta``, so ``sigma = 1/(1 - delta)``; ``n`` the
    allowed count. The formulas refuse ``delta + u spread >= 1`` and ``beta >= 1``.
    Returns ``rel`` and ``ab`` as (S_q, 1) columns.
    """
    E = np.asarray(E, np.float64)
    delta = np.zeros_like(E) if dE is None else np.asarray(dE, np.float64)
    dmax = np.where(allowed, delta, 0.0).max(axis=-1, keepdims=True)
    spread = (np.where(allowed, E, -np.inf).max(axis=-1, keepdims=True)
              - np.where(allowed, E, np.inf).min(axis=-1, keepdims=True))  # fmt: skip
    n = np.asarray(allowed).sum(axis=-1, keepdims=True)
    u_exp, eta_e = DECLARED["numpy"]
    ce_m1 = fp_softmax_exp_excess(dmax, spread, U64, u_exp)
    sigma = 1.0 / (1.0 - dmax)
    rel, ab = fp_softmax_coefficients(ce_m1, n, U64, U64, sigma, eta_e, UNDERFLOW["float64"])
    return EVAL_SLACK * rel, EVAL_SLACK * ab


def exact_weight_range(
    p_hat: ArrayLike, rel: ArrayLike, ab: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """``[fp_softmax]`` The exact weights ``p`` around computed ones ``p^``.

    ``|p^ - p| <= rel p + ab`` (``rel < 1``) puts ``p`` in
    ``[(p^ - ab)/(1 + rel), (p^ + ab)/(1 - rel)]``, widened by the evaluation's slack.
    """
    p_hat = np.asarray(p_hat, np.float64)
    lo = (p_hat - ab) / (1 + rel) / EVAL_SLACK
    hi = (p_hat + ab) / (1 - rel) * EVAL_SLACK
    return np.maximum(lo, 0.0), hi


def _exact_upper(E: np.ndarray, allowed: ArrayLike, dE: ArrayLike | None) -> np.ndarray:
    """An upper bound of the exact weights: the float64 spec of ``E``, then ``exp(2 d)``.

    The spec's softmax and mask are written out here, not taken from the reference
    (``numpy_head.masked_softmax``, ``causal_mask``), which is one of the subjects these
    bounds hold: a bound must not share a bug with what it checks.
    """
    Em = np.where(allowed, E, -np.inf)
    w = np.exp(Em - Em.max(axis=-1, keepdims=True))
    p = w / w.sum(axis=-1, keepdims=True)
    _, hi = exact_weight_range(p, *spec_coefficients(E, allowed))
    if dE is None:
        return hi
    d = float(np.max(np.where(allowed, dE, 0.0)))
    return hi * math.exp(WEIGHT_SPAN * d) * EVAL_SLACK


def _rows(shape: tuple[int, int], causal: bool) -> np.ndarray:
    s_q, s_k = shape
    if not causal:
        return np.ones(shape, dtype=bool)
    return np.arange(s_k)[None, :] <= np.arange(s_q)[:, None] + (s_k - s_q)


def softmax_error(impl: Any, E: ArrayLike, causal: bool, dE: ArrayLike | None = None) -> np.ndarray:
    """``[fp_softmax]`` / ``[fp_head_output]`` Entrywise bound of ``impl.softmax(E)``.

    Against the exact softmax of scores within ``dE`` (None: 0) of the held ``E``:
    :func:`pyverify.fp.attention.softmax_bound` for the implementation's arithmetic, with
    the exact weights bounded above by the float64 spec softmax of ``E``
    (:func:`spec_coefficients`) times ``exp(2 max dE)`` (``[score_perturbation]``).
    """
    E = np.asarray(E, np.float64)
    p_hi = _exact_upper(E, _rows(E.shape, causal), dE)
    return softmax_bound(arith(impl), E, dE, causal=causal, p=p_hi)


def reference_error(E: ArrayLike, allowed: ArrayLike, dE: ArrayLike | None = None) -> np.ndarray:
    """``[fp_softmax]`` Entrywise bound of the float64 masked softmax (any mask) of ``E``.

    The reference's ``masked_softmax`` and the tests' spec written out compute it in
    NumPy's order: :func:`spec_coefficients` at the exact weights' upper bound.
    """
    E = np.asarray(E, np.float64)
    rel, ab = spec_coefficients(E, allowed, dE)
    return np.where(allowed, rel * _exact_upper(E, allowed, dE) + ab, 0.0)


def row_sum_bound(p_hat: ArrayLike, err: ArrayLike) -> np.ndarray:
    """``[fp_summation]`` Bound of ``|fl(sum_j p^_j) - 1|`` per row (NumPy, float64).

    ``p^_j`` within ``err_j`` of an exact softmax row (which sums to 1): ``sum err``, plus
    the float64 sum in any order, ``gamma_{n-1}(u64) sum |p^|`` over the row's ``n``
    entries; ``fl(s - 1)`` is exact for ``s`` in ``[1/2, 2]`` (Sterbenz; checked).
    """
    p_hat = np.asarray(p_hat, np.float64)
    s = p_hat.sum(axis=-1)
    if np.any((s < 0.5) | (s > 2)):
        raise ValueError("a row sum outside [1/2, 2]: fl(s - 1) is not exact")
    n = p_hat.shape[-1]
    return EVAL_SLACK * (np.sum(err, axis=-1) + fp_summation(np.abs(p_hat).sum(axis=-1), n, U64))


def log_ratios(p_hat: ArrayLike) -> np.ndarray:
    """The computed log-ratios ``fl(fl(log p^_i) - fl(log p^_j))`` of a row's weights."""
    L = np.log(np.asarray(p_hat, np.float64))
    return L[:, None] - L[None, :]


def log_ratio_bound(
    p_hat: ArrayLike, err: ArrayLike, scores: ArrayLike | None = None
) -> np.ndarray:
    """``[fp_elementwise]``, ``[fp_summation]`` Bound of every :func:`log_ratios` entry's error.

    Against ``log p_i - log p_j`` of the exact weights ``p`` (in ``(0, 1]``), ``p^_i``
    within ``err_i`` of ``p_i``. Per entry ``fp_elementwise``: ``log`` is
    ``1/(p^_i - err_i)``-Lipschitz between ``p_i`` and ``p^_i`` (premise
    ``p^_i > err_i``, checked), ``|log p_i| <= -log(p^_i - err_i)``, NumPy's ``log``
    within :data:`LOG_ACCURACY`; then the difference of the two computed logs,
    ``fp_summation`` of 2 terms: ``gamma_1(u64)(|L_i| + |L_j|)``. With ``scores`` (held
    exactly; ``p`` their softmax, so ``log p_i - log p_j = s_i - s_j``): against the float64
    ``fl(s_i - s_j)`` instead, adding ``gamma_1(u64)(|s_i| + |s_j|)``.
    """
    p_hat, err = np.asarray(p_hat, np.float64), np.asarray(err, np.float64)
    lo = p_hat - err
    if np.any(lo <= 0):
        raise ValueError("a weight's error bound reaches the weight: no log-ratio bound")
    e = fp_elementwise(1 / lo, err, LOG_ACCURACY, -np.log(lo))
    La = np.abs(np.log(p_hat))
    bound = e[:, None] + e[None, :] + fp_summation(La[:, None] + La[None, :], 2, U64)
    if scores is not None:
        sa = np.abs(np.asarray(scores, np.float64))
        bound = bound + fp_summation(sa[:, None] + sa[None, :], 2, U64)
    return EVAL_SLACK * bound


def log_excess(x: ArrayLike) -> float:
    """The premise of :func:`log_ratio_bound`: NumPy's ``log`` on ``x`` against mpmath.

    ``max |log^(x) - log x| / (LOG_ACCURACY |log x|)`` (``<= 1``: the declared accuracy
    holds on these inputs), through :func:`pyverify.testing.fp.mp_excess`.
    """
    x = np.asarray(x, np.float64).reshape(1, -1)
    ctx = mp_context()
    exact = [[ctx.log(ctx.mpf(float(v))) for v in x[0]]]
    bound = LOG_ACCURACY * np.array([[abs(float(e)) for e in exact[0]]])
    return mp_excess(np.log(x), exact, bound)


def base2_weights(impl: Any, x: list[int]) -> tuple[np.ndarray, float]:
    """``[score_perturbation]``, ``[fp_softmax]`` A base-2 softmax row and its relative bound.

    ``impl.softmax`` of the integer scores ``x`` times ``ln 2`` (``x * math.log(2)``, held in
    the dtype), and a relative bound of each weight against the exact base-2 softmax of
    ``x``. The held scores' distance ``d`` to the exact ``x ln 2`` is measured in mpmath
    (:data:`~pyverify.testing.fp.MP_DPS` digits, rounded up a float64 step); scores off by
    ``d`` move the exact weights by a factor within ``exp(2 d)`` (``score_perturbation``),
    and the computed weights are within :func:`pyverify.testing.bounds.softmax_rel_bound`
    of those of the held scores: ``(1 + rel) exp(2 d) - 1``.
    """
    E = impl.round(np.asarray(x, np.float64)[None, :] * math.log(2))
    ctx = mp_context()
    ln2 = ctx.log(2)
    dist = max(abs(ctx.mpf(float(e)) - int(xi) * ln2) for e, xi in zip(E[0], x, strict=True))
    d = math.nextafter(float(dist), math.inf)
    rel = softmax_rel_bound(impl, E)
    return impl.softmax(E)[0], float(prod1m(rel, math.expm1(WEIGHT_SPAN * d)))
