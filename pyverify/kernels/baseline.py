"""Straightforward PLGA formulations, as benchmark baselines (our own code).

* :func:`plga_attention_author` re-creates the formulation of the paper's public
  implementation (``pldr_model_v510``) faithfully: the shared metric learner is
  applied to the (B, H, dk, dk) stack with untiled weights (as ``nn.Linear``
  and ``nn.LayerNorm`` do), ``W``, ``a`` and ``P`` are TILED per batch element
  (``torch.tile(W[None], [B, 1, 1, 1])``) as the author does, and the scores
  take the author's S x S passes: ``(Q G) K^T``, ``/ sqrt(dk)``,
  ``+ mask * -1e9`` (a precomputed 0/1 look-ahead mask), ``softmax``, ``@ V``.
  It is the "before" side of benchmark P2.
* :func:`author_decode_step` re-creates one cached decoding step of the
  author's model: keys/values kept as (B, S, H, dk) and extended with
  ``torch.cat`` (a full copy per step), G from the G-cache; the "before" side of
  benchmark P3.

They compute the same functions as :mod:`pyverify.kernels.head` and
:class:`pyverify.kernels.model.PLGADecoder` (checked in the tests).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.errors import InputValueError
from pyverify.kernels.params import HeadParams
from pyverify.kernels.rope import apply_rope

__all__ = [
    "author_decode_step",
    "author_prefill_cache",
    "look_ahead_mask",
    "plga_attention_author",
]


def _tile(w: torch.Tensor, B: int) -> torch.Tensor:
    return torch.tile(w[None], [B] + [1] * w.dim())


def look_ahead_mask(S: int, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """The author's mask ``1 - tril(ones(S, S))`` (1 at masked places)."""
    return (1 - torch.tril(torch.ones(S, S))).to(device=device, dtype=dtype)


def _linear_weights(p: HeadParams) -> list[list[tuple[torch.Tensor, ...]]]:
    """The shared learner's weights in ``nn.Linear`` layout (out, in), contiguous, memoised."""
    key = ("linear", str(p.device), p.dtype)
    cached = p._cache.get(key)  # type: ignore[call-overload]
    if cached is None:
        cached = [
            [
                (b.W1.T.contiguous(), b.b1, b.W2.T.contiguous(), b.b2, b.W3.T.contiguous(), b.b3)
                for b in u.dense
            ]
            for u in p.reslayers
        ]
        p._cache[key] = cached  # type: ignore[index]
    return cached  # type: ignore[return-value]


def plga_attention_author(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    params: HeadParams,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal PLGA in the author's formulation (shared learner; float32/float64).

    Parameters
    ----------
    q, k, v : torch.Tensor
        (B, H, S, dk) rotated queries/keys and values.
    params : HeadParams
        Shared-learner parameters (same dtype/device as ``q``).
    mask : torch.Tensor, optional
        (S, S) look-ahead mask, 1 at masked places (the author builds it once per
        model call); default :func:`look_ahead_mask`.

    Returns
    -------
    out : torch.Tensor
        (B, H, S, dv).
    G : torch.Tensor
        (B, H, dk, dk).
    """
    B, _, S, dk = q.shape
    p = params.to(q.device, q.dtype)
    if not p.shared_learner:
        raise InputValueError("plga_attention_author needs the shared-learner form")
    eps = p.ln_eps
    A = torch.matmul(q.transpose(-1, -2), q)
    A = F.layer_norm(A, (dk,), p.ln0_gamma, p.ln0_beta, eps)
    for unit, blocks in zip(p.reslayers, _linear_weights(p), strict=True):
        Y = A
        for W1, b1, W2, b2, W3, b3 in blocks:
            Y = F.linear(F.silu(F.linear(Y, W1, b1)) * F.linear(Y, W2, b2), W3, b3)
        A = F.layer_norm(Y + A, (dk,), unit.ln_gamma, unit.ln_beta, eps)
    Z = torch.matmul(_tile(p.W, B), A) + p.b
    A_LM = Z * F.silu(Z) + p.metric_eps
    A_P = torch.pow(A_LM, _tile(p.P, B))
    G = torch.matmul(_tile(p.a, B), A_P) + p.b_a
    E = torch.matmul(torch.matmul(q, G), k.transpose(-1, -2))
    E = E / torch.sqrt(torch.tensor(dk, dtype=torch.float32))
    m = look_ahead_mask(S, q.dtype, q.device) if mask is None else mask
    E = F.softmax(E + m * -1e9, dim=-1)
    return torch.matmul(E, v), G


def author_prefill_cache(cache: object) -> list[list[torch.Tensor]]:
    """Convert a :class:`~pyverify.kernels.model.DecoderCache` to the author's layout.

    Returns per layer ``[k, v, G]`` with ``k``, ``v`` contiguous (B, S, H, dk).
    """
    return [
        [lc.k.transpose(1, 2).contiguous(), lc.v.transpose(1, 2).contiguous(), lc.G]
        for lc in cache.layers  # type: ignore[attr-defined]
    ]


def author_decode_step(
    model: object, token: torch.Tensor, cache: list[list[torch.Tensor]]
) -> tuple[torch.Tensor, list[list[torch.Tensor]]]:
    """One G-cached decoding step in the author's style (KV extended by ``torch.cat``).

    Parameters
    ----------
    model : PLGADecoder
        The model (its parameters are used; the computation is re-created).
    token : torch.Tensor
        (B,) token ids.
    cache : list of [k, v, G]
        From :func:`author_prefill_cache` or a previous step (not modified).

    Returns
    -------
    logits : torch.Tensor
        (B, vocab).
    cache : list of [k, v, G]
        The extended cache (new tensors, as in the author's code).
    """
    p = model.params  # type: ignore[attr-defined]
    H, dk, eps, base = p.num_heads, p.dk, p.ln_eps, p.rope_base
    B = token.shape[0]
    x = p.emb[token.view(B, 1)] * torch.sqrt(torch.tensor(p.d_model, dtype=torch.float32))
    x = F.layer_norm(x, (p.d_model,), p.ln0_gamma, p.ln0_beta, eps)
    new = []
    for lp, (kc, vc, G) in zip(p.layers, cache, strict=True):
        pos = kc.shape[1]
        q = apply_rope((x @ lp.Wq + lp.bq).view(B, 1, H, dk).transpose(1, 2), offset=pos, base=base)
        kn = apply_rope(
            (x @ lp.Wk + lp.bk).view(B, 1, H, dk).transpose(1, 2), offset=pos, base=base
        )
        k = torch.cat([kc, kn.transpose(1, 2)], 1)
        v = torch.cat([vc, (x @ lp.Wv + lp.bv).view(B, 1, H, dk)], 1)
        new.append([k, v, G])
        E = torch.matmul(torch.matmul(q, G), k.permute(0, 2, 3, 1)) / math.sqrt(dk)
        h = torch.matmul(F.softmax(E, dim=-1), v.permute(0, 2, 1, 3))
        h = h.permute(0, 2, 1, 3).reshape(B, 1, -1) @ lp.Wo + lp.bo
        x1 = F.layer_norm(h + x, (p.d_model,), lp.ln1_gamma, lp.ln1_beta, eps)
        f = lp.ffn
        y = (F.silu(x1 @ f.W1 + f.b1) * (x1 @ f.W2 + f.b2)) @ f.W3 + f.b3
        x = F.layer_norm(y + x1, (p.d_model,), lp.ln2_gamma, lp.ln2_beta, eps)
    return (x @ p.Wf + p.bf)[:, -1], new
