"""Validation losses: teacher-forced, causal, and with A from a prompt prefix.

``G`` is computed from the Gram of the WHOLE input (``Q^T Q`` sums over all
positions), so a teacher-forced pass lets each position see the later tokens
through ``G``: its loss (:func:`val_loss`) is a next-token loss only when ``G``
is input-invariant. :func:`causal_val_loss` scores position ``t`` on a pass over
the first ``t + 1`` tokens (full recomputation, as in greedy decoding).
:func:`prompt_val_loss` forms A (hence G) from the first ``p`` tokens and
scores the predictions from position ``p - 1`` on (the author's KV-cache
decoding after a ``p``-token prompt, which keeps the prompt's A): leak-free,
one pass. Windows hold ``S + 1`` tokens: inputs ``[:-1]``, targets ``[1:]``;
nats per token.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F  # noqa: N812

from pyverify.measure.inputs import TokenSet
from pyverify.trainable.decoder import PLDRDecoder

__all__ = ["causal_val_loss", "prompt_val_loss", "val_loss"]

CHUNK = 64


@torch.no_grad()
def val_loss(model64: PLDRDecoder, windows: TokenSet) -> float:
    """Mean next-token cross-entropy of one teacher-forced pass per window."""
    total, count = 0.0, 0
    for group in windows:
        for i in range(0, group.shape[0], CHUNK):
            w = group[i : i + CHUNK]
            logits, _, _ = model64(w[:, :-1])
            y = w[:, 1:]
            total += float(F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum"))
            count += w[:, 1:].numel()
    return total / count


@torch.no_grad()
def causal_val_loss(model64: PLDRDecoder, windows: TokenSet) -> float:
    """Mean next-token cross-entropy with every position predicted from its prefix alone."""
    total, count = 0.0, 0
    for group in windows:
        for i in range(0, group.shape[0], CHUNK):
            w = group[i : i + CHUNK]
            x, y = w[:, :-1], w[:, 1:]
            for t in range(x.shape[1]):
                logits, _, _ = model64(x[:, : t + 1])
                total += float(F.cross_entropy(logits[:, -1], y[:, t], reduction="sum"))
            count += y.numel()
    return total / count


@torch.no_grad()
def prompt_val_loss(model64: PLDRDecoder, windows: TokenSet, prefix: int | None) -> float:
    """Mean cross-entropy of the predictions after a prompt, A from the prompt alone.

    ``prefix`` None: half of each window's inputs (at least 1 token).
    """
    total, count = 0.0, 0
    for group in windows:
        x, y = group[:, :-1], group[:, 1:]
        p = max(1, x.shape[1] // 2) if prefix is None else prefix
        for i in range(0, x.shape[0], CHUNK):
            logits, _, _ = model64(x[i : i + CHUNK], a_prefix=p)
            yy = y[i : i + CHUNK, p - 1 :]
            total += float(
                F.cross_entropy(logits[:, p - 1 :].flatten(0, 1), yy.flatten(), reduction="sum")
            )
            count += yy.numel()
    return total / count
