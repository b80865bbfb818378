"""Rows over training seeds: the seeds' common outcome or "seeds disagree", intervals over seeds."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import replace

import pytest
from fake_study import study, timings

from pyverify.claims.ledger import build_ledger
from pyverify.claims.regimes import regime_ledger, regimes_json, regimes_table
from pyverify.claims.seeds import MIN_SEEDS, T975, combine_seeds, over_seeds, seed_value
from pyverify.claims.verdict import (
    FEW_SEEDS,
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SEEDS_DISAGREE,
    SUPPORTED,
    Verdict,
)
from pyverify.collapse.regimes import REGIMES, Regime


def _row(verdict: str, x: float, claim: str = "E1", reason: str = "") -> Verdict:
    nums = {"G end median": x, "G end min/median/max": f"{x / 2:.3g} / {x:.3g} / {2 * x:.3g}"}
    trend = {"G log-slope": f"{-x:+.3g} [-1, +1] per 1,000 steps"}
    return Verdict(claim, verdict, "author", "rule", "", nums, scope="run author",
                   premise_met=True, reason=reason, trend_numbers=trend)  # fmt: skip


def test_agreeing_seeds_keep_their_outcome_and_show_an_interval_over_seeds():
    xs = [0.1, 0.2, 0.4]
    rows = combine_seeds({s: [_row(NOT_SUPPORTED, x)] for s, x in enumerate(xs)}, "regime r")
    (v,) = rows
    assert v.verdict == NOT_SUPPORTED and v.reason == ""
    assert v.seeds == {"0": NOT_SUPPORTED, "1": NOT_SUPPORTED, "2": NOT_SUPPORTED}
    mean, sd = statistics.fmean(xs), statistics.stdev(xs)
    half = T975[1] * sd / math.sqrt(3)  # t(0.975, 2 degrees of freedom) = 4.303
    assert v.numbers["over seeds: G end median"] == (
        f"{mean:.3g} [{mean - half:.3g}, {mean + half:.3g}] (0.1 .. 0.4 over 3 seeds)"
    )
    # a min/median/max over heads enters by its median, never by its heads
    assert v.numbers["over seeds: G end min/median/max"] == v.numbers["over seeds: G end median"]
    assert v.numbers["seed 2: G end median"] == 0.4  # every seed's own figures stay
    assert v.trend_numbers["over seeds: G log-slope"].startswith(f"{-mean:.3g} [")
    assert v.scope == "regime r; run author"
    assert v.to_json()["seeds"] == v.seeds


def test_disagreeing_seeds_give_no_pooled_verdict():
    per = {0: [_row(SUPPORTED, 1e-9)], 1: [_row(SUPPORTED, 1e-9)], 2: [_row(NOT_SUPPORTED, 0.1)]}
    (v,) = combine_seeds(per)
    assert (v.verdict, v.reason) == (INCONCLUSIVE, SEEDS_DISAGREE)
    assert v.seeds["2"] == NOT_SUPPORTED and v.seeds["0"] == SUPPORTED


def test_a_reason_is_part_of_the_outcome():
    a = _row(INCONCLUSIVE, 0.1, reason="between the cut-offs")
    b = _row(INCONCLUSIVE, 0.1, reason="premise absent")
    (v,) = combine_seeds({0: [a], 1: [a], 2: [b]})
    assert v.reason == SEEDS_DISAGREE


@pytest.mark.parametrize("n", [1, MIN_SEEDS - 1])
def test_a_decisive_outcome_needs_three_seeds_but_e5_does_not(n):
    (v,) = combine_seeds({s: [_row(SUPPORTED, 1e-9)] for s in range(n)})
    assert (v.verdict, v.reason) == (INCONCLUSIVE, FEW_SEEDS)
    assert v.seeds == {str(s): SUPPORTED for s in range(n)}
    (e5,) = combine_seeds({s: [_row(SUPPORTED, 2.5, claim="E5")] for s in range(n)})
    assert e5.verdict == SUPPORTED


def test_seed_value_reads_numbers_medians_and_trend_estimates():
    assert seed_value(0.5) == 0.5 and seed_value(3) == 3.0
    assert seed_value("0.1 / 0.25 / 0.9") == 0.25
    assert seed_value("+0.0305 [+0.00825, +0.0563] per 1,000 steps") == 0.0305
    assert seed_value("-1.5e-03 [-2e-3, -1e-3]") == -1.5e-3
    for bad in ("not measured", "3 of 32", True, float("nan")):
        assert seed_value(bad) in (None, 3.0)  # "3 of 32" keeps its count; the others none
    assert seed_value("not measured") is None and seed_value(True) is None
    assert over_seeds([0.5]) == "0.5 (one seed: no interval)"


def _regime(seeds: tuple[int, ...]) -> Regime:
    return replace(REGIMES["bytes"], name="fake", seeds=seeds)


def test_regime_json_keys_the_gate_by_run_then_seed_and_is_byte_stable():
    saved = {s: (study(val_loss=1.4 if s != 1 else 1.6), timings(2.5)) for s in (0, 1, 2)}
    lg = regime_ledger(_regime((0, 1, 2)), saved)
    js = regimes_json([lg])
    (r,) = js
    assert r["name"] == "fake" and r["seeds"] == [0, 1, 2]
    assert r["gate"]["passed"]["author"] == {"0": True, "1": False, "2": True}
    assert set(r["rows"]) == {v.claim for v in lg.rows}
    # seed 1's author loses to the n-gram: its rows are "not reproduced", the others decide
    assert r["rows"]["E1"] == f"{INCONCLUSIVE} ({SEEDS_DISAGREE})"
    text = json.dumps(js, sort_keys=True)
    # float-free: other measured numbers with the same outcomes give the same bytes
    moved = {s: (study(val_loss=1.41 if s != 1 else 1.62), timings(2.6)) for s in (0, 1, 2)}
    assert json.dumps(regimes_json([regime_ledger(_regime((0, 1, 2)), moved)]),
                      sort_keys=True) == text  # fmt: skip
    header, rows = regimes_table([lg, lg])
    assert header == ["row", "fake", "fake"] and rows[0][0] == "E1"


def test_per_seed_rows_are_the_single_seed_rules():
    """Each seed is judged by exactly the rules a single study gets (no pooled input)."""
    res = study()
    single = {v.claim: v for v in build_ledger(res, timings(2.5))}
    lg = regime_ledger(_regime((0, 1, 2)), {s: (res, timings(2.5)) for s in (0, 1, 2)})
    for v in lg.rows:
        assert v.seeds == {str(s): single[v.claim].label for s in (0, 1, 2)}
        assert v.label == single[v.claim].label  # identical seeds agree, with 3 of them
