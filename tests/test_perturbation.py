"""pyverify.diagnose.perturbation: argument checks, determinism, the bound on a small operator."""

from __future__ import annotations

import numpy as np
import pytest

from pyverify.diagnose.perturbation import budget_summary, score_budget


def test_score_budget_rejects_bad_arguments():
    with pytest.raises(ValueError, match="G_star"):
        score_budget(np.eye(3))
    with pytest.raises(ValueError, match="G_star"):
        score_budget(np.full((2, 2), np.nan))
    with pytest.raises(ValueError, match="rhos"):
        score_budget(np.eye(4), (0.0,))
    with pytest.raises(ValueError, match="seq_len"):
        score_budget(np.eye(4), seq_len=1)
    with pytest.raises(ValueError, match="G_lm"):
        budget_summary(np.eye(4))


def test_score_budget_is_deterministic_and_holds():
    G = np.eye(8) + 0.1 * np.arange(64.0).reshape(8, 8) / 64
    a = score_budget(G, (1e-6, 1e-2), seq_len=16, seed=3)
    b = score_budget(G, (1e-6, 1e-2), seq_len=16, seed=3)
    assert a == b
    for row in a:
        assert row.violations == 0 and row.argmax_changed_certified == 0
        assert 0 < row.tightness_max <= 1 and row.log_factor_ratio_max <= 1
    assert a[0].certified >= a[1].certified


def test_budget_summary_aggregates_every_head():
    G = np.broadcast_to(np.eye(4), (2, 3, 4, 4))
    table = budget_summary(G, (1e-3,), seq_len=8)
    assert len(table) == 1 and table[0]["heads"] == 6 and table[0]["violations"] == 0
