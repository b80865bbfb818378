"""Training one named run: AdamW, linear warm-up + cosine, the author's checkpoint format.

Determinism: the initialisation uses a seeded generator, step ``t``'s batch
comes from ``default_rng([seed, t])``, the learning rate is a function of ``t``
alone and every measurement draws from its own seeded generator, so the state
after step ``t`` is (model, optimizer, history, loss accumulators). A resumed
run gives the same numbers as an uninterrupted one (same thread count and
world size). Under ``torchrun`` the same loop trains with DDP, the global batch
split over the ranks (:mod:`~pyverify.collapse.distributed`); one plain process
runs it without a process group, bit for bit as before the split existed.

Checkpoints (``out_dir``), written atomically (a temporary file, then a rename):

* ``checkpoint.pt`` every ``measure_every`` steps, every ``save_every_s`` seconds
  and at the end (rank 0 writes, every rank reads to resume): the author's
  ``save_model`` dict (``pldr_run_model_v510.py``) -- ``model_state_dict`` (a
  ``pldr_model_v510`` state dict), ``optimizer_state_dict``, ``loss`` and
  ``accuracy`` (the training loss and token accuracy averaged since the
  previous measurement) -- plus ``trainer``, the trainer's own state (format,
  settings, run, step, history, accumulators), plain Python values that
  ``torch.load(weights_only=True)`` reads; the author's ``load_model`` reads
  the four keys it knows;
* ``init.pt``: the step-0 model in the same format (no optimizer), for the
  stale-cache contract (N1) and for ``pyverify diagnose --checkpoint``.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F  # noqa: N812

from pyverify.collapse.config import RunConfig, RunSpec
from pyverify.collapse.corpus import Corpus
from pyverify.collapse.distributed import DistEnv, check_split, global_mean, local_rows, wrap
from pyverify.collapse.inputs import record_inputs
from pyverify.errors import InputValueError
from pyverify.measure import as_float64, measure_record
from pyverify.output import Progress
from pyverify.trainable.decoder import PLDRDecoder

__all__ = [
    "CHECKPOINT",
    "INIT",
    "PROGRESS_EVERY_S",
    "SAVE_EVERY_S",
    "TRAINER_FORMAT",
    "TrainingDivergedError",
    "forward_loss",
    "load_checkpoint",
    "lr_at",
    "make_optimizer",
    "objective_loss",
    "train_run",
    "update",
]

CHECKPOINT = "checkpoint.pt"
INIT = "init.pt"
TRAINER_FORMAT = 1
"""Version of the ``trainer`` entry; a checkpoint of another is not resumed."""
PROGRESS_EVERY_S = 20.0
"""Seconds between rank 0's progress lines."""
SAVE_EVERY_S = 600.0
"""Seconds between checkpoints at most (besides every measurement): the work a kill can lose."""


class TrainingDivergedError(ValueError):
    """The training loss became non-finite (reported, never carried on silently)."""


def lr_at(step: int, cfg: RunConfig, run: RunSpec) -> float:
    """Learning rate of step ``step`` (0-based): linear warm-up, cosine to ``min_lr_frac``.

    Both phases span the run's own step count (:meth:`RunConfig.run_steps`); the
    warm-up's offset is :attr:`RunConfig.warmup_start`.
    """
    steps = cfg.run_steps(run)
    warm = max(1, round(run.warmup_frac * steps))
    if step < warm:
        return run.peak_lr * (step + cfg.warmup_start) / warm
    frac = (step - warm) / max(1, steps - warm)
    cos = 0.5 * (1.0 + math.cos(math.pi * min(1.0, frac)))
    return run.peak_lr * (cfg.min_lr_frac + (1.0 - cfg.min_lr_frac) * cos)


def make_optimizer(model: PLDRDecoder, cfg: RunConfig, run: RunSpec) -> torch.optim.AdamW:
    """AdamW over the trainable parameters, with the run's weight-decay groups.

    ``frozen``: the metric learner and ``W, b, P, a, b_a`` get
    ``requires_grad=False`` and are left out. ``no-decay``: ``P`` and ``a`` form
    a group with weight decay 0; so do the embedding and the output layer when
    ``cfg.decay_vocab`` is False; every other parameter decays (the author's recipe
    decays every parameter).
    """
    frozen: set[int] = set()
    no_decay: set[int] = set()
    for layer in model.layers:
        mha = layer.mha1
        if run.frozen_metric:
            frozen.update(id(p) for p in mha.metric_parameters())
        if not run.decay_p_a:
            no_decay.update((id(mha.P), id(mha.a)))
    if not cfg.decay_vocab:
        vocab_layers = (model.decoder.embedding, model.final_layer)
        no_decay.update(id(p) for m in vocab_layers for p in m.parameters())
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


def objective_loss(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    objective: str,
    prompt_len: int,
    score_mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """``(loss, accuracy)`` of one batch under the run's objective.

    ``model``: a :class:`PLDRDecoder` or its DDP wrapper.

    ``all``: every position of the teacher-forced window; ``last``: the final
    position only; ``prompt-A``: A (hence G) from the first ``prompt_len`` tokens,
    the loss on every token after them (positions ``prompt_len - 1 ..``, whose
    predictions see earlier tokens only); ``prompt-A-answers``: A from the first
    ``prompt_len`` tokens, the loss on the positions where ``score_mask`` (bool
    ``(seq,)``, all at ``prompt_len - 1`` or later) is True (the recall task's answers,
    :meth:`~pyverify.collapse.recall.RecallTask.answer_mask`).
    """
    if objective == "prompt-A-answers":
        if score_mask is None or score_mask.shape != (x.shape[1],):
            raise InputValueError(f"objective {objective!r} needs a bool score mask (seq,)")
        if bool(score_mask[: prompt_len - 1].any()):
            raise InputValueError(f"objective {objective!r}: a scored position lies in the prompt")
        logits, _, _ = model(x, a_prefix=prompt_len)
        idx = score_mask.nonzero().squeeze(1).to(x.device)
        logits, y = logits[:, idx], y[:, idx]
    elif objective == "prompt-A":
        logits, _, _ = model(x, a_prefix=prompt_len)
        logits, y = logits[:, prompt_len - 1 :], y[:, prompt_len - 1 :]
    else:
        logits, _, _ = model(x)
        if objective == "last":
            logits, y = logits[:, -1:], y[:, -1:]
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    accuracy = (logits.detach().argmax(-1) == y).double().mean()
    return loss, accuracy


def forward_loss(
    net: torch.nn.Module,
    x: Tensor,
    y: Tensor,
    cfg: RunConfig,
    objective: str,
    score_mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """The training step's forward pass and loss (:func:`objective_loss`).

    Under bf16 autocast on CUDA when :attr:`RunConfig.bf16_autocast`, as the author's
    ``dist_train_step`` runs it; as is elsewhere. ``score_mask``: the scored positions
    of objective ``prompt-A-answers``.
    """
    amp = cfg.bf16_autocast and x.device.type == "cuda"
    with torch.autocast("cuda", dtype=torch.bfloat16) if amp else contextlib.nullcontext():
        return objective_loss(net, x, y, objective, cfg.prompt_len, score_mask)


def update(
    model: torch.nn.Module, opt: torch.optim.Optimizer, loss: Tensor, cfg: RunConfig, lr: float
) -> None:
    """The training step's update at learning rate ``lr``: backward, clipping, ``opt.step()``.

    Every gradient is clipped by value at ``grad_clip_value``. The trainer's loop, the
    recipe check (:mod:`pyverify.collapse.recipe`), the estimate and the step's benchmark
    call :func:`forward_loss` and this function (``lr``: :func:`lr_at`, or the peak).
    """
    for group in opt.param_groups:
        group["lr"] = lr
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), cfg.grad_clip_value)
    opt.step()


def _save(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path) -> dict[str, Any]:
    """A study checkpoint as ``torch.load(weights_only=True)`` reads it."""
    return torch.load(path, map_location="cpu", weights_only=True)


def _cpu(obj: Any) -> Any:
    """``obj`` with every tensor on the CPU (checkpoints load anywhere; as is on a CPU run)."""
    if isinstance(obj, Tensor):
        return obj.cpu()
    if isinstance(obj, dict):
        return {k: _cpu(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_cpu(v) for v in obj)
    return obj


def _hms(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}h{s // 60 % 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class _Progress:
    """Rank 0's progress lines: every ``every_s`` seconds, the step, mean loss, rate and ETA."""

    def __init__(self, name: str, first: int, total: int, every_s: float, say: Progress) -> None:
        self.name, self.first, self.total, self.every, self.say = name, first, total, every_s, say
        self.t0 = self.last = time.monotonic()
        self.loss, self.n = 0.0, 0

    def __call__(self, step: int, loss: float) -> None:
        self.loss, self.n = self.loss + loss, self.n + 1
        now = time.monotonic()
        if now - self.last < self.every and step < self.total:
            return
        rate = (now - self.t0) / (step - self.first)
        self.say(
            f"collapse {self.name}: step {step}/{self.total} ({step / self.total:.0%}), "
            f"loss {self.loss / self.n:.3f}, {rate:.3g} s/step, "
            f"ETA {_hms(rate * (self.total - step))}"
        )
        self.last, self.loss, self.n = now, 0.0, 0


def train_run(
    cfg: RunConfig,
    run: RunSpec,
    corpus: Corpus,
    out_dir: Path,
    *,
    resume: bool = False,
    stop_after: int | None = None,
    on_step: Callable[[int, float], None] | None = None,
    env: DistEnv | None = None,
    progress: Progress | None = None,
    progress_every_s: float = PROGRESS_EVERY_S,
    save_every_s: float = SAVE_EVERY_S,
    on_save: Callable[[int], None] | None = None,
) -> tuple[PLDRDecoder, list[dict[str, Any]]]:
    """Train (or resume) one named run; return the model and the measurement history.

    Parameters
    ----------
    cfg : RunConfig
        Settings.
    run : RunSpec
        The named run (schedule, init of ``P``, frozen parts, decay groups, objective).
    corpus : Corpus
        Data.
    out_dir : pathlib.Path
        Folder of this run's checkpoints.
    resume : bool
        Continue from ``out_dir/checkpoint.pt`` if present (else start fresh).
    stop_after : int, optional
        Stop after this many steps in total (simulates an interruption; a
        checkpoint is written there).
    on_step : callable, optional
        ``on_step(step, loss)`` after every step, on rank 0.
    env : DistEnv, optional
        This process's rank, world size and device (default: one CPU process).
        Distributed: the process group must be started
        (:func:`~pyverify.collapse.distributed.start`); the global batch is split
        over the ranks (:mod:`~pyverify.collapse.distributed`); only rank 0
        measures and writes, every rank reads the checkpoint to resume.
    progress : callable, optional
        Receives rank 0's progress lines (every ``progress_every_s`` seconds).
    save_every_s : float
        Also write the checkpoint when this long has passed since the last one
        (besides every measurement and the end): no more work than that is lost.
    on_save : callable, optional
        ``on_save(step)`` after each checkpoint, on rank 0.

    Returns
    -------
    tuple
        ``(model, history)``; ``history`` holds one record per measurement
        (``step``, ``lr``, ``train_loss``, ``train_accuracy`` and
        :func:`pyverify.measure.measure_record`'s keys); on ranks other than 0 it
        holds what the checkpoint resumed from, no more.
    """
    env = env or DistEnv()
    check_split(cfg.batch, env)
    main = env.is_main
    out_dir.mkdir(parents=True, exist_ok=True)
    ckpt = out_dir / CHECKPOINT
    total = cfg.run_steps(run)
    model = PLDRDecoder(cfg.model, seed=cfg.seed, p_init=run.p_init).to(env.device)
    opt = make_optimizer(model, cfg, run)
    history: list[dict[str, Any]] = []
    step, loss_sum, acc_sum, n_acc = 0, 0.0, 0.0, 0
    stamp = {"format": TRAINER_FORMAT, "settings": cfg.to_dict(), "run": run.to_dict()}
    resumed = resume and ckpt.is_file()
    if resumed:
        state = load_checkpoint(ckpt)
        tr = state.get("trainer", {})
        if {k: tr.get(k) for k in stamp} != stamp:
            raise InputValueError(
                f"{ckpt}: a checkpoint of other settings or of another run; --restart discards it"
            )
        model.load_state_dict(state["model_state_dict"])
        opt.load_state_dict(state["optimizer_state_dict"])
        step, history = tr["step"], tr["history"]
        loss_sum, acc_sum, n_acc = tr["loss_sum"], tr["acc_sum"], tr["n_acc"]
    if main and not (resumed and (out_dir / INIT).is_file()):  # the init: a function of the seed
        init = PLDRDecoder(cfg.model, seed=cfg.seed, p_init=run.p_init) if resumed else model
        blank = {"optimizer_state_dict": None, "loss": None, "accuracy": None}
        _save(out_dir / INIT, {"model_state_dict": _cpu(init.state_dict()), **blank})
    inputs = record_inputs(cfg, corpus)

    def record(step_done: int) -> None:
        rec: dict[str, Any] = {
            "step": step_done,
            "lr": lr_at(max(0, step_done - 1), cfg, run),
            "train_loss": loss_sum / n_acc if n_acc else None,
            "train_accuracy": acc_sum / n_acc if n_acc else None,
        }
        m64 = as_float64(model)
        rec.update(measure_record(m64 if env.device.type == "cpu" else m64.cpu(), inputs))
        history.append(rec)

    if main and step == 0 and not history:
        record(0)
    net = wrap(model, env)  # DDP: every rank starts from rank 0's parameters
    net.train()
    end = total if stop_after is None else min(total, stop_after)
    if main and progress is not None:
        start_at = (
            f"resumed at step {step}"
            if resumed
            else f"from step 0: nothing to resume in {out_dir}"
            if resume
            else "from step 0"
        )
        progress(
            f"collapse {run.name}: {total} steps of a global batch of {cfg.batch} x {cfg.seq} "
            f"tokens on {env.describe()}, {start_at}"
        )
    show = _Progress(run.name, step, end, progress_every_s, progress) if progress else None
    last_save = time.monotonic()
    # a recall task (pyverify.collapse.recall) supplies its answer mask; a corpus none
    mask = corpus.answer_mask() if hasattr(corpus, "answer_mask") else None
    while step < end:
        x, y = corpus.batch(cfg.seed, step, cfg.batch, cfg.seq)  # the same on every rank
        x, y = local_rows(x, env).to(env.device), local_rows(y, env).to(env.device)
        loss, acc = forward_loss(net, x, y, cfg, run.objective, mask)
        loss_val, acc_val = global_mean((float(loss.detach()), float(acc)), env)
        if not math.isfinite(loss_val):  # the same value on every rank: all stop here
            raise TrainingDivergedError(
                f"run {run.name}: training loss is {loss_val} at step {step} "
                f"(peak lr {run.peak_lr}); the run diverged"
            )
        # DDP: backward averages the gradients over the ranks
        update(model, opt, loss, cfg, lr_at(step, cfg, run))
        step += 1
        loss_sum, acc_sum, n_acc = loss_sum + loss_val, acc_sum + acc_val, n_acc + 1
        if not main:
            continue
        if on_step is not None:
            on_step(step, loss_val)
        if show is not None:
            show(step, loss_val)
        if step % cfg.measure_every == 0 or step == total:
            record(step)
            loss_sum, acc_sum, n_acc = 0.0, 0.0, 0
            net.train()
        if (
            step % cfg.measure_every == 0
            or step == end
            or time.monotonic() - last_save >= save_every_s
        ):
            last = history[-1]
            if last["step"] != step:  # an interruption between measurements
                last = {"train_loss": loss_sum / n_acc, "train_accuracy": acc_sum / n_acc}
            _save(
                ckpt,
                {
                    "model_state_dict": _cpu(model.state_dict()),
                    "optimizer_state_dict": _cpu(opt.state_dict()),
                    "loss": last["train_loss"],
                    "accuracy": last["train_accuracy"],
                    "trainer": {
                        **stamp,
                        "step": step,
                        "history": history,
                        "loss_sum": loss_sum,
                        "acc_sum": acc_sum,
                        "n_acc": n_acc,
                    },
                },
            )
            last_save = time.monotonic()
            if on_save is not None:
                on_save(step)
    return model, history
