"""``pyverify collapse``: train both regimes, measure, write JSON and figures.

Writes into ``out_dir`` (default ``reports/collapse/``):

* ``collapse.json`` -- settings and every deterministic number (byte-identical
  for the same settings on the same machine and thread count);
* ``timings.json`` -- wall times and decoding speed (not deterministic);
* ``*.png`` -- figures drawn from ``collapse.json`` alone
  (:func:`pyverify.collapse.plots.draw_all`, also ``--plots-only``);
* ``checkpoints/<regime>/checkpoint.pt`` -- for ``--resume`` (not committed).
"""

from __future__ import annotations

import platform
import time
from pathlib import Path
from typing import Any

import torch

from pyverify.collapse.config import REGIMES, RunConfig
from pyverify.collapse.corpus import load_corpus
from pyverify.collapse.fidelity import fidelity, time_per_token
from pyverify.collapse.measure import as_float64, deductive_stack, order_vs_length
from pyverify.collapse.train import train_regime
from pyverify.errors import InputValueError
from pyverify.output import Progress, write_json

__all__ = ["RESULT_FILE", "TIMINGS_FILE", "run_collapse"]

RESULT_FILE = "collapse.json"
TIMINGS_FILE = "timings.json"


def _final(model: torch.nn.Module, cfg: RunConfig, corpus: Any) -> tuple[dict, dict]:
    m64 = as_float64(model)
    probes = corpus.windows(cfg.n_probe, cfg.seq, phase=0.0)
    by_len = {S: corpus.windows(cfg.n_probe, S, phase=0.0) for S in cfg.s_sweep}
    mean_G = [g.mean(dim=0) for g in deductive_stack(m64, probes)["G"].unbind(dim=1)]
    prompts = corpus.windows(cfg.n_prompts, cfg.prompt_len, phase=0.25)
    fid = fidelity(m64, prompts, cfg.n_new, mean_G)
    timing = time_per_token(model, prompts, cfg.n_new)
    return {"order_vs_length": order_vs_length(m64, by_len), "fidelity": fid}, timing


def run_collapse(
    cfg: RunConfig,
    out_dir: Path,
    *,
    regimes: tuple[str, ...] = ("critical", "subcritical"),
    resume: bool = False,
    threads: int = 1,
    stop_after: int | None = None,
    progress: bool = True,
    log: Progress | None = None,
) -> dict[str, Any]:
    """Run the experiment; return the deterministic result (also written to disk).

    Parameters
    ----------
    cfg : RunConfig
        Settings (:func:`~pyverify.collapse.config.full_config` by default in the CLI).
    out_dir : pathlib.Path
        Output folder.
    regimes : tuple of str
        Names from :data:`~pyverify.collapse.config.REGIMES`.
    resume : bool
        Continue each regime from its checkpoint.
    threads : int
        ``torch.set_num_threads`` (the numbers are reproducible for a fixed count).
    stop_after : int, optional
        Stop every regime after this many steps (interruption test); nothing
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
    for r in regimes:
        if r not in REGIMES:
            raise InputValueError(f"unknown regime {r!r} (known: {', '.join(REGIMES)})")
    torch.set_num_threads(threads)
    say = log or (lambda _m: None)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    corpus = load_corpus()
    result: dict[str, Any] = {"settings": cfg.to_dict(), "regimes": {}}
    timings: dict[str, Any] = {
        "threads": threads,
        "host": platform.node(),
        "torch": torch.__version__,
        "regimes": {},
    }
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
        for name in regimes:
            regime = REGIMES[name]
            task = bar.add_task(f"collapse {name}", total=cfg.steps, loss=float("nan"))
            t1 = time.perf_counter()
            model, history = train_regime(
                cfg,
                regime,
                corpus,
                out_dir / "checkpoints" / name,
                resume=resume,
                stop_after=stop_after,
                on_step=lambda s, loss, task=task: bar.update(task, completed=s, loss=loss),
            )
            t2 = time.perf_counter()
            entry: dict[str, Any] = {
                "peak_lr": regime.peak_lr,
                "warmup_frac": regime.warmup_frac,
                "history": history,
            }
            if stop_after is None or stop_after >= cfg.steps:
                say(f"collapse {name}: final measurements and cache fidelity")
                final, timing = _final(model, cfg, corpus)
                entry.update(final)
                timings["regimes"][name] = {
                    "train_s": t2 - t1,
                    "final_s": time.perf_counter() - t2,
                    **timing,
                }
            result["regimes"][name] = entry
    if stop_after is not None and stop_after < cfg.steps:
        return result
    timings["total_s"] = time.perf_counter() - t0
    write_json(out_dir / RESULT_FILE, result)
    write_json(out_dir / TIMINGS_FILE, timings)
    from pyverify.collapse.plots import draw_all

    draw_all(out_dir)
    say(f"collapse: wrote {out_dir / RESULT_FILE} and figures in {timings['total_s']:.0f} s")
    return result
