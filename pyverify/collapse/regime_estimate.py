"""What a regime will cost on this machine: every seed's jobs, measurements included.

:func:`regime_estimate` times, with the jobs' own thread count, the three things a
job does (:mod:`~pyverify.collapse.job`): a training step
(:func:`~pyverify.collapse.estimate.measure_step`), one record of the periodic
measurements (:func:`pyverify.measure.measure_record` on the study's inputs) and
the end-of-run measurements with the decoding timing (what the job's ``_final``
runs), each on the regime's model at initialisation. A job's time is its steps x
the step, plus its records (one per ``measure_every`` steps and step 0) x the
record, plus the end; the wall time is the schedule of
:func:`~pyverify.collapse.runner.run_studies`: the longest first, ``jobs`` at a time.
The estimate assumes each job keeps its own cores (``jobs`` x threads at most the
cores): on a loaded machine it is low by the load's share, and the printed load
average says so.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import torch

from pyverify.collapse.config import RUNS, RunConfig
from pyverify.collapse.corpus import load_data
from pyverify.collapse.estimate import duration, measure_step
from pyverify.collapse.inputs import final_inputs, record_inputs
from pyverify.collapse.regimes import Regime
from pyverify.host import load_average
from pyverify.measure import as_float64, measure_final, measure_record
from pyverify.measure.decoding import time_per_token
from pyverify.trainable.decoder import PLDRDecoder

__all__ = ["RegimeEstimate", "format_regime_estimate", "regime_estimate", "schedule_wall"]


@dataclass(frozen=True)
class RegimeEstimate:
    """The parts of a regime's cost and its wall time (seconds)."""

    regime: Regime
    threads: int
    jobs: int
    step_s: float
    record_s: float
    final_s: float
    per_job: dict[str, float]
    wall_s: float
    load: float | None


def measurement_times(cfg: RunConfig) -> tuple[float, float]:
    """Seconds of one periodic record and of the end-of-run measurements, at init."""
    corpus = load_data(cfg)
    model = PLDRDecoder(cfg.model, seed=cfg.seed)
    m64 = as_float64(model)
    inputs = record_inputs(cfg, corpus)
    t0 = time.perf_counter()
    measure_record(m64, inputs)
    t1 = time.perf_counter()
    fin = final_inputs(cfg, corpus)
    measure_final(m64, fin, m64)
    time_per_token(model, fin.prompts[0], cfg.n_new)
    return t1 - t0, time.perf_counter() - t1


def schedule_wall(durations: list[float], jobs: int) -> float:
    """Wall time of ``durations`` run longest first, ``jobs`` at a time."""
    free = [0.0] * max(1, jobs)
    for d in sorted(durations, reverse=True):
        heapq.heapreplace(free, free[0] + d)
    return max(free)


def regime_estimate(
    reg: Regime, device: torch.device, *, jobs: int = 2, threads: int = 1
) -> RegimeEstimate:
    """Time the parts of ``reg``'s jobs on ``device`` and schedule them (module docstring)."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        cfg = reg.seed_config(reg.seeds[0])
        step = measure_step(cfg, device).step_s
        record_s, final_s = measurement_times(cfg)
    finally:
        torch.set_num_threads(before)
    per_job = {}
    for s in reg.seeds:
        for name in reg.runs:
            steps = cfg.run_steps(RUNS[name])
            records = steps // cfg.measure_every + 1
            per_job[f"seed-{s}/{name}"] = steps * step + records * record_s + final_s
    return RegimeEstimate(reg, threads, jobs, step, record_s, final_s, per_job,
                          schedule_wall(list(per_job.values()), jobs), load_average())  # fmt: skip


def format_regime_estimate(e: RegimeEstimate) -> str:
    """The lines printed before a regime's study (and alone by ``--dry-run``)."""
    r = e.regime
    longest = max(e.per_job.values())
    load = f", load average {e.load:.2f}" if e.load is not None else ""
    return "\n".join(
        [
            f"regime {r.name}: {r.what}",
            f"runs {', '.join(r.runs)} x seeds {', '.join(map(str, r.seeds))}: "
            f"{len(e.per_job)} jobs, {e.jobs} at a time, {e.threads} thread(s) each",
            f"measured here{load}: a training step {e.step_s * 1e3:.1f} ms, a record "
            f"{e.record_s:.2f} s, the end-of-run measurements {e.final_s:.1f} s",
            f"estimate: the longest job {duration(longest)}, all jobs "
            f"{duration(sum(e.per_job.values()))} of work, wall {duration(e.wall_s)}",
        ]
    )
