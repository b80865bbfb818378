"""Collapsed PLGA: a constant ``G*`` turns the layer into generalised SDPA.

``softmax((Q G*) K^T / sqrt(dk)) V`` is plain SDPA on ``Q' = Q G*``
(:func:`collapsed_attention`), so torch's fused kernels (Flash /
memory-efficient on GPU, the flash CPU kernel on CPU) do the quadratic work.

With RoPE, ``G*`` can be folded into the query projection BEFORE rotation only
when it commutes with every rotation ``R_n`` (theorem ``collapse_absorption``).
By ``rope_commutant_char`` that commutant is exactly the block-diagonal
matrices whose 2 x 2 blocks lie in span{I, J}; :func:`rope_commutant_residual`
measures the distance to it and :func:`in_rope_commutant` tests it numerically.
"""

from __future__ import annotations

import torch

from pyverify.errors import InputValueError
from pyverify.kernels.head import Precision, checked_sdpa_qg
from pyverify.kernels.rope import rope_matrix
from pyverify.kernels.validation import check_inputs_finite, check_tensor

__all__ = [
    "DEFAULT_COMMUTANT_TOL",
    "collapsed_attention",
    "fold_into_query_projection",
    "in_rope_commutant",
    "project_to_rope_commutant",
    "rope_commutant_residual",
]

#: Default relative tolerance for "G commutes with all RoPE rotations". A G that
#: lies exactly in the commutant but was rounded to float32 has a relative
#: commutator residual of a few float32 ulps (~1e-7); 1e-5 leaves a 100x margin
#: and is still 4-5 orders of magnitude below the trained G_LM (residual > 0.5).
DEFAULT_COMMUTANT_TOL = 1e-5

# Positions at which the commutator [G, R_n] is evaluated directly. n = 1
# suffices in exact arithmetic (rope_relative_position: commuting with R_1
# implies commuting with every R_n); the others guard against round-off and
# cover the long-context angles.
_PROBE_POSITIONS = (1, 2, 3, 5, 17, 100, 1000, 4095)


def collapsed_attention(
    q_rot: torch.Tensor,
    k_rot: torch.Tensor,
    v: torch.Tensor,
    G: torch.Tensor,
    *,
    causal: bool = True,
    check_finite: bool = True,
    precision: Precision = "rounded",
) -> torch.Tensor:
    """Generalised SDPA with a constant operator: ``SDPA(Q_rot G, K_rot, V)``.

    :func:`pyverify.kernels.head.attend` with the fast precision by default.

    Parameters
    ----------
    q_rot, k_rot : torch.Tensor
        (B, H, S_q, dk) and (B, H, S_k, dk), rotated by RoPE.
    v : torch.Tensor
        (B, H, S_k, dv).
    G : torch.Tensor
        (dk, dk), (H, dk, dk) or (B, H, dk, dk), multiplying rotated query
        rows from the right.
    causal : bool, default True
        Causal mask (``is_causal=True`` when ``S_q == S_k``; bottom-right
        aligned otherwise).
    check_finite : bool, default True
        Raise ``ValueError`` naming ``q_rot``, ``k_rot``, ``v`` or ``G`` if it holds
        inf/NaN, ``NonFiniteStageError`` ``[scores]`` if a score would overflow;
        False skips the checks (their cost, and the unspecified result a bad value
        then gives: see ``attend``).
    precision : {"rounded", "compensated"}, default "rounded"
        bfloat16/float16 only. "rounded" is the fast path: ``Q G`` formed in
        float32 and rounded once, then exactly one SDPA call of the same shape as
        plain attention (the speed target of the collapsed mode), with the extra
        error of rounding ``Q G``. "compensated" keeps the error at plain SDPA's
        level at twice the ``Q K^T`` cost; see :func:`pyverify.kernels.head.sdpa_qg`.

    Returns
    -------
    torch.Tensor
        (B, H, S_q, dv) in ``q_rot``'s dtype.
    """
    return checked_sdpa_qg(
        ("q_rot", "k_rot"),
        q_rot,
        k_rot,
        v,
        G,
        causal=causal,
        check_finite=check_finite,
        precision=precision,
    )


def project_to_rope_commutant(G: torch.Tensor) -> torch.Tensor:
    """Orthogonal (Frobenius) projection of ``G`` (..., dk, dk) onto the RoPE commutant.

    Keeps the diagonal 2 x 2 blocks' components along I and J = rot(pi/2):
    ``[[m00, m01], [m10, m11]] -> [[x, -y], [y, x]]`` with
    ``x = (m00 + m11) / 2``, ``y = (m10 - m01) / 2``; zeroes everything else.

    Parameters
    ----------
    G : torch.Tensor
        (..., dk, dk), dk even.

    Returns
    -------
    torch.Tensor
        The projection, same shape/dtype.
    """
    check_tensor(G, "G")
    check_inputs_finite(("G", G))
    dk = G.shape[-1]
    if G.dim() < 2 or G.shape[-2] != dk or dk % 2:
        raise InputValueError(f"G must have shape (..., dk, dk) with even dk; got {tuple(G.shape)}")
    i = torch.arange(0, dk, 2, device=G.device)
    m00, m01 = G[..., i, i], G[..., i, i + 1]
    m10, m11 = G[..., i + 1, i], G[..., i + 1, i + 1]
    x, y = (m00 + m11) / 2, (m10 - m01) / 2
    out = torch.zeros_like(G)
    out[..., i, i] = x
    out[..., i + 1, i + 1] = x
    out[..., i, i + 1] = -y
    out[..., i + 1, i] = y
    return out


def rope_commutant_residual(G: torch.Tensor, *, base: float = 10000.0) -> torch.Tensor:
    """Relative distance of ``G`` from the RoPE commutant.

    Returns the larger of (a) ``||G - proj(G)||_F / ||G||_F`` (distance to the
    commutant characterised in ``rope_commutant_char``) and (b)
    ``max_n ||G R_n - R_n G||_F / (2 ||G||_F)`` over probe positions n
    (the direct commutator; ``2 ||G||`` bounds it). Computed in float64.

    Parameters
    ----------
    G : torch.Tensor
        (..., dk, dk), dk even.
    base : float, default 10000.0
        RoPE base.

    Returns
    -------
    torch.Tensor
        (...) float64 residuals, 0 exactly in the commutant.
    """
    check_tensor(G, "G")
    check_inputs_finite(("G", G))
    G64 = G.to(torch.float64)
    dk = G64.shape[-1]
    norm = torch.linalg.matrix_norm(G64).clamp_min(torch.finfo(torch.float64).tiny)
    proj = torch.linalg.matrix_norm(G64 - project_to_rope_commutant(G64)) / norm
    comm = torch.zeros_like(proj)
    for n in _PROBE_POSITIONS:
        R = rope_matrix(n, dk, base=base, device=G.device)
        c = torch.linalg.matrix_norm(G64 @ R - R @ G64) / (2 * norm)
        comm = torch.maximum(comm, c)
    return torch.maximum(proj, comm)


def in_rope_commutant(
    G: torch.Tensor, tol: float = DEFAULT_COMMUTANT_TOL, *, base: float = 10000.0
) -> bool:
    """Whether every ``G`` (..., dk, dk) commutes with all RoPE rotations, within ``tol``.

    Parameters
    ----------
    G : torch.Tensor
        (..., dk, dk), dk even.
    tol : float, default :data:`DEFAULT_COMMUTANT_TOL`
        Relative tolerance on :func:`rope_commutant_residual`.
    base : float, default 10000.0
        RoPE base.

    Returns
    -------
    bool
        True if the largest residual is ``<= tol``.
    """
    return bool(rope_commutant_residual(G, base=base).max() <= tol)


def fold_into_query_projection(
    Wq: torch.Tensor,
    bq: torch.Tensor,
    G: torch.Tensor,
    *,
    tol: float = DEFAULT_COMMUTANT_TOL,
    base: float = 10000.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fold a constant, RoPE-commuting ``G*`` into the affine query projection.

    Row-vector convention ``q = x @ Wq + bq``, heads of size dk taken from
    consecutive column blocks. Per head: ``Wq_h' = Wq_h G_h``,
    ``bq_h' = bq_h G_h``, so that ``rope(x Wq' + bq') = rope(x Wq + bq) G``
    (exact because ``G`` commutes with every ``R_n``).

    Parameters
    ----------
    Wq : torch.Tensor
        (d_model, H * dk).
    bq : torch.Tensor
        (H * dk,).
    G : torch.Tensor
        (dk, dk) shared by all heads or (H, dk, dk).
    tol : float, default :data:`DEFAULT_COMMUTANT_TOL`
        Relative tolerance for the commutant test.
    base : float, default 10000.0
        RoPE base.

    Returns
    -------
    tuple of torch.Tensor
        ``(Wq', bq')`` with the shapes/dtype of ``Wq``, ``bq``.

    Raises
    ------
    ValueError
        If ``G`` does not commute with the RoPE rotations (then only the
        post-rotation form :func:`collapsed_attention` is exact), or shapes
        do not fit.
    """
    check_tensor(Wq, "Wq", shape=("d_model", "H*dk"))
    check_tensor(bq, "bq", shape=(Wq.shape[1],), device=Wq.device)
    check_tensor(G, "G", device=Wq.device)
    dk = G.shape[-1]
    if G.dim() not in (2, 3) or G.shape[-2] != dk or Wq.shape[1] % dk:
        raise InputValueError(
            f"G must have shape (dk, dk) or (H, dk, dk) with H * dk = {Wq.shape[1]}; "
            f"got {tuple(G.shape)}"
        )
    H = Wq.shape[1] // dk
    G3 = G.expand(H, dk, dk) if G.dim() == 2 else G
    if G3.shape[0] != H:
        raise InputValueError(f"G has {G3.shape[0]} heads; Wq has H * dk = {H} * {dk} columns")
    res = rope_commutant_residual(G3, base=base)
    if bool(res.max() > tol):
        worst = int(res.argmax())
        raise InputValueError(
            f"G does not commute with the RoPE rotations (head {worst}: relative residual "
            f"{float(res[worst]):.3g} > tol {tol:g}); folding into W_q before rotation is not "
            "exact. Apply G after rotation (collapsed_attention) instead."
        )
    Gc = G3.to(Wq.dtype)
    d_model = Wq.shape[0]
    Wf = torch.einsum("mhi,hij->mhj", Wq.view(d_model, H, dk), Gc).reshape(d_model, H * dk)
    bf = torch.einsum("hi,hij->hj", bq.view(H, dk), Gc).reshape(H * dk)
    return Wf, bf
