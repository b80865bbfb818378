"""The deductive pipeline of batched multi-head PLGA: ``D``, the metric learner, ``G``.

The stages 1-6 of ``docs/plga-spec.md`` on (B, H, S, dk) queries:

1. ``D = Q^T Q`` per (batch, head) (:func:`density_operator`);
2.-3. ``A = Phi(LayerNorm_rows(D))`` (:func:`metric_learner`);
4.-6. ``A_LM = iSwiGLU(W A + b) + eps``, ``A_P = A_LM ** P``, ``G = a A_P + b_a``
   (:func:`energy_curvature`); all of them: :func:`compute_g`.

Vectorisation: the learner acts on rows, so the (batch, head) matrices are laid
out as (H, dk * B, dk). The shared learner (``pldr_model_v510``'s form) runs each
dense layer as ONE ``addmm`` over all H * dk * B rows, per-head learners as one
``baddbmm`` over heads; no weight tiling, no loop over heads. ``W A`` and
``a A_P`` are one ``bmm`` each on (H, dk, B * dk). float32, bfloat16 and float16
inputs compute every stage in float32; the deductive tensors are returned in the
compute dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.errors import InputTypeError, InputValueError
from pyverify.kernels.params import HeadParams
from pyverify.kernels.validation import (
    NonFiniteStageError,
    check_finite,
    check_tensor,
    compute_dtype,
    explain_nonfinite,
)

__all__ = [
    "Deductive",
    "check_params",
    "compute_g",
    "density_operator",
    "energy_curvature",
    "metric_learner",
    "metric_learner_rows",
]


@dataclass(frozen=True)
class Deductive:
    """Deductive outputs of PLGA, each (B, H, dk, dk) in the compute dtype.

    Attributes
    ----------
    A : torch.Tensor or None
        Metric-learner output (None when ``G`` was supplied).
    A_LM : torch.Tensor or None
        Metric tensor ``iSwiGLU(W A + b) + eps`` (None when ``G`` was supplied).
    A_P : torch.Tensor or None
        Potential tensor ``A_LM ** P`` (None when ``G`` was supplied).
    G : torch.Tensor
        Energy-curvature operator (broadcastable to (B, H, dk, dk)).
    """

    A: torch.Tensor | None
    A_LM: torch.Tensor | None
    A_P: torch.Tensor | None
    G: torch.Tensor


def _to_rows(X: torch.Tensor) -> torch.Tensor:
    """(B, H, dk, dk) -> contiguous (H, dk, B, dk) "row layout"."""
    return X.permute(1, 2, 0, 3).contiguous()


def _from_rows(X: torch.Tensor) -> torch.Tensor:
    """(H, dk, B, dk) row layout -> (B, H, dk, dk) view."""
    return X.permute(2, 0, 1, 3)


def _layer_norm_rows(X: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float):
    """LayerNorm over the last axis of (H, N, dk) with per-head affine (H, dk)."""
    Y = F.layer_norm(X, (X.shape[-1],), eps=eps)
    return torch.addcmul(beta[:, None, :], Y, gamma[:, None, :])


def density_operator(q: torch.Tensor) -> torch.Tensor:
    """Return ``D = Q^T Q`` for each (batch, head), in the compute dtype.

    Parameters
    ----------
    q : torch.Tensor
        (B, H, S, dk) rotated queries (all S rows enter: D is global).

    Returns
    -------
    torch.Tensor
        (B, H, dk, dk), float64 for float64 input, else float32.
    """
    check_tensor(q, "q", shape=("B", "H", "S", "dk"))
    qc = q.to(compute_dtype(q.dtype))
    return torch.matmul(qc.transpose(-1, -2), qc)


def metric_learner_rows(X: torch.Tensor, p: HeadParams) -> torch.Tensor:
    """Run steps 2-3 on row layout (H, N, dk)."""
    if p.shared_learner:
        H, N, dk = X.shape
        return _learner(X.reshape(H * N, dk), p, _mm, _mm_).view(H, N, dk)
    return _learner(X, p, _bmm, _bmm_)


def _mm(b: torch.Tensor, x: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    return torch.addmm(b, x, W)


def _mm_(acc: torch.Tensor, x: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    return acc.addmm_(x, W)


def _bmm(b: torch.Tensor, x: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    return torch.baddbmm(b.unsqueeze(-2), x, W)


def _bmm_(acc: torch.Tensor, x: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    return acc.baddbmm_(x, W)


def _learner(X: torch.Tensor, p: HeadParams, mm, mm_) -> torch.Tensor:
    """Run steps 2-3 on rows: (N, dk) shared learner, or (H, N, dk) per-head weights.

    ``mm`` is one GEMM per weight over all rows (shared) or one batched GEMM over the
    heads (per head); ``mm_`` the same, accumulating into its first argument. Per
    SwiGLU block, SiLU and the gate product run in place on the products' outputs (a
    fresh (rows, a_dff) tensor per operation cost more than the operation); a unit's
    residual is the accumulator of its last ``W3`` product (``X + b3``, then
    ``+= g W3``), so ``f(X) + X`` costs no pass of its own. ``W1`` and ``W2`` stay two
    products: one product on them side by side, its halves then strided, measured
    slower (1.34 against 1.21 of the bare GEMMs' time, one thread, B = 1). LayerNorm
    over the last axis, its affine per head where the learner is.
    """
    eps = p.ln_eps
    X = _layer_norm_last(X, p.ln0_gamma, p.ln0_beta, eps)
    for unit in p.reslayers:
        Y, n = X, len(unit.dense)
        for i, blk in enumerate(unit.dense):
            g = F.silu(mm(blk.b1, Y, blk.W1), inplace=True).mul_(mm(blk.b2, Y, blk.W2))
            if i == n - 1:  # the residual X + f(X): X + b3, then += g W3
                Y = mm_(X + (blk.b3 if X.dim() == 2 else blk.b3.unsqueeze(-2)), g, blk.W3)
            else:
                Y = mm(blk.b3, g, blk.W3)
        X = _layer_norm_last(Y if n else X + X, unit.ln_gamma, unit.ln_beta, eps)
    return X


def _layer_norm_last(X: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float):
    """LayerNorm over the last axis; ``gamma``, ``beta`` (dk,) shared or (H, dk) per head."""
    if gamma.dim() == 1:
        return F.layer_norm(X, (X.shape[-1],), gamma, beta, eps)
    return _layer_norm_rows(X, gamma, beta, eps)


def metric_learner(D: torch.Tensor, params: HeadParams) -> torch.Tensor:
    """Return ``A = Phi(LayerNorm_rows(D))`` for every (batch, head).

    Parameters
    ----------
    D : torch.Tensor
        (B, H, dk, dk) density operators (float32 or float64).
    params : HeadParams
        Parameters of the H heads (converted to ``D``'s dtype/device).

    Returns
    -------
    torch.Tensor
        (B, H, dk, dk) metric-learner output, dtype of ``D``.
    """
    B, H, dk, _ = D.shape
    p = params.to(D.device, D.dtype)
    X = _to_rows(D).view(H, dk * B, dk)
    return _from_rows(metric_learner_rows(X, p).view(H, dk, B, dk))


def _energy_rows(A_rows: torch.Tensor, p: HeadParams, check: bool):
    """Run steps 4-6 on row layout (H, dk, B, dk); return (A_LM, A_P, G) in row layout."""
    H, dk, B, _ = A_rows.shape
    # the same operations, in the same order, as Z * silu(Z) + eps etc.; in place where
    # the intermediate is not returned
    Z = torch.bmm(p.W, A_rows.view(H, dk, B * dk)).view(H, dk, B, dk).add_(p.b[:, :, None, :])
    A_LM = F.silu(Z).mul_(Z).add_(p.metric_eps)
    A_P = torch.pow(A_LM, p.P[:, :, None, :])
    G = torch.bmm(p.a, A_P.view(H, dk, B * dk)).view(H, dk, B, dk).add_(p.b_a[:, :, None, :])
    if check:
        check_finite(G, "power law A_LM ** P / G = a A_P + b_a")
    return A_LM, A_P, G


def energy_curvature(
    A: torch.Tensor, params: HeadParams, *, check_finite: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return ``(A_LM, A_P, G)`` from the metric-learner output ``A``.

    Parameters
    ----------
    A : torch.Tensor
        (B, H, dk, dk) metric-learner output (float32 or float64).
    params : HeadParams
        Parameters of the H heads.
    check_finite : bool, default True
        Raise :class:`~pyverify.kernels.validation.PowerLawOverflowError` if the
        power law overflowed (one host synchronisation).

    Returns
    -------
    tuple of torch.Tensor
        ``A_LM``, ``A_P``, ``G``, each (B, H, dk, dk).
    """
    p = params.to(A.device, A.dtype)
    try:
        outs = _energy_rows(_to_rows(A), p, check_finite)
    except NonFiniteStageError:
        explain_nonfinite([("A", A)], params)  # a NaN A or parameter is no overflow
        raise
    return tuple(_from_rows(t) for t in outs)  # type: ignore[return-value]


def check_params(params: object, H: int, dk: int) -> None:
    """Raise a one-line error unless ``params`` are kernel parameters of ``H`` heads of ``dk``."""
    if not isinstance(params, HeadParams):
        raise InputTypeError(
            "params must be a pyverify.kernels.HeadParams (use kernels.from_reference); "
            f"got {type(params).__name__}"
        )
    if params.num_heads != H or params.dk != dk:
        raise InputValueError(
            f"params hold H={params.num_heads} heads of dk={params.dk}; q has H={H}, dk={dk}"
        )


def compute_g(q: torch.Tensor, params: HeadParams, *, check_finite: bool = True) -> Deductive:
    """Run steps 1-6 and return all deductive tensors.

    Parameters
    ----------
    q : torch.Tensor
        (B, H, S, dk) rotated queries.
    params : HeadParams
        Parameters of the H heads.
    check_finite : bool, default True
        Raise if the power law overflowed.

    Returns
    -------
    Deductive
        ``A``, ``A_LM``, ``A_P``, ``G`` each (B, H, dk, dk) in the compute dtype.
    """
    B, H, _, dk = q.shape
    check_params(params, H, dk)
    D = density_operator(q)
    p = params.to(D.device, D.dtype)
    A_rows = metric_learner_rows(_to_rows(D).view(H, dk * B, dk), p).view(H, dk, B, dk)
    try:
        A_LM, A_P, G = _energy_rows(A_rows, p, check_finite)
    except NonFiniteStageError:
        explain_nonfinite([("q", q)], params)  # a NaN q or parameter is no overflow
        raise
    return Deductive(_from_rows(A_rows), _from_rows(A_LM), _from_rows(A_P), _from_rows(G))
