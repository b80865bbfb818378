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
safe when its margin exceeds twice the logit gap; ``margin_covers_gap`` counts
the prompts where this holds at every step. Timings (per generated token, in
the model's float32) are kept apart: they are not deterministic.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from torch import Tensor

from pyverify.collapse.model import PLDRDecoder
from pyverify.measure.inputs import TokenSet

__all__ = ["MODES", "fidelity", "time_per_token"]

MODES = ("prompt_G", "mean_G", "kv_A")


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
    modes = (("prompt_G", None, False), ("mean_G", [g[None] for g in mean_G], False),
             ("kv_A", None, True))  # fmt: skip
    for group in prompts:
        ref_tok, ref_logits = _uncached(model64, group, n_new, None)
        top2 = ref_logits.topk(2, dim=-1).values
        margins.append((top2[..., 0] - top2[..., 1]).amin(dim=1))
        for name, G, keep_a in modes:
            tok, _ = _cached(model64, group, n_new, G, None, keep_a)
            _, forced_logits = _cached(model64, group, n_new, G, ref_tok, keep_a)
            same[name].append((tok == ref_tok).all(dim=1))
            gaps[name].append((forced_logits - ref_logits).abs().amax(dim=(1, 2)))
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
        }
    return out


@torch.no_grad()
def time_per_token(
    model: PLDRDecoder, prompts: Tensor, n_new: int, repeats: int = 3
) -> dict[str, float]:
    """Seconds per generated token (float32 copy, batch ``prompts (N, S)``), best of ``repeats``.

    Three decoders: full recomputation (``uncached``), the author's KV-cache
    storing the prompt's ``A`` (``kv_a_cached``: steps 4-6 per step) and the
    KV+G-cache (``g_cached``). ``speedup`` is uncached / G-cached (KV and G
    caches together); ``speedup_g_over_kv_a`` isolates the G-cache.
    """
    import copy

    model = copy.deepcopy(model).float().eval()
    runs = {
        "uncached": lambda: _uncached(model, prompts, n_new, None),
        "kv_a_cached": lambda: _kv_a(model, prompts, n_new),
        "g_cached": lambda: _cached(model, prompts, n_new, None, None),
    }
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeats):
        for name, fn in runs.items():  # interleaved, so load spikes hit all three alike
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / n_new)
    return {
        **{f"{k}_s_per_token": v for k, v in best.items()},
        "speedup": best["uncached"] / best["g_cached"],
        "speedup_g_over_kv_a": best["kv_a_cached"] / best["g_cached"],
    }
