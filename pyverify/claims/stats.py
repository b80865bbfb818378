"""Summaries of the saved per-layer x head results: min / median / max, never the worst only."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

__all__ = ["flat", "last", "mmm", "op_grid", "pair_values"]


def flat(grid: Any) -> list[float]:
    """All numbers of a nested list."""
    if isinstance(grid, (int, float)):
        return [float(grid)]
    out: list[float] = []
    for g in grid:
        out.extend(flat(g))
    return out


def mmm(values: Iterable[float]) -> tuple[float, float, float]:
    """``(min, median, max)``."""
    v = sorted(values)
    return v[0], statistics.median(v), v[-1]


def last(run: dict[str, Any]) -> dict[str, Any]:
    """The run's last measurement."""
    return run["history"][-1]


def op_grid(rec: dict[str, Any], tensor: str, S: int | str) -> list[float]:
    """The suite's per-layer x head order parameter of ``tensor`` at length ``S``, flat."""
    return flat(rec["order_parameter"][str(S)][tensor])


def pair_values(rec: dict[str, Any], tensor: str, form: str = "rms") -> list[float]:
    """The author's pairwise order parameter (all prompts x layers), flat."""
    return flat(rec["pairwise_order"][tensor][form])
