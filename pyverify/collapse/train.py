"""Training one named run: AdamW, linear warm-up + cosine, checkpoints, resumable.

Determinism: the initialisation uses a seeded generator, step ``t``'s batch
comes from ``default_rng([seed, t])`` and the learning rate is a function of
``t`` alone, so the state after step ``t`` is (model, optimizer, history).
A checkpoint holds exactly that and is written atomically every
``measure_every`` steps; ``resume=True`` continues from it and gives the same
numbers as an uninterrupted run (same machine, same thread count).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from pyverify.collapse.config import RunConfig, RunSpec
from pyverify.collapse.corpus import Corpus
from pyverify.collapse.measure import as_float64, measure, sample_continuations, val_loss
from pyverify.collapse.model import PLDRDecoder
from pyverify.errors import InputValueError

__all__ = ["CHECKPOINT", "TrainingDivergedError", "lr_at", "make_optimizer", "train_run"]

CHECKPOINT = "checkpoint.pt"


class TrainingDivergedError(ValueError):
    """The training loss became non-finite (reported, never carried on silently)."""


def lr_at(step: int, cfg: RunConfig, run: RunSpec) -> float:
    """Learning rate of step ``step`` (0-based): linear warm-up, cosine to ``min_lr_frac``."""
    warm = max(1, round(run.warmup_frac * cfg.steps))
    if step < warm:
        return run.peak_lr * (step + 1) / warm
    frac = (step - warm) / max(1, cfg.steps - warm)
    cos = 0.5 * (1.0 + math.cos(math.pi * min(1.0, frac)))
    return run.peak_lr * (cfg.min_lr_frac + (1.0 - cfg.min_lr_frac) * cos)


def make_optimizer(model: PLDRDecoder, cfg: RunConfig, run: RunSpec) -> torch.optim.AdamW:
    """AdamW over the trainable parameters, with the run's weight-decay groups.

    ``frozen``: the metric learner and ``W, b, P, a, b_a`` get
    ``requires_grad=False`` and are left out. ``no-decay``: ``P`` and ``a`` form
    a group with weight decay 0; every other parameter decays (the author's
    recipe decays every parameter).
    """
    frozen: set[int] = set()
    no_decay: set[int] = set()
    for layer in model.layers:
        mha = layer.mha
        if run.frozen_metric:
            frozen.update(id(p) for p in mha.metric_parameters())
        if not run.decay_p_a:
            no_decay.update((id(mha.P), id(mha.a)))
    decay, plain = [], []
    for p in model.parameters():
        if id(p) in frozen:
            p.requires_grad_(False)
        elif id(p) in no_decay:
            plain.append(p)
        else:
            decay.append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}]
    if plain:
        groups.append({"params": plain, "weight_decay": 0.0})
    return torch.optim.AdamW(groups, lr=run.peak_lr, betas=cfg.betas, eps=cfg.adam_eps)


def _save(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def train_run(
    cfg: RunConfig,
    run: RunSpec,
    corpus: Corpus,
    out_dir: Path,
    *,
    resume: bool = False,
    stop_after: int | None = None,
    on_step: Callable[[int, float], None] | None = None,
) -> tuple[PLDRDecoder, list[dict[str, Any]]]:
    """Train (or resume) one named run; return the model and the measurement history.

    Parameters
    ----------
    cfg : RunConfig
        Settings.
    run : RunSpec
        The named run (schedule, init of ``P``, frozen parts, decay groups).
    corpus : Corpus
        Data.
    out_dir : pathlib.Path
        Folder of this run's checkpoint.
    resume : bool
        Continue from ``out_dir/checkpoint.pt`` if present (else start fresh).
    stop_after : int, optional
        Stop after this many steps in total (simulates an interruption; a
        checkpoint is written there).
    on_step : callable, optional
        ``on_step(step, loss)`` after every step (progress bar).

    Returns
    -------
    tuple
        ``(model, history)``; ``history`` holds one record per measurement.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    ckpt = out_dir / CHECKPOINT
    model = PLDRDecoder(cfg.model, seed=cfg.seed, p_init=run.p_init)
    opt = make_optimizer(model, cfg, run)
    history: list[dict[str, Any]] = []
    step, loss_sum, loss_n = 0, 0.0, 0
    if resume and ckpt.is_file():
        state = torch.load(ckpt, weights_only=False)
        if state["settings"] != cfg.to_dict() or state["run"] != run.to_dict():
            raise InputValueError(f"{ckpt}: checkpoint of other settings; run without --resume")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step, history = state["step"], state["history"]
        loss_sum, loss_n = state["loss_sum"], state["loss_n"]
    probes = {S: corpus.windows(cfg.n_probe, S, phase=0.0) for S in cfg.s_measure}
    val = corpus.windows(cfg.n_val, cfg.seq + 1, phase=0.5)
    val_in, val_tg = val[:, :-1], val[:, 1:]
    pair_prompts = corpus.windows(cfg.n_pairs, cfg.pair_prompt_len, phase=0.75)

    def record(step_done: int) -> None:
        m64 = as_float64(model)
        pairs = (
            sample_continuations(m64, pair_prompts, cfg.pair_new, cfg.seed, 2 * step_done),
            sample_continuations(m64, pair_prompts, cfg.pair_new, cfg.seed, 2 * step_done + 1),
        )
        rec = {
            "step": step_done,
            "lr": lr_at(max(0, step_done - 1), cfg, run),
            "train_loss": loss_sum / loss_n if loss_n else None,
            "val_loss": val_loss(m64, val_in, val_tg),
        }
        rec.update(measure(m64, probes, pairs, cfg.rank_rtol, cfg.jac_probes))
        history.append(rec)

    if step == 0 and not history:
        record(0)
    model.train()
    end = cfg.steps if stop_after is None else min(cfg.steps, stop_after)
    while step < end:
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg, run)
        x, y = corpus.batch(cfg.seed, step, cfg.batch, cfg.seq)
        logits, _, _ = model(x)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        if not torch.isfinite(loss):
            raise TrainingDivergedError(
                f"run {run.name}: training loss is {float(loss)} at step {step} "
                f"(peak lr {run.peak_lr}); the run diverged"
            )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), cfg.grad_clip_value)
        opt.step()
        step += 1
        loss_val = float(loss.detach())
        loss_sum, loss_n = loss_sum + loss_val, loss_n + 1
        if on_step is not None:
            on_step(step, loss_val)
        if step % cfg.measure_every == 0 or step == cfg.steps:
            record(step)
            loss_sum, loss_n = 0.0, 0
            model.train()
        if step % cfg.measure_every == 0 or step == end:
            _save(
                ckpt,
                {
                    "settings": cfg.to_dict(),
                    "run": run.to_dict(),
                    "step": step,
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "history": history,
                    "loss_sum": loss_sum,
                    "loss_n": loss_n,
                },
            )
    return model, history
