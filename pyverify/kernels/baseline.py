"""The straightforward PLGA formulation, as a benchmark baseline (our own code).

It follows the structure of the paper's public implementation
(``pldr_model_v510``): the per-head weights are TILED per batch element
(``torch.tile(W[None], [B, 1, 1, 1])``) and multiplied with ``torch.matmul``
over (B, H), and the scores are formed explicitly: ``E = (Q G) K^T / sqrt(dk)``,
``E + mask * -1e9``, ``softmax``, ``@ V``. It computes the same function as
:func:`pyverify.kernels.head.plga_attention` (checked in the tests) and exists
only as the "before" side of benchmark P2.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.kernels.params import HeadParams

__all__ = ["plga_attention_baseline"]


def _tile(w: torch.Tensor, B: int) -> torch.Tensor:
    return torch.tile(w[None], [B] + [1] * w.dim())


def plga_attention_baseline(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, params: HeadParams
) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal PLGA, straightforward formulation (float32/float64 only).

    Parameters
    ----------
    q, k, v : torch.Tensor
        (B, H, S, dk) rotated queries/keys and values.
    params : HeadParams
        Parameters of the H heads (same dtype/device as ``q``).

    Returns
    -------
    out : torch.Tensor
        (B, H, S, dv).
    G : torch.Tensor
        (B, H, dk, dk).
    """
    B, _, S, dk = q.shape
    p = params.to(q.device, q.dtype)
    eps = p.ln_eps
    A = torch.matmul(q.transpose(-1, -2), q)

    def ln(X: torch.Tensor, g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        X = F.layer_norm(X, (dk,), eps=eps)
        return X * _tile(g, B)[:, :, None, :] + _tile(b, B)[:, :, None, :]

    A = ln(A, p.ln0_gamma, p.ln0_beta)
    for unit in p.reslayers:
        Y = A
        for blk in unit.dense:
            h1 = torch.matmul(Y, _tile(blk.W1, B)) + _tile(blk.b1, B)[:, :, None, :]
            h2 = torch.matmul(Y, _tile(blk.W2, B)) + _tile(blk.b2, B)[:, :, None, :]
            Y = torch.matmul(F.silu(h1) * h2, _tile(blk.W3, B)) + _tile(blk.b3, B)[:, :, None, :]
        A = ln(A + Y, unit.ln_gamma, unit.ln_beta)
    Z = torch.matmul(_tile(p.W, B), A) + _tile(p.b, B)
    A_LM = Z * F.silu(Z) + p.metric_eps
    A_P = torch.pow(A_LM, _tile(p.P, B))
    G = torch.matmul(_tile(p.a, B), A_P) + _tile(p.b_a, B)
    E = torch.matmul(torch.matmul(q, G), k.transpose(-1, -2)) / math.sqrt(dk)
    mask = torch.triu(torch.ones(S, S, dtype=q.dtype, device=q.device), diagonal=1)
    E = E + mask * -1e9
    return torch.matmul(F.softmax(E, dim=-1), v), G
