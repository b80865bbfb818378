"""Benchmarks of the optimised kernels (``pyverify bench``).

Each row times "ours" and a baseline in ONE run, interleaved (ours, baseline,
ours, ...), after warm-up, and reports the ratio of the medians:

* P1: collapsed PLGA (SDPA on ``Q_rot G``) / plain torch SDPA, same shapes
  (B = 1..8, H = 14, S = 512..4096, dk = 64); target <= 1.10 on CPU fp32,
  <= 1.05 on GPU bf16.
* P2: uncached PLGA layer, ours / a faithful re-creation of the author's
  ``pldr_model_v510`` layer (shared learner); targets 0.9 (S <= 512) and 0.5
  (S >= 1024); peak extra memory of one call beside the time;
* L: the metric learner's FLOP rate against the measured fp32 GEMM rate of the
  same matrix sizes (target >= 60 %);
* P3: one G-cached decode step, ours / the author-style step (KV copied by
  ``torch.cat``), target 0.7; and ours / a full recompute of the sequence
  (target 1/3);
* Gc: G-cached layer / plain SDPA, target ``1 + 1.5 dk / S``;
* T: the study's training step / the author's trainer's step, same model and batch,
  target 1.0 (:mod:`pyverify.bench.train_rows`; skipped without ``PYVERIFY_AUTHOR_SRC``).

The rows against the author's formulation live in :mod:`pyverify.bench.author_rows`,
the callables each row times in :mod:`pyverify.bench.cases` (``python -m
pyverify.bench.breakdown`` profiles the same ones), the row format in
:mod:`pyverify.bench.rows`, the timing in :mod:`pyverify.bench.timing`. The CPU and
what torch dispatches on it (:mod:`pyverify.bench.machine`) are recorded in
``meta.machine``: the ratios depend on them. The machine's load average (1 min) before
and after the run is recorded in ``meta``; figures taken while other work shared the
cores are marked so by ``pyverify report``. Timings never enter pass/fail tests; this
module only measures.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
from typing import Any

import torch

from pyverify.bench.machine import machine_facts
from pyverify.bench.rows import DK, H, fmt_row, make_row
from pyverify.bench.timing import time_pair
from pyverify.errors import InputValueError
from pyverify.host import load_average
from pyverify.output import Progress

__all__ = ["check_device", "run_bench"]


def _bench_p1(device, dtype, shapes, reps, progress, rows):
    from pyverify.bench.cases import collapsed_case

    target = 1.10 if device.type == "cpu" else 1.05
    for B, S in shapes:
        fns = collapsed_case(device, dtype, B, S)
        o, b = time_pair(fns["ours"], fns["sdpa"], device, reps=reps, max_seconds=20)
        rows.append(make_row("P1 collapsed/SDPA", [B, H, S, DK], dtype, device, o, b, target))
        progress(fmt_row(rows[-1]))


def check_device(device: str) -> torch.device:
    """Parse ``--device``: ``cpu`` or an available ``cuda[:N]``; else a one-line ValueError."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        msg = f"--device {device!r} is not a torch device; use cpu or cuda[:N]"
        raise InputValueError(msg) from exc
    if dev.type not in ("cpu", "cuda"):
        msg = f"--device {device!r} is not supported by pyverify bench; use cpu or cuda"
        raise InputValueError(msg)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InputValueError(f"--device {device!r} requested but CUDA is not available")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise InputValueError(
                f"--device {device!r}: only {torch.cuda.device_count()} CUDA device(s)"
            )
    return dev


def run_bench(
    device: str = "cpu",
    quick: bool = False,
    out_json: pathlib.Path | None = None,
    progress: Progress | None = None,
    num_threads: int | None = None,
) -> dict[str, Any]:
    """Run benchmarks P1-P3 and return (and optionally save) the results.

    Parameters
    ----------
    device : str, default "cpu"
        Torch device ("cpu", "cuda", "cuda:0").
    quick : bool, default False
        A small subset of shapes (about a minute on 2 CPU cores).
    out_json : pathlib.Path, optional
        Write the result there as JSON.
    progress : callable, optional
        Called with a line of text per finished row.
    num_threads : int, optional
        CPU threads for the run (``torch.set_num_threads``; restored after).
        On a machine shared with other jobs, 1 thread gives steadier numbers:
        an oversubscribed OpenMP pool can add a scheduler quantum (~10 ms) to
        every parallel op.

    Returns
    -------
    dict
        ``{"meta": {...}, "rows": [{benchmark, shape, dtype, device, ours_ms,
        baseline_ms, ratio, target, meets_target}, ...]}`` (JSON-serialisable).
    """
    dev = check_device(device)
    say = progress or (lambda _s: None)
    old_threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        return _run(dev, quick, out_json, say)
    finally:
        torch.set_num_threads(old_threads)


def _run(dev, quick, out_json, say) -> dict[str, Any]:
    from pyverify.bench import author_rows as br

    rows: list[dict[str, Any]] = []
    load_before = load_average()
    p1_dtype = torch.float32 if dev.type == "cpu" else torch.bfloat16
    f32 = torch.float32
    if quick:
        p1 = [(1, 512)]
        p2 = [(1, 256), (4, 256), (1, 1024)]
        learner = [1]
        p3 = [(1, 256, 2), (4, 256, 2)]
        gc = [(1, 512)]
        reps = 5
    else:
        p1 = [(1, 512), (4, 512), (8, 512), (1, 1024), (4, 1024), (1, 2048), (2, 2048), (1, 4096)]
        # (4, 2048) left out: the author's S x S passes would hold ~4 GB at once
        p2 = [(B, S) for S in (256, 512, 1024) for B in (1, 4)] + [(1, 2048)]
        learner = [1, 4]
        p3 = [(1, 512, 2), (4, 512, 2)]
        gc = [(1, 512), (4, 512), (1, 2048)]
        reps = 9
        if dev.type == "cuda":
            p1 += [(8, 1024), (8, 2048), (4, 4096), (8, 4096)]
    say("benchmark | shape | dtype | device | ours_ms | baseline_ms | ratio | target | meets")
    _bench_p1(dev, p1_dtype, p1, reps, say, rows)
    if dev.type == "cuda":
        _bench_p1(dev, f32, p1[:2], reps, say, rows)
    args = (reps, say, rows, make_row, time_pair)
    br.bench_p2_author(dev, f32, p2, *args)
    br.bench_learner(dev, f32, learner, *args)
    br.bench_p3_author(dev, f32, p3, *args)
    br.bench_gcached(dev, f32, gc, *args)
    from pyverify.bench.train_rows import bench_train_step

    skipped = [m for m in [bench_train_step(dev, reps, say, rows, make_row, time_pair)] if m]
    result = {
        "meta": {
            "torch": torch.__version__,
            "device": str(dev),
            "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
            "threads": torch.get_num_threads(),
            "platform": platform.platform(),
            "quick": quick,
            "reps": reps,
            "method": "median of interleaved repetitions after warm-up",
            "cpu_count": os.cpu_count(),
            "load_before": load_before,
            "load_after": load_average(),
            "skipped": skipped,
            "machine": machine_facts(dev),
            # one decode step implementation: eager torch (docs/bench-notes.md says why
            # there is no compiled one)
            "decode_step": "eager (pyverify.kernels.decode)",
        },
        "rows": rows,
    }
    if out_json is not None:
        out_json = pathlib.Path(out_json)
        out_json.parent.mkdir(parents=True, exist_ok=True)
        out_json.write_text(json.dumps(result, indent=2))
    return result
