"""Answer accuracy and loss of the recall task in three inference modes.

``G`` is formed from the Gram of the queries of every position it is given, so
how a prediction's A was formed decides what it could see (:mod:`~pyverify.measure.loss`
says the same of the losses). Each mode scores the predictions at given target
positions (the recall task's answers, :meth:`~pyverify.collapse.recall.RecallTask.answer_positions`)
of whole sequences ``w`` (inputs ``w[:, :-1]``, targets ``w[:, 1:]``):

* ``teacher-forced``: one pass over the whole input, A from the whole window (the
  author's training objective; a position's A holds later tokens, the answers
  among them): not an inference;
* ``causal``: position ``t`` predicted by a pass over the first ``t + 1`` inputs,
  A recomputed from that prefix (greedy decoding with full recomputation;
  :func:`~pyverify.measure.loss.causal_val_loss` at the answer positions);
* ``prompt-cache``: the author's deployed decoding (``A=kvcache[2]``): a pass over
  the first ``prompt_len`` inputs (the kv section) keeps its KV-cache and each
  layer's metric-learner output A; the rest of the input is decoded with that
  cache and that A (hence the prompt's G). The same numbers as one pass with
  ``a_prefix=prompt_len`` (a test holds it).

The *exposure gap* of a mode is the teacher-forced accuracy minus that mode's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torch.nn import functional as F  # noqa: N812

from pyverify.errors import InputValueError
from pyverify.trainable.decoder import PLDRDecoder

__all__ = ["MODES", "answer_logits", "answer_scores", "prompt_cache_logits"]

MODES = ("teacher-forced", "causal", "prompt-cache")
CHUNK = 256
"""Sequences per forward pass."""


@torch.no_grad()
def prompt_cache_logits(model: PLDRDecoder, x: Tensor, prompt_len: int) -> Tensor:
    """Logits ``(B, S, vocab)`` of inputs ``x`` decoded after a ``prompt_len``-token prompt.

    The prompt's pass gives every layer's KV-cache and A; the remaining inputs are
    run in one pass on that cache with that A (the author's KVG-cache decoding,
    which keeps the prompt's A). Logits of the prompt positions come from its own pass.
    """
    if not 1 <= prompt_len <= x.shape[1]:
        raise InputValueError(f"prompt_len must lie in [1, {x.shape[1]}]; got {prompt_len}")
    head, deds, kvs = model(x[:, :prompt_len])
    if prompt_len == x.shape[1]:
        return head
    rest, _, _ = model(x[:, prompt_len:], past=kvs, A=[d["A"] for d in deds])
    return torch.cat((head, rest), dim=1)


@torch.no_grad()
def answer_logits(
    model: PLDRDecoder, x: Tensor, positions: Sequence[int], mode: str, prompt_len: int
) -> Tensor:
    """Logits ``(B, P, vocab)`` of the predictions at input ``positions`` of ``x`` in ``mode``.

    Parameters
    ----------
    model : PLDRDecoder
        The decoder (any dtype; the study measures a float64 copy).
    x : torch.Tensor of int64, shape (B, S)
        Inputs.
    positions : sequence of int
        Input positions whose next-token prediction is wanted (target indices).
    mode : {"teacher-forced", "causal", "prompt-cache"}
        The inference (module docstring).
    prompt_len : int
        Tokens of the prompt (``prompt-cache``): the recall task's kv section.
    """
    pos = [int(p) for p in positions]
    if not pos or min(pos) < 0 or max(pos) >= x.shape[1]:
        raise InputValueError(f"positions must lie in [0, {x.shape[1]}); got {pos}")
    if mode == "teacher-forced":
        return model(x)[0][:, pos]
    if mode == "causal":
        return torch.stack([model(x[:, : p + 1])[0][:, -1] for p in pos], dim=1)
    if mode == "prompt-cache":
        if min(pos) < prompt_len - 1:
            raise InputValueError(f"prompt-cache: positions must be >= prompt_len - 1; got {pos}")
        return prompt_cache_logits(model, x, prompt_len)[:, pos]
    raise InputValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")


@torch.no_grad()
def answer_scores(
    model: PLDRDecoder,
    seqs: Tensor,
    positions: Sequence[int],
    prompt_len: int,
    modes: Sequence[str] = MODES,
) -> dict[str, Any]:
    """Answer accuracy and loss (nats) of whole sequences ``seqs (N, L)`` in each mode.

    Returns ``{mode: {"accuracy", "loss"}}`` plus ``"exposure_gap"``: ``{mode:
    teacher-forced accuracy - mode's}`` for the inference modes (when ``teacher-forced``
    is among ``modes``).
    """
    x, y = seqs[:, :-1], seqs[:, 1:]
    pos = [int(p) for p in positions]
    out: dict[str, Any] = {}
    for mode in modes:
        hits, nll = 0.0, 0.0
        for i in range(0, x.shape[0], CHUNK):
            logits = answer_logits(model, x[i : i + CHUNK], pos, mode, prompt_len)
            target = y[i : i + CHUNK, pos]
            hits += float((logits.argmax(-1) == target).sum())
            nll += float(F.cross_entropy(logits.flatten(0, 1), target.flatten(), reduction="sum"))
        n = y.shape[0] * len(pos)
        out[mode] = {"accuracy": hits / n, "loss": nll / n}
    if "teacher-forced" in out:
        tf = out["teacher-forced"]["accuracy"]
        out["exposure_gap"] = {m: tf - out[m]["accuracy"] for m in modes if m != "teacher-forced"}
    return out
