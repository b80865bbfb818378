"""Trends of the study's series: the log-slope per 1,000 steps with a bootstrap interval over heads.

Method (fixed before the first full run of the study; not tuned toward a result):

* A **series** is one quantity of one run measured at every record: the
  suite's order parameter of A, A_LM, A_P or G at each probe length S (one
  unit per layer x head), the author's pairwise form (RMS and signed-mean,
  one unit per prompt x layer), or the row energy of A (per layer x head).
* The **fit window** is the records at or after :data:`TREND_FROM` of the run's
  last step (at least :data:`MIN_POINTS` records). Each unit gets the ordinary
  least-squares slope of ``ln(max(value, LOG_FLOOR))`` against ``step / 1000``.
* The **trend** is the mean of the units' slopes with a percentile bootstrap
  interval at level :data:`TREND_CI`: :data:`BOOTSTRAP` resamples of the units
  with replacement, drawn by a SplitMix64 generator seeded with
  :data:`TREND_SEED` (pure Python, so every machine draws the same indices),
  the interval the ``(1 - level) / 2`` and ``(1 + level) / 2`` order statistics
  of the resampled means. A difference of two runs' trends resamples each run's
  units independently (two streams).
* The signed-mean form is **ill-conditioned** where its denominator is below
  :data:`SIGNED_MEAN_FLOOR` of the pair's RMS scale; such a unit is left out of
  the fit (counted), and a series with no well-conditioned unit has no trend.

What the interval says: how the heads' slopes spread around their mean. It
treats heads as exchangeable draws and ignores the noise of each unit's fit
and the correlation between consecutive records (the same fixed probes at
every step), so it is a statement about this model's heads, not a sampling
interval over training runs; with few heads it is narrow. A single run and a
single seed stand behind every trend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from pyverify.claims.stats import flat

__all__ = [
    "BOOTSTRAP",
    "LOG_FLOOR",
    "MIN_POINTS",
    "SIGNED_MEAN_FLOOR",
    "TREND_CI",
    "TREND_FROM",
    "TREND_SEED",
    "Difference",
    "Trend",
    "difference",
    "run_trends",
    "series_getters",
    "signed_mean_conditioned",
    "trend",
]

TREND_FROM = 0.25
"""The fit window starts at this fraction of the run's last step. A trend is about
where training goes, not how it starts: the first quarter holds the warm-up and
the first fast fall of the loss, where every operator moves with the embedding.
Fixed before the first full run (the runs' schedules are stretched with their
length, so the window is the same part of every schedule)."""
MIN_POINTS = 3
"""Records needed in the fit window (two points always fit a line exactly)."""
LOG_FLOOR = 1e-18
"""Values are floored here before the log: two orders below float64's relative
resolution (eps = 2.2e-16), so a bitwise 0 is a finite, very low point (the
figures draw it at the same height)."""
TREND_CI = 0.95
"""Level of the trend's bootstrap interval (the conventional 95 %)."""
BOOTSTRAP = 2000
"""Bootstrap resamples (the percentile interval's order statistics at 2.5 % and
97.5 % then rest on 50 resamples each side)."""
TREND_SEED = 20_260_000
"""Seed of the resampling (any fixed value; fixed before the first full run)."""
SIGNED_MEAN_FLOOR = 1e-3
"""The signed-mean form is ill-conditioned where its denominator ``(|mean x1| + |mean
x2|) / 2`` is below this fraction of the pair's RMS scale ``(rms x1 + rms x2) / 2``.
Reason: the signed-mean form is the RMS form times RMS scale / denominator, so
below this floor a tensor at the collapse cut-off (1e-6, the paper's range) reads
at or above the "moving" cut-off (1e-3) in the signed-mean form: the form can no
longer tell the phases apart. The floor is the ratio of the two cut-offs of
:mod:`pyverify.claims.thresholds` (``COLLAPSED / MOVING``), fixed before the first
full run. A LayerNorm output (A) has a mean that is 0 up to rounding, so its
signed-mean form is ill-conditioned by construction."""

_MASK64 = (1 << 64) - 1


@lru_cache(maxsize=64)
def _indices(n: int, stream: int) -> np.ndarray:
    """``(BOOTSTRAP, n)`` resampling indices in ``[0, n)`` from SplitMix64 (deterministic)."""
    state = (TREND_SEED * 0x9E3779B97F4A7C15 + stream) & _MASK64
    out = np.empty(BOOTSTRAP * n, dtype=np.int64)
    for i in range(BOOTSTRAP * n):
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        z ^= z >> 31
        out[i] = (z * n) >> 64
    return out.reshape(BOOTSTRAP, n)


def _interval(means: np.ndarray) -> tuple[float, float]:
    s = np.sort(means)
    lo = s[math.floor((1 - TREND_CI) / 2 * BOOTSTRAP)]
    hi = s[math.ceil((1 + TREND_CI) / 2 * BOOTSTRAP) - 1]
    return float(lo), float(hi)


@dataclass(frozen=True)
class Trend:
    """One series' trend: mean log-slope per 1,000 steps over its units, with its interval.

    ``status`` is ``"ok"``, ``"not measured"`` (a record lacks the series),
    ``"too few records"``, ``"too few series"`` (fewer than 2 units) or
    ``"ill-conditioned"`` (no well-conditioned unit); ``slope``, ``lo``, ``hi``
    are None unless ``"ok"``.
    """

    series: str
    status: str
    units: int = 0
    excluded: int = 0
    points: int = 0
    first_step: int = 0
    last_step: int = 0
    slope: float | None = None
    lo: float | None = None
    hi: float | None = None
    slopes: tuple[float, ...] = ()

    @property
    def direction(self) -> str:
        """``falling`` / ``rising`` (the interval excludes 0), ``no trend``, or the status."""
        if self.status != "ok" or self.lo is None or self.hi is None:
            return self.status
        return "falling" if self.hi < 0 else "rising" if self.lo > 0 else "no trend"

    def text(self) -> str:
        """``slope [lo, hi] per 1,000 steps (n units, steps a-b)`` or the status."""
        if self.status != "ok":
            return self.status
        ex = f", {self.excluded} ill-conditioned left out" if self.excluded else ""
        return (
            f"{self.slope:+.3g} [{self.lo:+.3g}, {self.hi:+.3g}] per 1,000 steps "
            f"({self.units} series{ex}, steps {self.first_step}-{self.last_step})"
        )


Getter = Callable[[dict[str, Any]], "list[tuple[float, bool]] | None"]
"""A record -> its units' ``(value, usable)`` (None when the record lacks the series)."""


def signed_mean_conditioned(pair: dict[str, Any]) -> list[tuple[float, bool]]:
    """The signed-mean form's values with whether each is well-conditioned (flat, prompt x layer).

    Well-conditioned: ``signed_mean_denominator`` >= :data:`SIGNED_MEAN_FLOOR` x the RMS
    scale, the scale being ``numerator / rms`` (the RMS form's denominator). A study saved
    before the parts were recorded has the two forms only; their ratio is the same number
    (RMS form / signed-mean form = denominator / RMS scale). Where the numerator is 0 both
    forms are exactly 0, a well-defined value.
    """
    rms, sm = flat(pair["rms"]), flat(pair["signed_mean"])
    if "numerator" in pair and "signed_mean_denominator" in pair:
        num, den = flat(pair["numerator"]), flat(pair["signed_mean_denominator"])
        rel = [d * r / n if n > 0 else math.inf for n, d, r in zip(num, den, rms, strict=True)]
    else:
        rel = [r / s if s != 0 else math.inf for r, s in zip(rms, sm, strict=True)]
    return [(s, x >= SIGNED_MEAN_FLOOR) for s, x in zip(sm, rel, strict=True)]


def series_getters(rec: dict[str, Any]) -> dict[str, Getter]:
    """Every series of a record's schema, by name (probe lengths from ``rec``)."""

    def suite(S: str, t: str) -> Getter:
        def get(r: dict[str, Any]) -> list[tuple[float, bool]] | None:
            grid = r.get("order_parameter", {}).get(S, {}).get(t)
            return None if grid is None else [(x, True) for x in flat(grid)]

        return get

    def pairwise(t: str, form: str) -> Getter:
        def get(r: dict[str, Any]) -> list[tuple[float, bool]] | None:
            pair = r.get("pairwise_order", {}).get(t)
            if pair is None:
                return None
            if form == "signed_mean":
                return signed_mean_conditioned(pair)
            return [(x, True) for x in flat(pair[form])]

        return get

    def row_energy(r: dict[str, Any]) -> list[tuple[float, bool]] | None:
        grid = r.get("row_energy_A")
        return None if grid is None else [(x, True) for x in flat(grid)]

    def sigma_ratio(r: dict[str, Any]) -> list[tuple[float, bool]] | None:
        grid = r.get("sigma2_over_sigma1_A")
        return None if grid is None else [(x, True) for x in flat(grid)]

    keys = list(rec.get("order_parameter", {}))
    S_all = sorted(keys, key=int) if all(k.isdigit() for k in keys) else keys
    out: dict[str, Getter] = {}
    for t in ("G", "A", "A_LM", "A_P"):
        for S in S_all:
            out[f"{t} (S={S})"] = suite(S, t)
    for t in ("G", "A", "A_LM", "A_P"):
        out[f"{t} pairwise RMS"] = pairwise(t, "rms")
        out[f"{t} pairwise signed-mean"] = pairwise(t, "signed_mean")
    out["row energy A"] = row_energy
    out["sigma2/sigma1 A"] = sigma_ratio
    return out


def trend(history: Sequence[dict[str, Any]], name: str, get: Getter) -> Trend:
    """The trend of one series over a run's history (module docstring)."""
    if not history:
        return Trend(name, "too few records")
    start = TREND_FROM * history[-1]["step"]
    window = [r for r in history if r["step"] >= start]
    values = [get(r) for r in window]
    if any(v is None for v in values):
        return Trend(name, "not measured")
    if len(window) < MIN_POINTS:
        return Trend(name, "too few records", points=len(window))
    n = len(values[0])  # type: ignore[arg-type]
    usable = [all(v[i][1] for v in values) for i in range(n)]  # type: ignore[index]
    keep = [i for i in range(n) if usable[i]]
    base = {"points": len(window), "first_step": window[0]["step"],
            "last_step": window[-1]["step"], "excluded": n - len(keep)}  # fmt: skip
    if not keep:
        return Trend(name, "ill-conditioned", units=0, **base)
    if len(keep) < 2:
        return Trend(name, "too few series", units=len(keep), **base)
    x = np.array([r["step"] / 1000.0 for r in window])
    y = np.log(np.maximum(np.array([[v[i][0] for i in keep] for v in values]), LOG_FLOOR))
    xc = x - x.mean()
    slopes = (xc @ (y - y.mean(axis=0))) / (xc @ xc)
    means = slopes[_indices(len(keep), 0)].mean(axis=1)
    lo, hi = _interval(means)
    return Trend(name, "ok", units=len(keep), slope=float(slopes.mean()), lo=lo, hi=hi,
                 slopes=tuple(float(s) for s in slopes), **base)  # fmt: skip


def run_trends(history: Sequence[dict[str, Any]]) -> dict[str, Trend]:
    """Every series' trend of one run (names from :func:`series_getters`)."""
    if not history:
        return {}
    return {name: trend(history, name, get) for name, get in series_getters(history[0]).items()}


@dataclass(frozen=True)
class Difference:
    """Mean slope of run ``b`` minus that of run ``a`` with its bootstrap interval (or a status)."""

    status: str
    diff: float | None = None
    lo: float | None = None
    hi: float | None = None

    @property
    def direction(self) -> str:
        """``higher`` / ``lower`` (``b`` than ``a``; interval excludes 0), ``same``, or status."""
        if self.status != "ok" or self.lo is None or self.hi is None:
            return self.status
        return "higher" if self.lo > 0 else "lower" if self.hi < 0 else "same"

    def text(self) -> str:
        """``diff [lo, hi]`` or the status."""
        if self.status != "ok":
            return self.status
        return f"{self.diff:+.3g} [{self.lo:+.3g}, {self.hi:+.3g}]"


def difference(a: Trend, b: Trend) -> Difference:
    """``b``'s mean slope minus ``a``'s, units resampled independently (two streams)."""
    if a.status != "ok" or b.status != "ok":
        return Difference(a.status if a.status != "ok" else b.status)
    sa, sb = np.array(a.slopes), np.array(b.slopes)
    means = sb[_indices(len(sb), 2)].mean(axis=1) - sa[_indices(len(sa), 1)].mean(axis=1)
    lo, hi = _interval(means)
    return Difference("ok", float(sb.mean() - sa.mean()), lo, hi)
