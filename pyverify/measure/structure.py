"""Structure of the deductive tensors and of the metric learner (float64, per layer x head).

Averaged over the sequences of a set unless said:

* :func:`rank_profile`: ``sigma_2 / sigma_1`` and the numerical rank (singular
  values above ``rtol * sigma_1``);
* :func:`identical_rows_residual`: ``||A - 1 mean_rows(A)||_F / ||A||_F`` (0:
  identical rows, the paper's learned singularity);
* :func:`row_energy`: the author's row collapse (``model_rg/criticality.py``,
  field ``row``): the centred row energy of A over its energy,
  ``mean((A - 1 mean_rows(A))^2) / max(mean(A^2), 1e-30)`` -- the square of the
  identical-rows residual, recorded every step so the fraction of re-opening
  increments (N3) can be computed from the history; it says nothing about
  context invariance (the order parameter does);
* :func:`cross_head_residual`: per layer ``sqrt(mean_h ||A_h - mean_h A||_F^2) /
  ||mean_h A||_F``;
* :func:`floor_fraction`: fraction of A_LM entries at the ``eps`` floor
  (``A_LM <= FLOOR_FACTOR * eps``, no average needed: a fraction of all entries);
* :func:`jacobian_top_sv`: the largest singular value of the metric learner's
  Jacobian (the row map ``Phi(LN_rows(.))`` from a row of ``D = Q^T Q`` to a row
  of ``A``), max over the rows the given sequences visit.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pyverify.measure.inputs import TokenSet
from pyverify.measure.order import fro, safe_div
from pyverify.measure.tensors import deductive_stack
from pyverify.trainable.decoder import METRIC_EPS, PLDRDecoder

__all__ = [
    "FLOOR_FACTOR",
    "cross_head_residual",
    "floor_fraction",
    "identical_rows_residual",
    "jacobian_top_sv",
    "rank_profile",
    "row_energy",
]

FLOOR_FACTOR = 2.0
"""An A_LM entry is "at the floor" when it is at most ``FLOOR_FACTOR * eps``."""


def rank_profile(X: Tensor, rtol: float) -> tuple[Tensor, Tensor]:
    """``(L, H)`` mean ``sigma_2 / sigma_1`` and mean numerical rank of ``X (N, L, H, m, m)``."""
    s = torch.linalg.svdvals(X)
    ratio = (s[..., 1] / s[..., 0].clamp_min(torch.finfo(X.dtype).tiny)).mean(dim=0)
    rank = (s > rtol * s[..., :1]).sum(dim=-1).double().mean(dim=0)
    return ratio, rank


def identical_rows_residual(A: Tensor) -> Tensor:
    """``(L, H)`` mean identical-rows residual of ``A (N, L, H, dk, dk)``."""
    return safe_div(fro(A - A.mean(dim=-2, keepdim=True)), fro(A)).mean(dim=0)


def row_energy(A: Tensor) -> Tensor:
    """``(L, H)`` mean centred row energy over energy of ``A (N, L, H, dk, dk)`` (the author's)."""
    centred = A - A.mean(dim=-2, keepdim=True)
    return (centred.square().mean((-2, -1)) / A.square().mean((-2, -1)).clamp_min(1e-30)).mean(0)


def cross_head_residual(A: Tensor) -> Tensor:
    """``(L,)`` mean cross-head residual of ``A (N, L, H, dk, dk)``."""
    head_mean = A.mean(dim=2, keepdim=True)
    cross = torch.sqrt((fro(A - head_mean) ** 2).mean(dim=2)) / fro(head_mean[:, :, 0])
    return cross.mean(dim=0)


def floor_fraction(A_LM: Tensor) -> Tensor:
    """``(L, H)`` fraction of the entries of ``A_LM (N, L, H, dk, dk)`` at the eps floor."""
    return (A_LM <= FLOOR_FACTOR * METRIC_EPS).double().mean(dim=(0, 3, 4))


def jacobian_top_sv(model64: PLDRDecoder, seqs: TokenSet) -> list[list[float]]:
    """``(L, H)`` largest singular value of the metric learner's row Jacobian on visited rows."""
    from torch.func import jacrev, vmap

    D = deductive_stack(model64, seqs, ("D",))["D"]  # (N, L, H, dk, dk)
    out = []
    for layer, dec in enumerate(model64.layers):
        rows = D[:, layer]
        N, H, dk = rows.shape[0], rows.shape[1], rows.shape[-1]
        flat = rows.transpose(0, 1).reshape(H * N * dk, dk)
        with torch.enable_grad():
            J = vmap(jacrev(dec.mha1.metric_rows))(flat)  # (H*N*dk, dk, dk)
        sv = torch.linalg.matrix_norm(J.detach(), ord=2).reshape(H, N * dk)
        out.append(sv.amax(dim=1).tolist())
    return out
