"""What a run will cost before it starts: parameters, tokens, FLOPs, a timed step.

Parameters are counted from the sizes (:func:`param_count`, equal to the model's
``numel`` sum; a test holds it to that). FLOPs count the matrix products of one
forward pass, 2 m k n for an (m x k) @ (k x n) product, per sequence of S tokens
(:func:`forward_flops`):

* per layer: ``wq, wk, wv, dense`` 4 * 2 S d^2; the query Gram ``D = Q^T Q``
  H * 2 S dk^2; the metric learner H * R * B * 6 dk^2 A_dff (R residual units of
  B SwiGLU blocks, each three products on the dk rows of D); ``W A`` and ``a A_P``
  H * 2 * 2 dk^3; ``Q G`` H * 2 S dk^2; scores ``(Q G) K^T`` and ``softmax V``
  H * 2 * 2 S^2 dk (the full S x S, as computed: masked entries included); the
  SwiGLU feed-forward 3 * 2 S d dff;
* the output layer 2 S d V (the embedding is a lookup: no FLOPs).

Elementwise work (norms, activations, ``pow``, softmax, AdamW) is not counted. A
training step costs 3 forward passes (each product's backward is two products of
the same size) over ``batch`` sequences. ``6 N D`` (N the non-embedding parameters)
is printed beside it: it leaves out the attention scores and the metric learner's
dk x dk products.

The time comes from a measured step (:func:`measure_step`): a few of the trainer's
own steps (:func:`~pyverify.collapse.train.forward_loss`, then
:func:`~pyverify.collapse.train.update`) on the current device, timed after a
warm-up. A shape whose step exceeds :data:`CPU_FLOP_BUDGET` on a CPU is measured at
a reduced shape (:func:`reduced`: one layer, a vocabulary of at
most 4,096, batch 1, at most 128 tokens) and scaled: the forward and backward
time by the ratio of FLOPs, the optimiser's time by the ratio of parameters
(the printed lines say so). Records and end-of-run measurements are not in the
estimate.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, replace
from typing import Any

import torch

from pyverify.collapse.config import PRESET_NOTES, RUNS, STUDY_RUNS, RunConfig
from pyverify.trainable.decoder import ModelConfig, PLDRDecoder

__all__ = [
    "CPU_FLOP_BUDGET",
    "Estimate",
    "StepTiming",
    "duration",
    "estimate",
    "format_estimate",
    "forward_flops",
    "measure_step",
    "param_count",
    "reduced",
    "six_nd",
    "step_flops",
]

CPU_FLOP_BUDGET = 2e10
"""Training FLOPs of one step above which a CPU step is measured at a reduced shape."""


def param_count(m: ModelConfig) -> dict[str, int]:
    """Parameters by part: ``embedding``, ``layers``, ``final`` and ``total``."""
    d, dk, H, a, ff = m.d_model, m.dk, m.num_heads, m.a_dff, m.dff
    glu_a = 2 * (dk * a + a) + a * dk + dk
    learner = m.num_reslayer * (m.num_dense * glu_a + 2 * dk) + 2 * dk
    layer = 4 * (d * d + d) + 5 * H * dk * dk + learner + 2 * (d * ff + ff) + ff * d + d + 4 * d
    parts = {
        "embedding": m.vocab * d,
        "layers": m.num_layers * layer + 2 * d,  # with the decoder's final LayerNorm
        "final": d * m.vocab + m.vocab,
    }
    parts["total"] = sum(parts.values())
    return parts


def forward_flops(m: ModelConfig, S: int) -> dict[str, float]:
    """FLOPs of one forward pass over one sequence of ``S`` tokens, by part (module doc)."""
    d, dk, H = m.d_model, m.dk, m.num_heads
    L = m.num_layers
    parts = {
        "projections": L * 4 * 2.0 * S * d * d,
        "feed_forward": L * 3 * 2.0 * S * d * m.dff,
        "gram": L * H * 2.0 * S * dk * dk,
        "metric_learner": L * H * m.num_reslayer * m.num_dense * 6.0 * dk * dk * m.a_dff,
        "dk_products": L * H * (2 * 2.0 * dk**3 + 2.0 * S * dk * dk),
        "scores": L * H * 2 * 2.0 * S * S * dk,
        "output": 2.0 * S * d * m.vocab,
    }
    parts["total"] = sum(parts.values())
    return parts


def step_flops(cfg: RunConfig) -> float:
    """Training FLOPs of one step: 3 forward passes of ``batch`` sequences of ``seq``."""
    return 3.0 * cfg.batch * forward_flops(cfg.model, cfg.seq)["total"]


def six_nd(cfg: RunConfig) -> float:
    """``6 N D`` for one step: N the non-embedding parameters, D the step's tokens."""
    n = param_count(cfg.model)
    return 6.0 * (n["total"] - n["embedding"]) * cfg.batch * cfg.seq


def reduced(cfg: RunConfig) -> RunConfig:
    """The shape a CPU measures in place of one too large (module doc)."""
    m = replace(cfg.model, num_layers=1, vocab=min(cfg.model.vocab, 4096))
    return replace(cfg, model=m, batch=1, seq=min(cfg.seq, 128))


@dataclass(frozen=True)
class StepTiming:
    """A measured step: its shape, the median step and optimiser times (s)."""

    cfg: RunConfig
    device: str
    threads: int
    step_s: float
    optimizer_s: float
    steps_timed: int
    load: float | None = None
    """The 1-minute load average when the timing began (None where there is none)."""


def measure_step(
    cfg: RunConfig, device: torch.device, *, steps: int = 3, warmup: int = 1
) -> StepTiming:
    """Median time of the trainer's step (and of ``opt.step()`` alone) at ``cfg``'s shape.

    The model is the study's (float32 weights; bf16 autocast on CUDA when the
    settings say so), the optimiser the trainer's, the batch random token ids.
    """
    from pyverify.collapse.train import forward_loss, make_optimizer, update
    from pyverify.host import load_average

    load = load_average()
    run = RUNS["author"]
    model = PLDRDecoder(cfg.model, seed=cfg.seed).to(device)
    opt = make_optimizer(model, cfg, run)
    g = torch.Generator().manual_seed(0)
    toks = torch.randint(0, cfg.model.vocab, (cfg.batch, cfg.seq + 1), generator=g).to(device)
    x, y = toks[:, :-1], toks[:, 1:]

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def timed(fn: Any) -> float:
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        return time.perf_counter() - t0

    def step() -> None:  # the trainer's step (train.train_run)
        loss, _ = forward_loss(model, x, y, cfg, run.objective)
        update(model, opt, loss, cfg, run.peak_lr)

    model.train()
    for _ in range(warmup):
        step()
    step_s = statistics.median(timed(step) for _ in range(steps))
    opt_s = statistics.median(timed(opt.step) for _ in range(steps))
    return StepTiming(cfg, str(device), torch.get_num_threads(), step_s, opt_s, steps, load)


@dataclass(frozen=True)
class Estimate:
    """The figures printed before a run (:func:`format_estimate`)."""

    preset: str
    cfg: RunConfig
    params: dict[str, int]
    step_flops: float
    six_nd: float
    timing: StepTiming
    step_s: float
    scaled: bool
    runs: dict[str, int]

    def study_steps(self) -> int:
        """Steps of all the runs."""
        return sum(self.runs.values())


def estimate(
    cfg: RunConfig, device: torch.device, *, preset: str, runs: tuple[str, ...] = STUDY_RUNS
) -> Estimate:
    """Count and time ``cfg``'s run on ``device`` (reduced on a CPU when too large)."""
    flops = step_flops(cfg)
    big = device.type == "cpu" and flops > CPU_FLOP_BUDGET
    shape = reduced(cfg) if big else cfg
    timing = measure_step(shape, device)
    if big:
        fwd_bwd = (timing.step_s - timing.optimizer_s) * flops / step_flops(shape)
        opt = (
            timing.optimizer_s * param_count(cfg.model)["total"] / param_count(shape.model)["total"]
        )
        step_s = fwd_bwd + opt
    else:
        step_s = timing.step_s
    return Estimate(
        preset=preset,
        cfg=cfg,
        params=param_count(cfg.model),
        step_flops=flops,
        six_nd=six_nd(cfg),
        timing=timing,
        step_s=step_s,
        scaled=big,
        runs={n: cfg.run_steps(RUNS[n]) for n in runs},
    )


def duration(s: float) -> str:
    """Seconds as a short duration (s, min, h or days)."""
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    if s < 3 * 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"


def _runs(runs: dict[str, int]) -> str:
    by: dict[int, list[str]] = {}
    for name, steps in runs.items():
        by.setdefault(steps, []).append(name)
    return "; ".join(f"{', '.join(names)} {steps:,} steps" for steps, names in by.items())


def format_estimate(e: Estimate, corpus_tokens: int | None = None) -> str:
    """The lines printed before training (and alone by ``--dry-run``)."""
    c, m, t = e.cfg, e.cfg.model, e.timing
    p = e.params
    tok_step = c.batch * c.seq
    lines = [
        f"preset {e.preset}: {m.num_layers} layers, {m.num_heads} heads, dk {m.dk}, "
        f"d_model {m.d_model}, dff {m.dff}, {m.num_reslayer} residual units of "
        f"{m.num_dense} SwiGLU blocks, A_dff {m.a_dff}, vocabulary {m.vocab}, "
        f"context {c.seq} (+1 target)",
        *([f"  ({PRESET_NOTES[e.preset]})"] if e.preset in PRESET_NOTES else []),
        f"parameters: {p['total']:,} ({p['embedding']:,} embedding, {p['layers']:,} in the "
        f"layers, {p['final']:,} output layer)",
        f"tokens: {tok_step:,} a step (batch {c.batch} x {c.seq}); {_runs(e.runs)}; "
        f"{e.study_steps() * tok_step:,} tokens in all",
    ]
    if corpus_tokens:
        lines.append(
            f"corpus: {corpus_tokens:,} training tokens; the longest run reads "
            f"{max(e.runs.values()) * tok_step / corpus_tokens:.2f} epochs"
        )
    lines += [
        f"FLOPs: {e.step_flops:.3e} a training step (3 x forward; matrix products incl. "
        f"the S x S scores, the metric learner and the dk x dk products); 6ND would say "
        f"{e.six_nd:.3e}",
        f"FLOPs of all the runs: {e.step_flops * e.study_steps():.3e}",
    ]
    shape = t.cfg
    where = f"{t.device}, {t.threads} thread(s)" if t.device == "cpu" else t.device
    if t.load is not None:
        where += f", load average {t.load:.2f}"
    amp = " under bf16 autocast" if c.bf16_autocast and t.device.startswith("cuda") else ""
    if e.scaled:
        sm = shape.model
        lines.append(
            f"measured on {where}: {t.steps_timed} steps{amp} at a reduced shape (layers "
            f"{sm.num_layers}, vocabulary {sm.vocab}, batch {shape.batch}, context "
            f"{shape.seq}: {step_flops(shape):.3e} FLOPs, {param_count(sm)['total']:,} "
            f"parameters): {t.step_s * 1e3:.1f} ms a step, of which the optimiser "
            f"{t.optimizer_s * 1e3:.1f} ms; scaled to this shape by FLOPs (forward and "
            f"backward, x{e.step_flops / step_flops(shape):.1f}) and by parameters (the "
            f"optimiser, x{p['total'] / param_count(sm)['total']:.1f})"
        )
    else:
        lines.append(
            f"measured on {where}: {t.steps_timed} steps{amp} at this shape, "
            f"{t.step_s * 1e3:.1f} ms a step (optimiser {t.optimizer_s * 1e3:.1f} ms)"
        )
    author = e.runs.get("author", max(e.runs.values()))
    lines.append(
        f"estimate: {e.step_s * 1e3:.1f} ms a step, {e.step_flops / e.step_s / 1e12:.2f} "
        f"TFLOP/s; the author run {duration(author * e.step_s)}, all "
        f"{len(e.runs)} runs one after another {duration(e.study_steps() * e.step_s)} "
        f"(training steps only: the records every {c.measure_every} steps and the "
        f"end-of-run measurements come on top)"
    )
    return "\n".join(lines)
