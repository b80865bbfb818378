"""A regime: every seed a study of its own, all jobs in one schedule, the same bytes again."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pyverify.claims.regimes import regime_ledger, regimes_json
from pyverify.collapse.config import small_config
from pyverify.collapse.merge import RESULT_FILE
from pyverify.collapse.regime_estimate import schedule_wall
from pyverify.collapse.regimes import REGIMES, Regime, regime, regime_studies, seed_folder
from pyverify.collapse.runner import run_collapse, run_studies
from pyverify.errors import InputValueError
from pyverify.output import read_json


def _tiny() -> Regime:
    return replace(REGIMES["bytes"], name="tiny", folder="tiny", runs=("frozen",), seeds=(0, 1),
                   config=small_config)  # fmt: skip


def test_every_seed_is_a_study_of_its_own_and_reruns_give_the_same_bytes(tmp_path):
    reg = _tiny()
    base = tmp_path / "tiny"
    studies = regime_studies(base, reg)
    assert [d for _c, d, _r in studies] == [base / "seed-0", base / "seed-1"]
    assert [c.seed for c, _d, _r in studies] == [0, 1]
    results = run_studies(studies, jobs=2, progress=False)
    assert results[0]["settings"]["seed"] == 0 and results[1]["settings"]["seed"] == 1
    files = {s: (seed_folder(base, reg, s) / RESULT_FILE).read_bytes() for s in reg.seeds}
    assert files[0] != files[1]  # another seed trains another model
    # seed 1 alone, in a study of its own: the same bytes as inside the regime
    alone = tmp_path / "alone"
    run_collapse(replace(small_config(), seed=1), alone, runs=("frozen",), progress=False)
    assert (alone / RESULT_FILE).read_bytes() == files[1]
    # --resume keeps the finished runs and merges them again to the same bytes
    run_studies(studies, jobs=2, progress=False, resume=True)
    assert {s: (seed_folder(base, reg, s) / RESULT_FILE).read_bytes() for s in reg.seeds} == files
    saved = {s: (read_json(seed_folder(base, reg, s) / RESULT_FILE), None) for s in reg.seeds}
    (js,) = regimes_json([regime_ledger(reg, saved)])
    assert js["seeds"] == [0, 1] and set(js["gate"]["passed"]["frozen"]) == {"0", "1"}


def test_a_one_seed_regime_keeps_its_study_in_its_folder(tmp_path):
    assert seed_folder(tmp_path, REGIMES["bytes"], 0) == tmp_path
    with pytest.raises(InputValueError, match="--regime must be one of"):
        regime("nope")


def test_the_schedule_runs_the_longest_first_on_the_free_slot():
    assert schedule_wall([3.0, 1.0, 1.0, 1.0], 2) == 3.0
    assert schedule_wall([2.0, 2.0, 2.0], 2) == 4.0
    assert schedule_wall([5.0], 4) == 5.0
