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

and the claims ledger's rows a checkpoint can decide
(:mod:`pyverify.claims.checkpoint_rules`), from measurements on the same prompts:

* the author's pairwise order parameter (``audit_lib.order_pair``, heads pooled
  per layer, RMS and signed-mean forms) of two sampled continuations of each
  prompt (seeded, temperature 1);
* the learned singularity: sigma2/sigma1 and identical-rows residual of A,
  numerical rank of A_LM, per prompt x layer x head;
* cache fidelity against FULL RECOMPUTATION: greedy decoding with the prompt's
  KV+G-cache vs the uncached model rerun on the whole sequence every step
  (tokens identical, max logit gap teacher-forced, top-1 margins);
* the online contract: how many logits of each prompt's first half change
  when its second half is replaced (0 for a prefix-consistent model).

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

__all__ = ["claims_measurements", "read_tokens", "run_checkpoint_diagnose"]

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


def _sample(model: Any, toks: torch.Tensor, n: int, g: torch.Generator) -> torch.Tensor:
    seq = toks[None]
    for _ in range(n):
        logits, _ = model.forward(seq)
        probs = torch.softmax(logits[0, -1].double(), dim=-1)
        seq = torch.cat((seq, torch.multinomial(probs, 1, generator=g)[None]), dim=1)
    return seq


def _pairwise(model: Any, prompts: list[np.ndarray], n_cont: int, seed: int) -> dict[str, Any]:
    from pyverify.collapse.measure import order_pair

    out: dict[str, Any] = {t: {"rms": [], "signed_mean": []} for t in _TENSORS}
    for i, toks in enumerate(prompts):
        t = torch.as_tensor(toks)
        x = [
            _sample(model, t, n_cont, torch.Generator().manual_seed(1_000_003 * seed + 2 * i + b))
            for b in (0, 1)
        ]
        d1, d2 = model.forward(x[0])[1], model.forward(x[1])[1]
        for name in _TENSORS:
            forms = [
                order_pair(getattr(a, name)[0], getattr(b, name)[0])
                for a, b in zip(d1, d2, strict=True)
            ]
            out[name]["rms"].append([f[0] for f in forms])
            out[name]["signed_mean"].append([f[1] for f in forms])
    return out


def _singularity(A: np.ndarray, A_LM: np.ndarray, rtol: float = 1e-6) -> dict[str, Any]:
    """``A, A_LM (N, L, H, dk, dk)``: per prompt x layer x head structure figures."""
    s = np.linalg.svd(A, compute_uv=False)
    rows = np.linalg.norm(A - A.mean(axis=-2, keepdims=True), axis=(-2, -1)) / np.maximum(
        np.linalg.norm(A, axis=(-2, -1)), 1e-300
    )
    s_lm = np.linalg.svd(A_LM, compute_uv=False)
    return {
        "sigma2_over_sigma1_A": (s[..., 1] / np.maximum(s[..., 0], 1e-300)).tolist(),
        "identical_rows_residual_A": rows.tolist(),
        "numerical_rank_A_LM": (s_lm > rtol * s_lm[..., :1]).sum(axis=-1).tolist(),
    }


def _greedy_fidelity(model: Any, prompts: list[np.ndarray], n_new: int) -> dict[str, Any]:
    """KV+G-cached greedy decoding vs full recomputation, per prompt."""
    identical, gaps, margins = 0, [], []
    for toks in prompts:
        seq, ref_logits = torch.as_tensor(toks)[None], []
        for _ in range(n_new):  # full recomputation: the whole sequence every step
            last = model.forward(seq)[0][0, -1]
            ref_logits.append(last)
            seq = torch.cat((seq, last.argmax().view(1, 1)), dim=1)
        ref_tok = seq[0, len(toks) :]
        ref = torch.stack(ref_logits)

        def cached(forced: torch.Tensor | None, toks=toks) -> tuple[torch.Tensor, torch.Tensor]:
            logits, cache = model.prefill(torch.as_tensor(toks)[None])
            last, outs, all_logits = logits[0, -1], [], []
            for i in range(n_new):
                all_logits.append(last)
                nxt = last.argmax() if forced is None else forced[i]
                outs.append(nxt)
                if i + 1 < n_new:
                    step, cache = model.decode_step(nxt.view(1), cache)
                    last = step[0]
            return torch.stack(outs), torch.stack(all_logits)

        tok, _ = cached(None)
        _, forced_logits = cached(ref_tok)
        identical += int(torch.equal(tok, ref_tok))
        gaps.append(float((forced_logits - ref).abs().max()))
        top2 = ref.topk(2, dim=-1).values
        margins.append(float((top2[:, 0] - top2[:, 1]).min()))
    return {
        "n_prompts": len(prompts),
        "n_new": n_new,
        "tokens_identical": identical,
        "max_logit_gap": max(gaps),
        "logit_gap": gaps,
        "min_top1_margin": min(margins),
        "margin_covers_gap": sum(m > 2 * g for m, g in zip(margins, gaps, strict=True)),
    }


def _online(model: Any, prompts: list[np.ndarray], vocab: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    changed = total = 0
    worst = 0.0
    for toks in prompts:
        h = max(1, len(toks) // 2)
        alt = toks.copy()
        alt[h:] = (toks[h:] + 1 + rng.integers(0, vocab - 1, size=len(toks) - h)) % vocab
        a = model.forward(torch.as_tensor(toks)[None])[0][0, :h]
        b = model.forward(torch.as_tensor(alt)[None])[0][0, :h]
        changed += int((a != b).sum())
        total += a.numel()
        worst = max(worst, float((a - b).abs().max()))
    return {"changed": changed, "total": total, "max_change": worst}


def claims_measurements(
    model: Any,
    prompts: list[np.ndarray],
    stacks: dict[str, list[np.ndarray]],
    *,
    vocab: int,
    n_new: int,
    n_cont: int,
    seed: int,
) -> dict[str, Any]:
    """The measurements behind the ledger rows (see the module docstring)."""
    return {
        "pairwise_order": _pairwise(model, prompts, n_cont, seed),
        "singularity": _singularity(np.stack(stacks["A"]), np.stack(stacks["A_LM"])),
        "fidelity": _greedy_fidelity(model, prompts, n_new),
        "online": _online(model, prompts, vocab, seed),
    }


def run_checkpoint_diagnose(
    checkpoint: str | os.PathLike[str],
    tokens: str | os.PathLike[str] | None = None,
    *,
    n_prompts: int = 8,
    seq_len: int = 16,
    seed: int = 0,
    n_new: int = 16,
    n_cont: int = 16,
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
        Random prompts when no file is given (``seed`` also seeds the sampled
        continuations and the replaced suffixes).
    n_new : int
        Greedy tokens decoded per prompt for the cache-fidelity rows (E2, E8).
    n_cont : int
        Sampled tokens per continuation for the author's pairwise order parameter.
    progress : callable, optional
        Called with a line per step.

    Returns
    -------
    dict
        ``{"kind": "checkpoint", "model", "order_parameter", "invariance",
        "cache_fidelity", "claims", "ledger"}`` (JSON-ready).
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
        say("diagnose: the ledger's measurements (continuations, greedy decoding, prefixes)")
        claims = claims_measurements(
            model, prompts, stacks, vocab=vocab, n_new=n_new, n_cont=n_cont, seed=seed
        )
    order = {t: fluctuation(np.stack(v)) for t, v in stacks.items()}
    Gs = np.stack(stacks["G"])  # (N, L, H, dk, dk)
    eps = eps_g(Gs, Gs[0])
    info = {"checkpoint": os.fspath(checkpoint), "layers": L, "heads": H, "dk": p.dk}
    info.update(d_model=p.d_model, vocab=vocab, n_prompts=len(prompts))
    info["tokens"] = None if tokens is None else os.fspath(tokens)
    out = {
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
        "claims": claims,
    }
    from pyverify.claims.checkpoint_rules import checkpoint_rules

    out["ledger"] = [{**v.to_json(), "numbers": v.numbers} for v in checkpoint_rules(out)]
    return out


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
    for row in d.get("ledger", []):
        nums = "; ".join(
            f"{k} {format(x, '.3g') if isinstance(x, float) else x}"
            for k, x in row["numbers"].items()
        )
        lines.append(f"{row['claim']} {row['verdict'].upper()}: {nums}")
    return "\n".join(lines)
