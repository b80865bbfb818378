"""Trends: log-slopes per 1,000 steps with a bootstrap interval over heads.

Oracle: histories built from known exponentials (``fake_study.trending``), whose
per-head log-slope is the rate itself, and an interval computed independently from
the resampled means' definition.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fake_study import legacy, record, study, trending

from pyverify.claims.rules import e1, n2, study_subject
from pyverify.claims.subject import Subject
from pyverify.claims.thresholds import COLLAPSED, MOVING
from pyverify.claims.trends import (
    BOOTSTRAP,
    SIGNED_MEAN_FLOOR,
    TREND_CI,
    TREND_FROM,
    _indices,
    difference,
    run_trends,
    series_getters,
    trend,
)
from pyverify.claims.verdict import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    TRENDING_AWAY,
    TRENDING_TOWARD,
    UNDECIDED,
)


def _g(hist, S="64"):
    return trend(hist, f"G (S={S})", series_getters(hist[0])[f"G (S={S})"])


def test_slope_is_the_rate_of_a_known_exponential():
    """Exact exponentials: each head's OLS log-slope is its rate (float64 OLS on 8 points:
    1e-12), the mean is their mean, and the window starts at TREND_FROM of the last step."""
    t = _g(trending((-2.0, -1.0)))
    assert t.status == "ok" and t.units == 2
    assert t.slopes == pytest.approx((-2.0, -1.0), rel=1e-12)
    assert t.slope == pytest.approx(-1.5, rel=1e-12)
    assert t.first_step == math.ceil(TREND_FROM * 1000 / 100) * 100 and t.last_step == 1000
    assert t.points == 8


def test_interval_is_the_percentile_of_the_resampled_means():
    """The interval written out from its definition, on the same indices; with two units the
    resampled means are -2, -1.5, -1 and the interval is [-2, -1] (both excluded from 0)."""
    t = _g(trending((-2.0, -1.0)))
    means = np.sort(np.array(t.slopes)[_indices(2, 0)].mean(axis=1))
    lo_i = math.floor((1 - TREND_CI) / 2 * BOOTSTRAP)
    hi_i = math.ceil((1 + TREND_CI) / 2 * BOOTSTRAP) - 1
    assert (t.lo, t.hi) == (means[lo_i], means[hi_i])
    assert (t.lo, t.hi) == pytest.approx((-2.0, -1.0))
    assert t.direction == "falling"


def test_a_ci_that_excludes_0_and_one_that_includes_it():
    assert _g(trending((0.5, 0.7))).direction == "rising"
    mixed = _g(trending((-1.0, 1.0)))
    assert mixed.lo < 0 < mixed.hi and mixed.direction == "no trend"


def test_resampling_is_deterministic_and_balanced():
    a, b = _indices(8, 0), _indices(8, 0)
    assert a is b or np.array_equal(a, b)
    _indices.cache_clear()
    assert np.array_equal(_indices(8, 0), a)  # a fresh draw gives the same indices
    counts = np.bincount(a.ravel(), minlength=8) / a.size
    assert np.all(np.abs(counts - 1 / 8) < 0.01)  # 16,000 draws: each index about 1/8
    assert not np.array_equal(_indices(8, 1), a)  # another stream


def test_difference_of_two_runs():
    d = difference(_g(trending((-1.0, -1.2))), _g(trending((0.5, 0.6))))
    assert d.diff == pytest.approx(1.65) and d.direction == "higher"
    d = difference(_g(trending((-1.0, 1.0))), _g(trending((-1.0, 1.0))))
    assert d.direction == "same"


def test_statuses():
    one = [record(0, op=0.1)]
    assert _g(one).status == "too few records"
    short = trending((-1.0, -1.0), steps=200, every=100)  # window 50..200: two records
    assert _g(short).status == "too few records"
    hist = trending((-1.0, -1.0))
    del hist[-1]["order_parameter"]["64"]
    assert _g(hist).status == "not measured"


def test_ill_conditioned_signed_mean_units_are_left_out():
    hist = [record(s, op=0.1, pair=0.1 * math.exp(-s / 1000),
                   pair_scale=SIGNED_MEAN_FLOOR / 10) for s in range(0, 1001, 100)]  # fmt: skip
    trs = run_trends(hist)
    assert trs["G pairwise signed-mean"].status == "ill-conditioned"
    assert trs["G pairwise signed-mean"].excluded == 2
    saved_before = legacy({"runs": {"r": {"history": hist}}})["runs"]["r"]["history"]
    assert "numerator" not in saved_before[0]["pairwise_order"]["G"]
    old = run_trends(saved_before)  # the same conditioning from the two forms alone
    assert old["G pairwise signed-mean"].status == "ill-conditioned"
    assert trs["G pairwise RMS"].slope == pytest.approx(-1.0, rel=1e-9)
    assert set(trs) >= {"G (S=32)", "A_P (S=64)", "A pairwise RMS", "row energy A"}


def test_a_bitwise_zero_is_a_finite_low_point():
    hist = trending((-1.0, -1.0))
    hist[-1]["order_parameter"]["64"]["G"] = [[0.0, 0.0]]
    t = _g(hist)
    assert t.status == "ok" and t.slope < -1.0 and math.isfinite(t.slope)


def _author_with(hist, causal):
    r = study(val_loss=causal)
    r["runs"]["author"]["history"] = hist
    return study_subject(r, "author")


@pytest.mark.parametrize(
    ("rates", "expected"),
    [((-1.0, -1.2), TRENDING_TOWARD), ((0.5, 0.6), TRENDING_AWAY), ((-1.0, 1.0), INCONCLUSIVE)],
)
def test_e1_trend_outcomes_where_the_gate_fails(rates, expected):
    v = e1(_author_with(trending(rates), causal=1.6))  # the best n-gram is at 1.5
    assert (v.verdict, v.reason) == (expected, NOT_REPRODUCED)
    assert "G (S=64) log-slope" in " ".join(v.trend_numbers)
    faster = e1(_author_with(trending(tuple(3 * x for x in rates)), causal=1.6))
    assert faster.trend == v.trend  # the words carry no measured number (float-free JSON)


def test_e1_trend_outcome_between_the_cut_offs():
    mid = (COLLAPSED * MOVING) ** 0.5
    hist = trending((-1.0, -1.2), start=mid * math.exp(1.1))  # ends near the middle
    v = e1(_author_with(hist, causal=1.4))
    assert (v.verdict, v.reason) == (TRENDING_TOWARD, UNDECIDED)


def test_n2_trend_reads_row_energy_against_context_invariance():
    hist = [record(s, op=0.1 * math.exp(s / 1000), op2=0.1 * math.exp(1.1 * s / 1000),
                   row_energy=0.5 * math.exp(-s / 1000)) for s in range(0, 1001, 100)]  # fmt: skip
    r = study(val_loss=1.6)
    r["runs"]["author"]["history"] = hist
    v = n2(study_subject(r, "author"))
    assert v.verdict == TRENDING_TOWARD  # rows close while the context dependence grows
    s = study_subject(r, "author")
    same = [record(s_, op=0.1 * math.exp(-s_ / 1000), row_energy=0.5 * math.exp(-s_ / 1000),
                   a_lo=0.0, a_hi=0.0) for s_ in range(0, 1001, 100)]  # fmt: skip
    assert n2(Subject("author", same, s.final, s.dk, s.scope, True, s.gate)).verdict == (
        TRENDING_AWAY
    )
