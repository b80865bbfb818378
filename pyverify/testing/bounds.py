"""Proved error bounds of the PLGA stages, as the property tests use them.

Every bound here is a theorem of ``lean/Pldr/Float`` evaluated by :mod:`pyverify.fp.formulas`
for the implementation's arithmetic (:mod:`pyverify.fp.models`); each function names its
theorem ID. The oracle is exact arithmetic (mpmath or Fractions) on the *same* inputs the
implementation received, so only its rounding inside the stage counts. Nothing is
first-order and nothing is doubled: the statements are exact (``gamma_n = n u / (1 - n u)``,
products of ``(1 + u)`` factors).

The metric learner (row LayerNorm and residual SwiGLU units): :mod:`pyverify.fp.learner`
(``fp_layernorm_certified``, ``fp_swiglu``) on a traced learner,
:mod:`pyverify.crosscheck.learner_bound`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pyverify.fp.attention import softmax_bound
from pyverify.fp.exps import exp_accuracy
from pyverify.fp.formulas import (
    EVAL_SLACK,
    UNDERFLOW,
    fp_matmul,
    fp_softmax_coefficients,
    fp_softmax_exp_excess,
)
from pyverify.fp.models import (
    REFERENCE_ARITHMETIC,
    linear_stage_bound,
    power_stage_bound,
)
from pyverify.fp.models import (
    metric_tensor_bound as _metric_tensor_bound,
)
from pyverify.reference import mp as rmp
from pyverify.testing.fp import arith, mp_excess
from pyverify.testing.stage_bounds import mp_context

if TYPE_CHECKING:
    from pyverify.reference import PLGAParams
    from pyverify.testing.impls import Impl

__all__ = [
    "density_bound",
    "energy_bound",
    "formula_excess",
    "metric_tensor_bound",
    "power_law_bound",
    "rel_err",
    "softmax_rel_bound",
]


def rel_err(x: object, y: object) -> float:
    """Norm-wise relative error ``max|x - y| / max|y|`` in float64 (arrays or tensors)."""
    xa, ya = (
        np.asarray(t.detach().cpu().double()) if hasattr(t, "detach") else np.asarray(t, float)
        for t in (x, y)
    )
    return float(np.max(np.abs(xa - ya)) / np.max(np.abs(ya)))


def density_bound(impl: Impl, q) -> np.ndarray:
    """``[fp_matmul]`` ``D = Q^T Q`` from held queries: ``gamma_S |Q|^T |Q|`` (+ underflow).

    Times ``EVAL_SLACK``, the relative slack of its float64 evaluation (``[fp_summation]``).
    """
    ar = arith(impl)
    a = np.abs(np.asarray(q, dtype=np.float64))
    return EVAL_SLACK * fp_matmul(a.T, a, ar.u_c, UNDERFLOW[ar.compute])


def metric_tensor_bound(impl: Impl, A, params: PLGAParams) -> np.ndarray:
    """``[fp_mixed_precision]``, ``[fp_elementwise]``: ``A_LM`` from an exact ``A``.

    ``A_LM = iSwiGLU(W A + b) + eps``, the stage applied to the implementation's own ``A``.
    """
    ar = arith(impl)
    A = np.asarray(A, dtype=np.float64)
    dz = linear_stage_bound(ar, params.W, A, params.b)
    z = np.abs(params.W @ A + params.b) * EVAL_SLACK + dz
    return _metric_tensor_bound(ar, z, dz, params.metric_eps)


def power_law_bound(impl: Impl, A_LM, P) -> np.ndarray:
    """``[fp_elementwise]``: ``A_P = A_LM ** P`` from an exact ``A_LM`` (``P`` as held)."""
    A_LM = np.asarray(A_LM, dtype=np.float64)
    return power_stage_bound(arith(impl), A_LM, np.zeros_like(A_LM), P, P)


def energy_bound(impl: Impl, A_P, params: PLGAParams) -> np.ndarray:
    """``[fp_mixed_precision]``: ``G = a A_P + b_a`` from an exact ``A_P``."""
    return linear_stage_bound(arith(impl), params.a, A_P, params.b_a)


def formula_excess(impl: Impl, res: Any, params: PLGAParams) -> dict[str, float]:
    """Steps 4-6 on the implementation's own tensors, each against mpmath.

    The worst ``|got - exact| / bound`` (``> 1``: violated) of ``A_LM`` from its ``A``
    (:func:`metric_tensor_bound`), ``A_P`` from its ``A_LM`` (:func:`power_law_bound`) and
    ``G`` from its ``A_P`` (:func:`energy_bound`). ``res``: ``A, A_LM, A_P, G`` (float64
    arrays); ``params``: as the implementation holds them. The oracle: mpmath at
    :data:`~pyverify.testing.fp.MP_DPS` digits (what :func:`mp_excess` allows for).
    """
    ctx = mp_context()
    A, A_LM, A_P = (np.asarray(t, np.float64) for t in (res.A, res.A_LM, res.A_P))
    exact = {
        "A_LM": (rmp.metric_tensor(A, params.W, params.b, params.metric_eps, ctx),
                 metric_tensor_bound(impl, A, params)),
        "A_P": (rmp.power_law(A_LM, params.P, ctx), power_law_bound(impl, A_LM, params.P)),
        "G": (rmp.energy_curvature(A_P, params.a, params.b_a, ctx),
              energy_bound(impl, A_P, params)),
    }  # fmt: skip
    return {k: mp_excess(np.asarray(getattr(res, k), np.float64), e, b)
            for k, (e, b) in exact.items()}  # fmt: skip


def softmax_rel_bound(impl: Impl, E, causal: bool = False) -> float:
    """``[fp_softmax]`` / ``[fp_head_output]``: a relative bound of every computed weight.

    The implementation's softmax of the held scores ``E``
    (:func:`pyverify.fp.attention.softmax_bound`: the reference's order, or the kernels' fused
    SDPA) divided by the weight, at its worst over the allowed entries: the bound is
    ``rel p + abs``. The weights ``p`` are bracketed by a float64 softmax of ``E``
    (NumPy's ``exp``, a sum, a quotient: ``[fp_softmax]`` at ``u64``, ``p^ (1 - rel) - ab <=
    p <= p^ (1 + rel) + ab`` from ``|p^ - p| <= rel p + ab``); the tests keep every weight
    normal, so the lower end stays positive (checked).
    """
    E = np.asarray(E, dtype=np.float64)
    s_q, s_k = E.shape
    allowed = (
        np.arange(s_k)[None, :] <= np.arange(s_q)[:, None] + (s_k - s_q)
        if causal
        else np.ones(E.shape, dtype=bool)
    )
    z = np.where(allowed, E - np.where(allowed, E, -np.inf).max(axis=1, keepdims=True), -np.inf)
    p = np.exp(z)
    p = p / p.sum(axis=1, keepdims=True)
    ref = REFERENCE_ARITHMETIC
    u_exp, eta_e = exp_accuracy("numpy")
    spread = np.where(allowed, -z, 0.0).max(axis=1, keepdims=True)
    ce_m1 = fp_softmax_exp_excess(0.0, spread, ref.u_c, u_exp)
    n = allowed.sum(axis=1, keepdims=True)
    rel, ab = fp_softmax_coefficients(ce_m1, n, ref.u_c, ref.u_c, 1.0, eta_e, ref.eta_c)
    p_hi = EVAL_SLACK * (p * (1 + rel) + ab)
    p_lo = (p - rel * p - ab) / EVAL_SLACK
    if np.any(allowed & (p_lo <= 0)):
        raise ValueError("a weight too small for a relative bound (the tests keep them normal)")
    bound = softmax_bound(arith(impl), E, causal=causal, p=np.where(allowed, p_hi, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(allowed, bound / p_lo, 0.0)
    return float(ratio.max())
