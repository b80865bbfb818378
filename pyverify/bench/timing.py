"""Interleaved timing of two callables."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["time_pair"]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_pair(
    ours: Callable[[], Any],
    baseline: Callable[[], Any],
    device: torch.device,
    *,
    reps: int = 7,
    warmup: int = 2,
    max_seconds: float | None = None,
    grad: bool = False,
) -> tuple[float, float]:
    """Median wall times (ms) of two callables, measured interleaved.

    Parameters
    ----------
    ours, baseline : callable
        Zero-argument functions to time.
    device : torch.device
        Synchronised before and after each call on CUDA.
    reps : int, default 7
        Timed repetitions of each (interleaved: ours, baseline, ours, ...;
        the order alternates every repetition to cancel drift).
    warmup : int, default 2
        Untimed calls of each first.
    max_seconds : float, optional
        Stop after this many seconds of timing (at least 3 repetitions).
    grad : bool, default False
        Run with autograd (a training step); otherwise under ``torch.inference_mode``.

    Returns
    -------
    tuple of float
        ``(ours_ms, baseline_ms)`` medians.
    """
    with contextlib.nullcontext() if grad else torch.inference_mode():
        for _ in range(warmup):
            ours()
            baseline()
        _sync(device)
        t_o, t_b = [], []
        start = time.perf_counter()
        for r in range(reps):
            pair = ((ours, t_o), (baseline, t_b))
            for fn, acc in pair if r % 2 == 0 else pair[::-1]:
                _sync(device)
                t0 = time.perf_counter()
                fn()
                _sync(device)
                acc.append((time.perf_counter() - t0) * 1e3)
            if max_seconds is not None and r >= 2 and time.perf_counter() - start > max_seconds:
                break
    return statistics.median(t_o), statistics.median(t_b)
