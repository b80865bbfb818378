"""The study on the recall task: its baseline, answers in every record, its gate, one path."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from pyverify.claims.regimes import regime_ledger, regimes_json
from pyverify.claims.subject import RECALL_GATE_MODES, run_gate
from pyverify.cli import main
from pyverify.collapse.job import read_settings
from pyverify.collapse.merge import RUNS_DIR
from pyverify.collapse.recall_regime import tiny_recall_config
from pyverify.collapse.regime_estimate import format_regime_estimate, regime_estimate
from pyverify.collapse.regimes import REGIMES
from pyverify.collapse.runner import run_collapse
from pyverify.collapse.train import CHECKPOINT
from pyverify.errors import InputValueError
from pyverify.measure.answers import MODES


@pytest.fixture(scope="module")
def recall_study(tmp_path_factory):
    before = torch.get_num_threads()
    out = tmp_path_factory.mktemp("recall")
    result = run_collapse(tiny_recall_config(), out, runs=("author", "exposure-free"),
                          jobs=2, progress=False)  # fmt: skip
    torch.set_num_threads(before)
    return out, result


def test_the_study_scores_the_answers_in_every_inference(recall_study):
    out, result = recall_study
    b = result["baseline"]
    assert b["task"] == "recall" and 0 < b["chance"] < 1 and len(b["accuracy_by_order"]) == 2
    for name in ("author", "exposure-free"):
        run = result["runs"][name]
        assert [h["step"] for h in run["history"]] == [0, 4, 8, 12]
        for rec in (*run["history"], run):
            a = rec["answers"]
            assert set(MODES) <= set(a) and set(a["exposure_gap"]) == {"causal", "prompt-cache"}
            for m in MODES:
                assert 0 <= a[m]["accuracy"] <= 1 and a[m]["loss"] > 0
        g = run_gate(result, name)
        assert not g.passed  # twelve steps learn nothing: the gate says so, with its figures
        assert all(f"{name} answer accuracy ({m})" in g.figures for m in RECALL_GATE_MODES)
    assert result["runs"]["exposure-free"]["spec"]["objective"] == "prompt-A-answers"
    # the settings read back with their task
    assert read_settings(out / "settings.json") == tiny_recall_config()


def test_the_ledger_of_a_recall_regime(recall_study):
    _out, result = recall_study
    reg = REGIMES["bytes"].__class__("recall-test", "x", ("author", "exposure-free"), (0,),
                                     tiny_recall_config, "test")  # fmt: skip
    (js,) = regimes_json([regime_ledger(reg, {0: (result, None)})])
    assert "the recall gate" in js["gate"]["against"]
    assert js["gate"]["passed"] == {"author": {"0": False}, "exposure-free": {"0": False}}
    assert js["rows"]["E1"] == "inconclusive (not reproduced at this scale)"


def test_diagnose_reproduces_the_runs_end_of_run_answers(recall_study, tmp_path):
    """One measurement path: the checkpoint and inputs.json of the run give its numbers."""
    out, result = recall_study
    torch.set_num_threads(1)  # as the job measured
    run_dir = out / RUNS_DIR / "author"
    dest = tmp_path / "d.json"
    args = ["--inputs", str(run_dir / "inputs.json"), "--json", str(dest), "--no-progress"]
    assert main(["diagnose", "--checkpoint", str(run_dir / CHECKPOINT), *args]) == 0
    d = json.loads(dest.read_text())
    run = result["runs"]["author"]
    last = {k: v for k, v in run["history"][-1].items()
            if k not in ("step", "lr", "train_loss", "train_accuracy")}  # fmt: skip
    assert d["record"] == last
    for k in ("answers", "val_loss", "causal_val_loss", "prompt_A_val_loss", "online_contract"):
        assert d["final"][k] == run[k], k


def test_settings_that_do_not_fit_the_task_are_refused():
    from dataclasses import replace

    cfg = tiny_recall_config()
    with pytest.raises(InputValueError, match="seq must be the recall task's"):
        replace(cfg, seq=cfg.seq + 1).validate()
    with pytest.raises(InputValueError, match="prompt_len must be the recall task's"):
        replace(cfg, prompt_len=3).validate()
    with pytest.raises(InputValueError, match="no recall task"):
        from pyverify.collapse.config import small_config
        from pyverify.collapse.job import run_job

        run_job(small_config(), "exposure-free", __import__("pathlib").Path("/nonexistent"))


def test_the_estimate_of_a_recall_regime_times_its_task_not_a_corpus():
    """--dry-run of a recall regime builds its inputs from the task (a corpus would not fit
    its vocabulary): every job priced, the prompt-A factor counted."""
    tiny = replace(REGIMES["recall"], name="tiny-recall", seeds=(0,),
                    config=tiny_recall_config)  # fmt: skip
    e = regime_estimate(tiny, torch.device("cpu"))
    assert set(e.per_job) == {f"seed-0/{r}" for r in tiny.runs}
    assert all(t > 0 for t in e.per_job.values()) and e.wall_s >= max(e.per_job.values())
    assert "regime tiny-recall" in format_regime_estimate(e)


def test_recall_b128_differs_from_recall_only_where_its_pilots_sized_it():
    """The second version changes the batch, the steps and the vocabulary's decay, nothing
    else (its runs and seeds are recall's), and its settings read back as they are."""
    from pyverify.collapse.job import settings_from_dict
    from pyverify.collapse.recall_regime import recall_b128_config, recall_config

    a, b = recall_config().to_dict(), recall_b128_config().to_dict()
    changed = {k: b.get(k) for k in set(a) | set(b) if a.get(k) != b.get(k)}
    assert changed == {"batch": 128, "steps": 3000, "decay_vocab": False}
    assert settings_from_dict(b) == recall_b128_config()
    v1, v2 = REGIMES["recall"], REGIMES["recall-b128"]
    assert (v2.runs, v2.seeds) == (v1.runs, v1.seeds) and v2.folder != v1.folder
