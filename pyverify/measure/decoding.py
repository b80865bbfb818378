"""Cache fidelity: greedy decoding against FULL RECOMPUTATION, three cached decoders.

* uncached (the reference): every step reruns the whole sequence, so ``G`` is
  recomputed from the Gram of all tokens so far (the model as trained);
* ``prompt_G``: one pass over the prompt stores K, V and the prompt's ``G``;
  each new token then costs one row (KV- and G-cache, steps 1-6 skipped);
* ``mean_G``: as ``prompt_G`` but every layer uses a given mean ``G`` (one
  fixed operator per head, the paper's collapsed model);
* ``kv_A``: the author's KV-cache semantics (``pldr_model_v510``: ``A`` is taken
  from the cache, ``A=kvcache[2]``): the prompt's ``A`` is kept and steps 4-6
  are recomputed from it. It equals ``prompt_G`` by construction (the property
  test ``test_any_stack_a_cached_decoding_equals_g_cached_decoding``), so only
  the comparison with the uncached decoder tests anything.

Deterministic numbers (float64 model): whether the greedy tokens are
identical, the maximum absolute logit gap (teacher-forced on the uncached
tokens, so every step compares the same context), and the smallest top-1
margin of the uncached logits. By ``score_perturbation`` a step's argmax is
safe when its margin exceeds twice the logit gap. Per prompt and mode:

* ``margin_covers_gap``: the smallest margin over the steps exceeds twice the
  largest gap (a certificate of identical tokens, conservative across steps);
* ``step_margin_covers_gap``: at every step the margin exceeds twice that
  step's gap (the same certificate step by step; implies identical tokens);
* ``gap_exceeds_margin``: at some step the gap is at least that step's margin
  (a deviation as large as the decision margin itself, whether or not the
  argmax moved).

Timings (per generated token, in the model's float32) are kept apart: they are
not deterministic. :func:`time_per_token` interleaves the three decoders
``repeats`` times (:data:`TIMING_REPEATS` by default) and keeps every repeat,
so a rule can see the spread, not only the best time.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from torch import Tensor

from pyverify.measure.inputs import TokenSet
from pyverify.trainable.decoder import PLDRDecoder

__all__ = ["MODES", "TIMING_REPEATS", "fidelity", "time_per_token"]

MODES = ("prompt_G", "mean_G", "kv_A")
TIMING_REPEATS = 7
"""Interleaved timing repeats per run (at least 5, the E5 rule's premise, so the
spread of the speed-up is seen; 7 leaves two repeats for a load spike). Cost at the
study's full size: about 0.9 s per repeat and run (20 prompts x 16 tokens, three
decoders), fixed before the first full run."""


def _uncached(model: PLDRDecoder, prompt: Tensor, n_new: int, forced: Tensor | None):
    seq, logits_all = prompt, []
    for i in range(n_new):
        logits, _, _ = model(seq)
        last = logits[:, -1]
        logits_all.append(last)
        nxt = last.argmax(-1, keepdim=True) if forced is None else forced[:, i : i + 1]
        seq = torch.cat((seq, nxt), dim=1)
    return seq[:, prompt.shape[1] :], torch.stack(logits_all, 1)


def _cached(
    model: PLDRDecoder,
    prompt: Tensor,
    n_new: int,
    G: list[Tensor] | None,
    forced: Tensor | None,
    keep_a: bool = False,
):
    """KV-cached greedy (or teacher-forced) decoding with a G-cache, or the prompt's A."""
    logits, deds, kv = model(prompt, G)
    A = [d["A"] for d in deds] if keep_a else None
    if not keep_a:
        G = [d["G"] for d in deds] if G is None else G
    last, out, logits_all = logits[:, -1], [], []
    for i in range(n_new):
        logits_all.append(last)
        nxt = last.argmax(-1, keepdim=True) if forced is None else forced[:, i : i + 1]
        out.append(nxt)
        if i + 1 < n_new:
            logits, _, kv = model(nxt, None if keep_a else G, kv, A)
            last = logits[:, -1]
    return torch.cat(out, 1), torch.stack(logits_all, 1)


def _kv_a(model: PLDRDecoder, prompt: Tensor, n_new: int) -> Tensor:
    """KV-cache decoding storing the prompt's ``A`` (steps 4-6 recomputed every step)."""
    return _cached(model, prompt, n_new, None, None, keep_a=True)[0]


@torch.no_grad()
def fidelity(
    model64: PLDRDecoder, prompts: TokenSet, n_new: int, mean_G: list[Tensor]
) -> dict[str, Any]:
    """Tokens, logit gaps and margins of the three cached decoders vs full recomputation.

    ``mean_G``: one ``(H, dk, dk)`` operator per layer for the ``mean_G`` decoder.
    """
    margins: list[Tensor] = []
    same: dict[str, list[Tensor]] = {m: [] for m in MODES}
    gaps: dict[str, list[Tensor]] = {m: [] for m in MODES}
    covered: dict[str, list[Tensor]] = {m: [] for m in MODES}
    exceeded: dict[str, list[Tensor]] = {m: [] for m in MODES}
    modes = (("prompt_G", None, False), ("mean_G", [g[None] for g in mean_G], False),
             ("kv_A", None, True))  # fmt: skip
    for group in prompts:
        ref_tok, ref_logits = _uncached(model64, group, n_new, None)
        top2 = ref_logits.topk(2, dim=-1).values
        step_margin = top2[..., 0] - top2[..., 1]  # (n, n_new)
        margins.append(step_margin.amin(dim=1))
        for name, G, keep_a in modes:
            tok, _ = _cached(model64, group, n_new, G, None, keep_a)
            _, forced_logits = _cached(model64, group, n_new, G, ref_tok, keep_a)
            same[name].append((tok == ref_tok).all(dim=1))
            step_gap = (forced_logits - ref_logits).abs().amax(dim=2)  # (n, n_new)
            gaps[name].append(step_gap.amax(dim=1))
            covered[name].append((step_margin > 2 * step_gap).all(dim=1))
            exceeded[name].append((step_gap >= step_margin).any(dim=1))
    margin = torch.cat(margins)
    out: dict[str, Any] = {
        "n_prompts": int(margin.numel()),
        "n_new": n_new,
        "min_top1_margin": float(margin.min()),
        "median_top1_margin": float(margin.median()),
    }
    for name in MODES:
        gap = torch.cat(gaps[name])
        out[name] = {
            "tokens_identical": int(torch.cat(same[name]).sum()),
            "max_logit_gap": float(gap.max()),
            "median_logit_gap": float(gap.median()),
            "margin_covers_gap": int((margin > 2 * gap).sum()),
            "step_margin_covers_gap": int(torch.cat(covered[name]).sum()),
            "gap_exceeds_margin": int(torch.cat(exceeded[name]).sum()),
        }
    return out


@torch.no_grad()
def time_per_token(
    model: PLDRDecoder, prompts: Tensor, n_new: int, repeats: int = TIMING_REPEATS
) -> dict[str, Any]:
    """Seconds per generated token (float32 copy, batch ``prompts (N, S)``), ``repeats`` times.

    Three decoders: full recomputation (``uncached``), the author's KV-cache
    storing the prompt's ``A`` (``kv_a_cached``: steps 4-6 per step) and the
    KV+G-cache (``g_cached``), run in turn in every repeat. ``*_s_per_token``
    are the best of the repeats; ``speedup`` is uncached / G-cached (KV and G
    caches together) and ``speedup_g_over_kv_a`` isolates the G-cache, both
    from the best times; ``speedup_per_repeat`` and
    ``speedup_g_over_kv_a_per_repeat`` are the same ratios within each repeat
    (the three timings of a repeat are taken back to back, so a load spike
    tends to hit them alike); ``repeats`` is their count.
    """
    import copy

    if repeats < 1:
        raise ValueError(f"repeats must be >= 1; got {repeats}")
    model = copy.deepcopy(model).float().eval()
    runs = {
        "uncached": lambda: _uncached(model, prompts, n_new, None),
        "kv_a_cached": lambda: _kv_a(model, prompts, n_new),
        "g_cached": lambda: _cached(model, prompts, n_new, None, None),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():  # interleaved, so load spikes hit all three alike
            t0 = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t0) / n_new)
    best = {name: min(t) for name, t in times.items()}
    return {
        **{f"{k}_s_per_token": v for k, v in best.items()},
        "speedup": best["uncached"] / best["g_cached"],
        "speedup_g_over_kv_a": best["kv_a_cached"] / best["g_cached"],
        "repeats": repeats,
        "speedup_per_repeat": [
            u / g for u, g in zip(times["uncached"], times["g_cached"], strict=True)
        ],
        "speedup_g_over_kv_a_per_repeat": [
            a / g for a, g in zip(times["kv_a_cached"], times["g_cached"], strict=True)
        ],
    }
