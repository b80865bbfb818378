"""The text regime: the study's model on the corpus in BPE ids, gated by the token n-gram.

Issue 34, item 2: a tokenised text regime. The corpus is the vendored Python 3.11
documentation in the ids of the vendored byte-level BPE of 1,024 pieces
(:mod:`~pyverify.collapse.bpe`; ``RunConfig.corpus`` ``"bpe"``), trained on the
training text alone. Its gate is the study's (:func:`pyverify.claims.subject.run_gate`):
the run's causal validation loss below the best order of the Witten-Bell n-gram, here
over tokens, counted on the training ids and scored on the same validation windows.
The study's losses are nats per token; :func:`per_byte_losses` gives them per byte too,
each divided by the bytes per token of the targets it actually scored.

The settings (:func:`text_config`) were FIXED BEFORE THE MEASURED RUN, from the pilots'
CPU time alone (``docs/text-regime.md``), and are not tuned toward any result.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pyverify.collapse.bpe import BPE_VOCAB, bytes_per_token, load_tokenizer, token_byte_lengths
from pyverify.collapse.config import RunConfig, full_config
from pyverify.collapse.corpus import VOCAB, load_corpus
from pyverify.collapse.inputs import final_inputs
from pyverify.collapse.job import read_json, settings_from_dict
from pyverify.errors import InputValueError
from pyverify.output import write_json

__all__ = ["TEXT_CORPUS", "per_byte_losses", "scored_bytes_per_token", "text_config"]

TEXT_CORPUS = "bpe"
"""The named corpus of the regime (:func:`pyverify.collapse.corpus.load_corpus`)."""


def text_config(seed: int = 0) -> RunConfig:
    """The text regime's settings: the study's (:func:`full_config`) on the BPE corpus.

    Fixed before the measured run, from pilots' CPU time alone (``docs/text-regime.md``).
    Only the corpus (``"bpe"``) and the vocabulary (1,024) differ from the byte study:
    the same model (d_model 128, 4 heads, 2 layers, dff 384, A_dff 96; 810,112
    parameters with this vocabulary), batch 16 x 64 tokens, ``steps`` 4,000 (the
    ``author`` run takes 3 x: 12,000 steps, 12.3M tokens, 3.2 epochs of the 3.79M
    training ids), records every 250 steps, 256 validation windows, n-gram orders 1..5.
    Why this size: one ``author`` run must fit about 25-30 min of one core (the study
    runs three seeds two jobs at a time on 2 cores and shares its 90 minutes with the
    recall regime). Measured CPU time on one thread (pilots, under load): 109 ms a
    training step, 3.41 s a record, 73 s for the end-of-run measurements, decoding
    timing and the n-gram, so 12,000 steps with 49 records cost about
    12,000 x 0.109 + 49 x 3.41 + 73 + ~8 (start-up) = ~1,560 s (26 min) of one free core.

    Parameters
    ----------
    seed : int, default 0
        The run's seed (the study's three seeds: 0, 1, 2).

    Returns
    -------
    RunConfig
        The validated settings.
    """
    cfg = full_config()
    return replace(
        cfg, model=replace(cfg.model, vocab=BPE_VOCAB), corpus=TEXT_CORPUS, seed=seed
    ).validate()


def _lengths(cfg: RunConfig) -> NDArray[np.int64]:
    """Bytes of each id of ``cfg``'s corpus: 1 for the byte corpus, the BPE's pieces."""
    if cfg.corpus is None:
        return np.ones(VOCAB, dtype=np.int64)
    if cfg.corpus == TEXT_CORPUS:
        return token_byte_lengths(load_tokenizer())
    raise InputValueError(
        f"bytes per token: unknown for the corpus {cfg.corpus!r} (only the vendored bytes "
        f"and {TEXT_CORPUS!r} have a known tokenizer)"
    )


def scored_bytes_per_token(cfg: RunConfig) -> dict[str, float]:
    """Bytes per scored token of the study's validation windows (the ones the losses use).

    ``targets``: positions 1..S (the teacher-forced and causal losses, the n-gram);
    ``after_prompt``: positions ``prompt_len``..S (the loss with A from the prompt).
    """
    win = final_inputs(cfg, load_corpus(cfg.corpus)).val[0].numpy()
    lengths = _lengths(cfg)
    return {
        "targets": bytes_per_token(win, lengths, start=1),
        "after_prompt": bytes_per_token(win, lengths, start=cfg.prompt_len),
    }


def per_byte_losses(result: dict[str, Any], name: str = "author") -> dict[str, Any]:
    """A run's validation losses and its gate per token and per byte.

    Parameters
    ----------
    result : dict
        A job's ``run.json`` (``settings``, ``baseline``, ``entry``) or a study's
        ``collapse.json`` (``settings``, ``baseline``, ``runs``).
    name : str, default "author"
        The run, in a ``collapse.json``.

    Returns
    -------
    dict
        ``bytes_per_token`` (:func:`scored_bytes_per_token`), ``per_token`` and
        ``per_byte`` (``val_loss``, ``causal_val_loss``, ``prompt_A_val_loss``,
        ``ngram_by_order``, ``ngram_best``), ``best_order`` and ``passed`` (the causal
        loss below the best n-gram order's: the same verdict in either unit).
    """
    cfg = settings_from_dict(result["settings"], "settings")
    entry = result["entry"] if "entry" in result else result["runs"][name]
    if "causal_val_loss" not in entry:
        raise InputValueError(f"run {name!r} holds no end-of-run losses (diverged?)")
    bpt = scored_bytes_per_token(cfg)
    base = result["baseline"]["val_loss_by_order"]
    best = min(range(len(base)), key=base.__getitem__)
    tok = {
        "val_loss": entry["val_loss"],
        "causal_val_loss": entry["causal_val_loss"],
        "prompt_A_val_loss": entry["prompt_A_val_loss"],
        "ngram_by_order": list(base),
        "ngram_best": base[best],
    }
    per = {k: v / bpt["targets"] for k, v in tok.items() if k != "ngram_by_order"}
    per["prompt_A_val_loss"] = tok["prompt_A_val_loss"] / bpt["after_prompt"]
    per["ngram_by_order"] = [v / bpt["targets"] for v in base]
    return {
        "corpus": cfg.corpus or "bytes",
        "bytes_per_token": bpt,
        "per_token": tok,
        "per_byte": per,
        "best_order": best + 1,
        "passed": tok["causal_val_loss"] < tok["ngram_best"],
    }


def format_losses(d: dict[str, Any]) -> str:
    """The table of :func:`per_byte_losses` as text."""
    t, b = d["per_token"], d["per_byte"]
    rows = [
        f"corpus {d['corpus']}: {d['bytes_per_token']['targets']:.4f} bytes per scored token "
        f"({d['bytes_per_token']['after_prompt']:.4f} after the prompt)",
        f"{'loss':<28}{'nats/token':>12}{'nats/byte':>12}",
    ]
    for key, label in (
        ("val_loss", "teacher-forced"),
        ("causal_val_loss", "causal"),
        ("prompt_A_val_loss", "A from the prompt"),
        ("ngram_best", f"n-gram, best order ({d['best_order']})"),
    ):
        rows.append(f"{label:<28}{t[key]:>12.4f}{b[key]:>12.4f}")
    for n, (vt, vb) in enumerate(zip(t["ngram_by_order"], b["ngram_by_order"], strict=True)):
        rows.append(f"{f'  n-gram order {n + 1}':<28}{vt:>12.4f}{vb:>12.4f}")
    rows.append(f"gate (causal < best n-gram): {'PASS' if d['passed'] else 'FAIL'}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """``python -m pyverify.collapse.text_regime settings FILE [--seed N] | losses DIR``."""
    ap = argparse.ArgumentParser(prog="python -m pyverify.collapse.text_regime")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("settings", help="write text_config() as a --settings file")
    s.add_argument("file", type=Path)
    s.add_argument("--seed", type=int, default=0)
    lo = sub.add_parser("losses", help="per-token and per-byte losses of a run folder")
    lo.add_argument("run_dir", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "settings":
        write_json(args.file, text_config(args.seed).to_dict())
        print(f"wrote {args.file}")
    else:
        print(format_losses(per_byte_losses(read_json(args.run_dir / "run.json"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
