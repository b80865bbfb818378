"""``pyverify diagnose --checkpoint FILE [--tokens FILE]``: diagnostics of a real PLDR-LLM.

Loads a ``pldr_model_v510`` state dict (:func:`pyverify.kernels.load_v510`, in
float64 on the CPU so that the measured fluctuations are not rounding noise)
and, over a set of prompts, measures:

* the order parameter: per layer x head, the RMS fluctuation over prompts of
  the deductive tensors ``A``, ``A_LM``, ``A_P``, ``G``,
  ``sqrt(mean_i ||T_i - mean T||_F^2) / ||mean T||_F`` (0: the tensor is the
  same for every prompt, the paper's collapse), and overall;
* ``eps_G``: with ``G*`` the G-cache of the first prompt,
  ``max_i ||G(X_i) - G*||_F / ||G*||_F`` per layer x head, and the relative
  logits gap of each prompt run with ``G*`` instead of its own ``G``;
* cache fidelity: each prompt's first half is prefilled and the rest decoded
  token by token with the KV- and G-cache (the reference decoder's semantics);
  the gap to the full uncached recomputation of the whole prompt, relative to
  its largest logit.

Prompts: token ids from a file (``.npy`` int array (S,) or (N, S); ``.json``
list of lists; otherwise text, one prompt per line of integers separated by
spaces or commas), or random ids (seeded) when none is given.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import numpy as np
import torch

from pyverify.diagnose.model import eps_g, fluctuation, relative_gap
from pyverify.errors import InputValueError
from pyverify.output import Progress

__all__ = ["read_tokens", "run_checkpoint_diagnose"]

_TENSORS = ("A", "A_LM", "A_P", "G")


def read_tokens(path: str | os.PathLike[str], vocab: int) -> list[np.ndarray]:
    """Read prompts (token ids) from ``path``; each must hold >= 2 ids in ``[0, vocab)``.

    Raises
    ------
    ValueError
        Naming the file (and line) on a missing file, bad syntax or ids out of range.
    """
    p = pathlib.Path(path)
    if not p.is_file():
        raise InputValueError(f"--tokens {p}: no such file")
    try:
        if p.suffix == ".npy":
            arr = np.load(p, allow_pickle=False)
            seqs = [arr] if arr.ndim == 1 else list(arr)
        elif p.suffix == ".json":
            seqs = [np.asarray(s) for s in json.loads(p.read_text())]
        else:
            seqs = []
            for i, line in enumerate(p.read_text().splitlines(), 1):
                if line.strip():
                    try:
                        seqs.append(np.array([int(t) for t in line.replace(",", " ").split()]))
                    except ValueError:
                        raise InputValueError(f"--tokens {p}:{i}: not a list of integers") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InputValueError(f"--tokens {p}: unreadable ({exc})") from exc
    if not seqs:
        raise InputValueError(f"--tokens {p}: no prompts")
    out = []
    for i, s in enumerate(seqs):
        s = np.asarray(s)
        if s.dtype.kind not in "iu" or s.ndim != 1 or s.size < 2:
            raise InputValueError(f"--tokens {p}: prompt {i} must be >= 2 integer ids")
        if s.min() < 0 or s.max() >= vocab:
            raise InputValueError(f"--tokens {p}: prompt {i} has ids outside [0, {vocab})")
        out.append(s.astype(np.int64))
    return out


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return relative_gap(a.cpu().numpy(), b.cpu().numpy())


def run_checkpoint_diagnose(
    checkpoint: str | os.PathLike[str],
    tokens: str | os.PathLike[str] | None = None,
    *,
    n_prompts: int = 8,
    seq_len: int = 16,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Order parameter, ``eps_G`` and cache fidelity of a loaded ``pldr_model_v510``.

    Parameters
    ----------
    checkpoint : str or path
        ``torch.save``d state dict (or the author's checkpoint dict).
    tokens : str or path, optional
        Prompts file (see module docstring); default: ``n_prompts`` random
        prompts of ``seq_len`` ids (seed ``seed``).
    n_prompts, seq_len, seed : int
        Random prompts when no file is given.
    progress : callable, optional
        Called with a line per step.

    Returns
    -------
    dict
        ``{"kind": "checkpoint", "model", "order_parameter", "invariance",
        "cache_fidelity"}`` (JSON-ready).
    """
    from pyverify.kernels import load_v510

    say = progress or (lambda _s: None)
    say(f"diagnose: loading {checkpoint}")
    model = load_v510(checkpoint, dtype=torch.float64)
    p = model.params
    vocab, L, H = int(p.emb.shape[0]), len(p.layers), p.num_heads
    if tokens is not None:
        prompts = read_tokens(tokens, vocab)
    else:
        rng = np.random.default_rng(seed)
        prompts = [rng.integers(0, vocab, size=seq_len) for _ in range(n_prompts)]
    say(f"diagnose: {L} layers x {H} heads, dk {p.dk}, vocab {vocab}; {len(prompts)} prompts")
    stacks: dict[str, list[np.ndarray]] = {t: [] for t in _TENSORS}
    logits_all = []
    with torch.inference_mode():
        for i, toks in enumerate(prompts):
            logits, deds = model.forward(torch.as_tensor(toks)[None])
            logits_all.append(logits[0])
            for t in _TENSORS:
                stacks[t].append(np.stack([getattr(d, t)[0].cpu().numpy() for d in deds]))
            say(f"diagnose: prompt {i + 1}/{len(prompts)} ({len(toks)} tokens)")
        G_star = [torch.as_tensor(g) for g in stacks["G"][0]]
        gaps, fidelity = [], []
        for toks, full in zip(prompts, logits_all, strict=True):
            t = torch.as_tensor(toks)[None]
            cached, _ = model.forward(t, mode="g_cached", G=G_star)
            gaps.append(_rel(cached[0], full))
            n = max(1, len(toks) // 2)
            _, cache = model.prefill(t[:, :n])
            steps = []
            for j in range(n, len(toks)):
                step, cache = model.decode_step(t[:, j], cache)
                steps.append(step[0])
            # step j's logits are position j's: compare with the full pass's rows n..S-1
            fidelity.append(_rel(torch.stack(steps), full[n:]))
    order = {t: fluctuation(np.stack(v)) for t, v in stacks.items()}
    Gs = np.stack(stacks["G"])  # (N, L, H, dk, dk)
    eps = eps_g(Gs, Gs[0])
    info = {"checkpoint": os.fspath(checkpoint), "layers": L, "heads": H, "dk": p.dk}
    info.update(d_model=p.d_model, vocab=vocab, n_prompts=len(prompts))
    info["tokens"] = None if tokens is None else os.fspath(tokens)
    return {
        "kind": "checkpoint",
        "model": info,
        "order_parameter": {
            "overall": {t: v[1] for t, v in order.items()},
            "per_head": {t: v[0].tolist() for t, v in order.items()},
        },
        "invariance": {
            "eps_G_max": float(eps.max()),
            "eps_G": eps.tolist(),
            "logits_gap": gaps,
            "logits_gap_max": max(gaps),
        },
        "cache_fidelity": {
            "prefill": "first half of each prompt, the rest decoded with KV+G-cache",
            "logits_gap": fidelity,
            "logits_gap_max": max(fidelity) if fidelity else 0.0,
        },
    }


def format_checkpoint(d: dict[str, Any]) -> str:
    """A short text summary of :func:`run_checkpoint_diagnose`'s result."""
    m, op, inv, cf = d["model"], d["order_parameter"], d["invariance"], d["cache_fidelity"]
    lines = [
        f"checkpoint {m['checkpoint']}: {m['layers']} layers x {m['heads']} heads, "
        f"dk {m['dk']}, vocab {m['vocab']}, {m['n_prompts']} prompts",
        "order parameter (overall): " + ", ".join(f"{t} {v:.3g}" for t, v in op["overall"].items()),
        f"eps_G max {inv['eps_G_max']:.3g}; logits gap with the first prompt's G: "
        f"max {inv['logits_gap_max']:.3g}",
        f"cache fidelity (KV+G-cached decoding vs full recompute): max {cf['logits_gap_max']:.3g}",
    ]
    return "\n".join(lines)
