"""``pyverify collapse``: the ablation study -- train the named runs, measure, write JSON.

Writes into ``out_dir`` (default ``reports/collapse/``):

* ``collapse.json`` -- settings, the n-gram baseline and every deterministic
  number of every run (byte-identical for the same settings and thread count);
* ``timings.json`` -- wall times, decoding speed, host and load (not deterministic);
* ``*.png`` -- figures drawn from ``collapse.json`` alone
  (:func:`pyverify.collapse.plots.draw_all`, also ``--plots-only``);
* ``checkpoints/<run>/`` -- ``checkpoint.pt`` (the author's checkpoint format,
  :mod:`pyverify.collapse.train`), ``init.pt`` (the step-0 model) and, once a run
  is done, ``final.json`` and ``timing.json``, for ``--resume``; and
  ``checkpoints/inputs.json``, the measurement inputs, for ``pyverify diagnose
  --checkpoint ... --inputs`` (all git-ignored).

Runs go ``jobs`` at a time in worker processes of one thread each, the longest
first, so a run's numbers do not depend on ``jobs``.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import platform
import queue
import time
from pathlib import Path
from typing import Any

import torch

from pyverify.collapse.config import RUNS, RunConfig
from pyverify.collapse.corpus import load_corpus
from pyverify.collapse.inputs import INPUTS_FILE, final_inputs, write_inputs
from pyverify.collapse.ngram import ngram_losses
from pyverify.collapse.train import (
    CHECKPOINT,
    INIT,
    TrainingDivergedError,
    load_checkpoint,
    train_run,
)
from pyverify.errors import InputValueError
from pyverify.measure import as_float64, load_model, measure_final
from pyverify.measure.decoding import time_per_token
from pyverify.output import Progress, write_json

__all__ = ["RESULT_FILE", "TIMINGS_FILE", "baseline", "run_collapse"]

RESULT_FILE = "collapse.json"
TIMINGS_FILE = "timings.json"
FINAL_FILE = "final.json"
TIMING_FILE = "timing.json"
FINAL_VERSION = 3
"""Version of the final measurements; a saved ``final.json`` of another is redone on
``--resume`` (from the finished checkpoint, without retraining). 2: the causal
validation loss was added after the first full run showed that the teacher-forced
loss sees later tokens through G. 3: one measurement path (:mod:`pyverify.measure`):
the online contract and the N1 cache contract added."""


def baseline(cfg: RunConfig) -> dict[str, Any]:
    """The n-gram baseline on the model's validation windows (:mod:`~pyverify.collapse.ngram`)."""
    corpus = load_corpus(cfg.corpus)
    val = corpus.windows(cfg.n_val, cfg.seq + 1, phase=0.5).numpy()
    losses = ngram_losses(corpus.train, val, cfg.ngram_max, vocab=corpus.vocab)
    best = min(range(len(losses)), key=losses.__getitem__)
    return {
        "model": "Witten-Bell interpolated byte n-gram, train split, same validation windows",
        "val_loss_by_order": losses,
        "best_order": best + 1,
        "val_loss": losses[best],
    }


def _final(model: Any, cfg: RunConfig, corpus: Any, ckpt_dir: Path) -> tuple[dict, dict]:
    fin = final_inputs(cfg, corpus)
    init64 = load_model(ckpt_dir / INIT)
    final = measure_final(as_float64(model), fin, init64)
    timing = time_per_token(model, fin.prompts[0], cfg.n_new)
    return final, timing


def _one_run(
    name: str, cfg: RunConfig, out_dir: Path, resume: bool, stop_after: int | None, threads: int, q
) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
    """Train and measure one run (in a worker or in-process); ``(name, entry, timing)``."""
    torch.set_num_threads(threads)
    run = RUNS[name]
    ckpt_dir = out_dir / "checkpoints" / name
    final_f, timing_f = ckpt_dir / FINAL_FILE, ckpt_dir / TIMING_FILE
    stamp = {"settings": cfg.to_dict(), "run": run.to_dict(), "final_version": FINAL_VERSION}
    if resume and final_f.is_file() and timing_f.is_file():
        saved = json.loads(final_f.read_text())
        if saved.get("stamp") == stamp:
            if q is not None:
                q.put((name, cfg.run_steps(run), float("nan")))
            return name, saved["entry"], json.loads(timing_f.read_text())
    earlier = 0.0  # training time of earlier sessions (a resumed run keeps its total)
    if resume and timing_f.is_file():
        earlier = float(json.loads(timing_f.read_text()).get("train_and_measure_s", 0.0))
    corpus = load_corpus(cfg.corpus)
    t1 = time.perf_counter()
    cb = None if q is None else (lambda s, loss: q.put((name, s, loss)))
    try:
        model, history = train_run(
            cfg, run, corpus, ckpt_dir, resume=resume, stop_after=stop_after, on_step=cb
        )
    except TrainingDivergedError as exc:  # a finding, recorded; the other runs go on
        ckpt = ckpt_dir / CHECKPOINT
        hist = load_checkpoint(ckpt)["trainer"]["history"] if ckpt.is_file() else []
        entry = {"spec": run.to_dict(), "history": hist, "diverged": str(exc)}
        write_json(final_f, {"stamp": stamp, "entry": entry})
        write_json(timing_f, {"train_and_measure_s": time.perf_counter() - t1})
        return name, entry, {"train_and_measure_s": time.perf_counter() - t1}
    t2 = time.perf_counter()
    entry: dict[str, Any] = {"spec": run.to_dict(), "history": history}
    if stop_after is not None and stop_after < cfg.run_steps(run):
        return name, entry, None
    final, timing = _final(model, cfg, corpus, ckpt_dir)
    entry.update(final)
    timing = {
        "train_and_measure_s": earlier + t2 - t1,
        "final_s": time.perf_counter() - t2,
        **timing,
    }
    write_json(final_f, {"stamp": stamp, "entry": entry})
    write_json(timing_f, timing)
    return name, entry, timing


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def run_collapse(
    cfg: RunConfig,
    out_dir: Path,
    *,
    runs: tuple[str, ...] = tuple(RUNS),
    resume: bool = False,
    jobs: int = 1,
    threads: int = 1,
    stop_after: int | None = None,
    progress: bool = True,
    log: Progress | None = None,
) -> dict[str, Any]:
    """Run the study; return the deterministic result (also written to disk).

    Parameters
    ----------
    cfg : RunConfig
        Settings (:func:`~pyverify.collapse.config.full_config` by default in the CLI).
    out_dir : pathlib.Path
        Output folder.
    runs : tuple of str
        Names from :data:`~pyverify.collapse.config.RUNS`.
    resume : bool
        Continue each run from its checkpoint (finished runs are not redone).
    jobs : int
        Runs trained at once, each in a worker process of ``threads`` threads
        (1: in this process).
    threads : int
        ``torch.set_num_threads`` per run (numbers are reproducible for a fixed count).
    stop_after : int, optional
        Stop every run after this many steps (interruption test); nothing
        final is written then.
    progress : bool
        Show a rich progress bar.
    log : callable, optional
        Receives one line per phase.

    Returns
    -------
    dict
        The content of ``collapse.json``.
    """
    cfg.validate()
    for r in runs:
        if r not in RUNS:
            raise InputValueError(f"--run: unknown run {r!r} (known: {', '.join(RUNS)})")
    if jobs < 1 or threads < 1:
        raise InputValueError("--jobs and --threads must be >= 1")
    say = log or (lambda _m: None)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    load_before = _loadavg()
    say("collapse: n-gram baseline")
    (out_dir / "checkpoints").mkdir(exist_ok=True)
    write_inputs(out_dir / "checkpoints" / INPUTS_FILE, cfg, load_corpus(cfg.corpus))
    result: dict[str, Any] = {
        "study": "ablation",
        "settings": cfg.to_dict(),
        "baseline": baseline(cfg),
        "runs": {},
    }
    timings: dict[str, Any] = {
        "jobs": jobs,
        "threads_per_run": threads,
        "host": platform.node(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "loadavg_before": load_before,
        "runs": {},
    }
    done: dict[str, tuple[dict | None, dict | None]] = {}
    from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as Bar

    with Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("loss {task.fields[loss]:.3f}"),
        TimeRemainingColumn(),
        disable=not progress,
        transient=False,
    ) as bar:
        tasks = {
            n: bar.add_task(f"collapse {n}", total=cfg.run_steps(RUNS[n]), loss=float("nan"))
            for n in runs
        }

        def show(msg: tuple[str, int, float]) -> None:
            bar.update(tasks[msg[0]], completed=msg[1], loss=msg[2])

        if jobs == 1:
            before = torch.get_num_threads()  # in-process: leave the caller's count as it was
            try:
                for n in runs:
                    _, entry, timing = _one_run(n, cfg, out_dir, resume, stop_after, threads, None)
                    done[n] = (entry, timing)
                    steps = cfg.run_steps(RUNS[n])
                    bar.update(tasks[n], completed=steps if stop_after is None else stop_after)
            finally:
                torch.set_num_threads(before)
        else:
            ctx = mp.get_context("spawn")
            with ctx.Manager() as mgr, ctx.Pool(jobs) as pool:
                q = mgr.Queue()
                longest_first = sorted(runs, key=lambda n: -cfg.run_steps(RUNS[n]))
                pending = [
                    pool.apply_async(_one_run, (n, cfg, out_dir, resume, stop_after, threads, q))
                    for n in longest_first  # the 3x runs do not start last
                ]
                while not all(p.ready() for p in pending):
                    try:
                        show(q.get(timeout=0.5))
                    except queue.Empty:
                        pass
                for p in pending:
                    n, entry, timing = p.get()  # re-raises a worker's error here
                    done[n] = (entry, timing)
    for n in runs:
        entry, timing = done[n]
        result["runs"][n] = entry
        if timing is not None:
            timings["runs"][n] = timing
    if stop_after is not None and stop_after < max(cfg.run_steps(RUNS[n]) for n in runs):
        return result
    timings["total_s"] = time.perf_counter() - t0
    timings["loadavg_after"] = _loadavg()
    old_f = out_dir / TIMINGS_FILE
    if resume and old_f.is_file():  # the sessions before this one, as they were measured
        old = json.loads(old_f.read_text())
        keep = ("total_s", "loadavg_before", "loadavg_after", "jobs")
        timings["earlier_sessions"] = [
            *old.get("earlier_sessions", []),
            {k: old[k] for k in keep if k in old},
        ]
    write_json(out_dir / RESULT_FILE, result)
    write_json(out_dir / TIMINGS_FILE, timings)
    from pyverify.collapse.plots import draw_all

    draw_all(out_dir)
    say(f"collapse: wrote {out_dir / RESULT_FILE} and figures in {timings['total_s']:.0f} s")
    return result
