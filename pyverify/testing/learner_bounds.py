"""The metric learner's composed proved bound for an implementation seen as a black box.

The shipped implementations' learners are traced and bounded sub-stage by sub-stage with
their LayerNorm statistics certified (:mod:`pyverify.crosscheck.learner_bound`). An
implementation under ``pyverify check`` shows only its ``A``: its bound is the chain of
the stage statements along the exact trajectory (mpmath at
:data:`~pyverify.testing.fp.MP_DPS` digits), as
:func:`~pyverify.testing.decoder_bounds.decoder_bound` composes a decoder pass, under the
premises of :func:`~pyverify.testing.stage_bounds.stage_arith`
(its LayerNorm's statistics held to the two-pass routine's: an assumption about it).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from pyverify.crosscheck.learner_bound import (
    REFERENCE_ARITH,
    LearnerArith,
    from_rows,
    kernel_arith,
    reference_trace,
    refuse_off_cpu,
    substages,
)
from pyverify.fp import stages
from pyverify.fp.formulas import EVAL_SLACK, fp_mixed_precision
from pyverify.kernels.learner_trace import LearnerTrace, trace_learner
from pyverify.reference import mp_stages as mps
from pyverify.testing.impls import params_as_used
from pyverify.testing.stage_bounds import (
    StageArith,
    affine_mp,
    f64,
    layernorm_bound,
    mp_context,
    mpf_fraction,
    swiglu_bound,
)

__all__ = ["composed_learner_bound", "traced_learner"]


def _fracs(X: Any) -> list:
    return [[mpf_fraction(t) for t in row] for row in X]


def composed_learner_bound(
    q: Any, params: Any, sa: StageArith, dq: np.ndarray | None = None
) -> tuple[list, np.ndarray]:
    """``[fp_decoder_step]`` The exact ``A`` of steps 1-3 on ``q`` and its composed bound.

    The chain: ``D = Q^T Q`` (``[fp_mixed_precision]``, any order, on the computed
    queries ``Q^``; ``q`` the exact ones, float64 or mpf rows, ``Q^`` within ``dq`` of them
    or equal without ``dq``: ``Q^T Q^ - Q^T Q = Q^T E + E^T Q^``, each term
    ``fp_decoder_step_affine``'s propagation ``|E|^T |Q|``, ``|Q^| <= |Q| + dq``), the row
    LayerNorm (``[fp_layernorm]``), per residual unit its SwiGLU blocks (``[fp_swiglu]``)
    and the residual sum (``fp_decoder_step_residual``) then its LayerNorm; each stage's
    bound takes the previous one's as its input error, along the exact trajectory
    (``fp_decoder_step``'s composition). ``params``: as the implementation holds them.

    Raises
    ------
    OutsideModel
        A premise that fails (a row's variance not resolved, a hidden value beyond
        :data:`~pyverify.testing.stage_bounds.HIDDEN_LIMIT`): no bound.
    """
    ctx = mp_context()
    D = mps.density(q, ctx)
    qa = np.abs(f64(q) if isinstance(q, list) else np.asarray(q, np.float64))
    S = qa.shape[0]
    ea = np.zeros_like(qa) if dq is None else np.asarray(dq, np.float64)
    aq = qa + ea
    d = EVAL_SLACK * fp_mixed_precision(
        aq.T @ aq, S, float(sa.u), u_out=float(sa.u_out), eta_sum=S * float(sa.eta),
        eta_out=float(sa.eta_out),
    )  # fmt: skip
    if dq is not None:
        zero = np.zeros((qa.shape[1], qa.shape[1]))
        d = d + EVAL_SLACK * (stages.fp_decoder_step_affine(zero, ea.T, qa).T
                              + stages.fp_decoder_step_affine(zero, ea.T, aq))  # fmt: skip
    eps = params.ln_eps
    d = layernorm_bound(_fracs(D), d, params.ln0_gamma, params.ln0_beta, eps, sa, ctx)
    X = mps.layer_norm_rows(D, params.ln0_gamma, params.ln0_beta, eps, ctx)
    for unit in params.reslayers:
        Y, dY = X, d
        for blk in unit.dense:
            H1 = affine_mp(Y, blk.W1, blk.b1, ctx)
            H2 = affine_mp(Y, blk.W2, blk.b2, ctx)
            S1 = [[mps.silu(t, ctx) for t in row] for row in H1]
            dY = swiglu_bound(f64(H1), f64(H2), f64(S1), np.abs(f64(Y)), dY, blk, sa)
            Y = mps.swiglu(Y, blk, ctx)
        Z = [[a + b for a, b in zip(r, s, strict=True)] for r, s in zip(X, Y, strict=True)]
        dZ = 2 * d if not unit.dense else EVAL_SLACK * stages.fp_decoder_step_residual(
            d, dY, np.abs(f64(Z)), float(sa.u))  # fmt: skip
        d = layernorm_bound(_fracs(Z), dZ, unit.ln_gamma, unit.ln_beta, eps, sa, ctx)
        X = mps.layer_norm_rows(Z, unit.ln_gamma, unit.ln_beta, eps, ctx)
    return X, np.asarray(d, np.float64)


def traced_learner(
    impl: Any, q: np.ndarray, heads: list, A: np.ndarray
) -> tuple[LearnerTrace, list, LearnerArith] | None:
    """A shipped implementation's learner on ``q`` (B, H, S, dk), traced op for op.

    Returns the trace, the heads' parameters as the implementation holds them and the
    arithmetic of the sub-stage bounds with those parameters as the exact ones
    (``hold = 0``); None for an implementation that cannot be traced (one under
    ``pyverify check``).

    Raises
    ------
    BoundRefused
        For the kernels off the CPU.
    ValueError
        If the trace does not give ``A`` (B, H, dk, dk) bit for bit.
    """
    held = [params_as_used(impl, hp) for hp in heads]
    if impl.name == "reference":
        return reference_trace(q, held, A), held, REFERENCE_ARITH
    if impl.name != "kernels":
        return None
    refuse_off_cpu(impl.device, impl.dtype)
    tr = trace_learner(impl.t(q), impl.heads(heads))
    if not np.array_equal(from_rows(substages(tr)[1][-1], q.shape[0]), A):
        raise ValueError("the traced learner does not give the call's A bit for bit")
    comp = "float64" if impl.dtype == "float64" else "float32"
    return tr, held, dataclasses.replace(kernel_arith(comp), hold=0.0)
