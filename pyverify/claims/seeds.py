"""One row from several training seeds: never a pooled verdict, intervals over seeds.

A regime that trains every run with several seeds (:mod:`pyverify.collapse.regimes`)
has one saved study per seed; each is judged by the same rules, seed by seed
(:func:`pyverify.claims.ledger.build_ledger`). :func:`combine_seeds` makes one row
of each claim from those per-seed rows:

* the outcome is the seeds' common outcome (with its reason) when every seed gives
  the same one, else **inconclusive (seeds disagree)**, with each seed's outcome
  in ``seeds`` (and in the row's JSON): a row is never decided by pooling seeds;
* a decisive outcome (anything but inconclusive or true by construction) on fewer
  than :data:`MIN_SEEDS` seeds is **inconclusive (fewer than 3 seeds)**, the
  seed's outcome kept in ``seeds`` (E5 is exempt: its samples are its timing
  repeats, not trainings);
* the numbers are every seed's own (``seed s: ...``) and, for each figure every
  seed reports, its spread over seeds: ``mean [lo, hi] (min .. max over n seeds)``,
  ``[lo, hi]`` the 95 % Student-t interval of the mean over seeds. The seeds are
  the independent samples of training; the heads inside one seed are not, so an
  interval over heads (what a single-seed row shows) is never taken over seeds.
  A figure given as ``min / median / max`` over heads enters by its median; a
  trend's log-slope enters by its point estimate (its interval over heads stays
  in the seed's own numbers).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping, Sequence

from pyverify.claims.verdict import (
    BY_CONSTRUCTION,
    FEW_SEEDS,
    INCONCLUSIVE,
    SEEDS_DISAGREE,
    Verdict,
)

__all__ = ["MIN_SEEDS", "SEED_EXEMPT", "T975", "combine_seeds", "over_seeds", "seed_value"]

MIN_SEEDS = 3
"""Training seeds a decisive outcome needs (the project's standard for a deciding run)."""
SEED_EXEMPT = ("E5",)
"""Rows whose samples are not trainings (E5: interleaved timing repeats of one model)."""

T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
"""Student's t 97.5 % quantiles for 1..10 degrees of freedom (two-sided 95 %)."""

_M3 = re.compile(r"^\s*(\S+) / (\S+) / (\S+)\s*$")
_LEAD = re.compile(r"^\s*([+-]?\d+(?:\.\d*)?(?:e[+-]?\d+)?)")

Number = float | int | str


def seed_value(x: Number) -> float | None:
    """The one figure a seed contributes, or None when there is none.

    A number itself; the median of ``lo / med / hi``; a trend's point estimate (the
    leading number of its text).
    """
    if isinstance(x, bool):
        return None
    if isinstance(x, int | float):
        return float(x) if math.isfinite(x) else None
    m = _M3.match(x)
    text = m.group(2) if m else x
    lead = _LEAD.match(text)
    if lead is None:
        return None
    try:
        v = float(lead.group(1))
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def over_seeds(values: Sequence[float]) -> str:
    """``mean [lo, hi] (min .. max over n seeds)``: the t interval of the mean over seeds."""
    n = len(values)
    mean = statistics.fmean(values)
    if n < 2:
        return f"{mean:.3g} (one seed: no interval)"
    half = T975[min(n - 1, len(T975)) - 1] * statistics.stdev(values) / math.sqrt(n)
    return (
        f"{mean:.3g} [{mean - half:.3g}, {mean + half:.3g}] "
        f"({min(values):.3g} .. {max(values):.3g} over {n} seeds)"
    )


def _numbers(rows: Mapping[int, Verdict], attr: str) -> dict[str, Number]:
    out: dict[str, Number] = {}
    firsts = getattr(next(iter(rows.values())), attr)
    for key in firsts:
        vals = [seed_value(getattr(v, attr).get(key, "")) for v in rows.values()]
        if all(x is not None for x in vals) and len(vals) > 1:
            out[f"over seeds: {key}"] = over_seeds([x for x in vals if x is not None])
    for s, v in rows.items():
        out.update({f"seed {s}: {k}": x for k, x in getattr(v, attr).items()})
    return out


def _common(texts: Sequence[str]) -> str:
    """One text where the seeds agree, else each seed's (the rules write the same text)."""
    return texts[0] if len(set(texts)) == 1 else " | ".join(texts)


def combine_seeds(per_seed: Mapping[int, Sequence[Verdict]], scope: str = "") -> list[Verdict]:
    """One row per claim from each seed's rows (module docstring), in the first seed's order.

    ``scope``: the regime's scope, put before the rows' own (task, model, steps, seeds).
    """
    if not per_seed:
        return []
    seeds = sorted(per_seed)
    by_seed = {s: {v.claim: v for v in per_seed[s]} for s in seeds}
    out = []
    for claim in [v.claim for v in per_seed[seeds[0]]]:
        rows = {s: by_seed[s][claim] for s in seeds if claim in by_seed[s]}
        labels = {s: v.label for s, v in rows.items()}
        first = rows[seeds[0]]
        if len({(v.verdict, v.reason) for v in rows.values()}) == 1 and len(rows) == len(seeds):
            verdict, reason = first.verdict, first.reason
        else:
            verdict, reason = INCONCLUSIVE, SEEDS_DISAGREE
        decisive = verdict not in (INCONCLUSIVE, BY_CONSTRUCTION)
        if decisive and len(seeds) < MIN_SEEDS and claim not in SEED_EXEMPT:
            verdict, reason = INCONCLUSIVE, FEW_SEEDS
        mets = {v.premise_met for v in rows.values()}
        met = None if None in mets else (mets == {True})
        own_scope = _common([v.scope for v in rows.values()])
        out.append(
            Verdict(
                claim,
                verdict,
                f"{_common([v.decided_by for v in rows.values()])} "
                f"(seeds {', '.join(map(str, seeds))})",
                _common([v.rule for v in rows.values()]),
                _common([v.caveat for v in rows.values()]),
                _numbers(rows, "numbers"),
                scope=f"{scope}; {own_scope}" if scope and own_scope else scope or own_scope,
                premise=_common([v.premise for v in rows.values()]),
                premise_met=met,
                reason=reason,
                trend=_common([v.trend for v in rows.values()]),
                trend_numbers=_numbers(rows, "trend_numbers"),
                seeds={str(s): labels[s] for s in seeds if s in labels},
            )
        )
    return out
