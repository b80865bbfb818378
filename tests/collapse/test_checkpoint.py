"""Study checkpoints: the author's format, bit-identical resume, one measurement path.

A checkpoint is what the author's ``save_model`` writes (``model_state_dict``,
``optimizer_state_dict``, ``loss``, ``accuracy``) plus the trainer's own state, all
readable with ``torch.load(weights_only=True)``; ``pyverify diagnose --checkpoint`` on a
study checkpoint, given the study's inputs, reproduces the study's numbers exactly.
"""

from __future__ import annotations

import json

import pytest
import torch
from author_code import author_model, author_modules

from pyverify.cli import main
from pyverify.collapse.config import RUNS, small_config
from pyverify.collapse.corpus import load_corpus
from pyverify.collapse.inputs import INPUTS_FILE, final_inputs, write_inputs
from pyverify.collapse.train import CHECKPOINT, INIT, load_checkpoint, train_run
from pyverify.kernels import load_v510
from pyverify.measure import as_float64, load_model, measure_final

TRAINING_KEYS = ("step", "lr", "train_loss", "train_accuracy")


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # the study's numbers are bitwise for a fixed thread count
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def author_run(tmp_path_factory):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("author")
    cfg = small_config()
    model, history = train_run(cfg, RUNS["author"], load_corpus(), out / "run", stop_after=8)
    write_inputs(out / INPUTS_FILE, cfg, load_corpus())
    torch.set_num_threads(before)
    return out, model, history


def test_checkpoint_is_the_authors_format(author_run):
    out, model, history = author_run
    state = load_checkpoint(out / "run" / CHECKPOINT)  # weights_only=True
    assert set(state) == {"model_state_dict", "optimizer_state_dict", "loss", "accuracy",
                          "trainer"}  # fmt: skip
    assert state["loss"] == history[-1]["train_loss"] and 0 <= state["accuracy"] <= 1
    assert state["trainer"]["step"] == 8 and state["trainer"]["history"] == history
    for k, v in model.state_dict().items():
        assert torch.equal(state["model_state_dict"][k], v), k
    # a v510 state dict: the suite's loaders read it as it is
    load_v510(out / "run" / CHECKPOINT)
    assert torch.equal(load_model(out / "run" / CHECKPOINT).final_layer.bias,
                       model.final_layer.bias.double())  # fmt: skip
    init = load_checkpoint(out / "run" / INIT)
    assert init["optimizer_state_dict"] is None and init["loss"] is None
    fresh = type(model)(small_config().model, seed=0)
    for k, v in fresh.state_dict().items():
        assert torch.equal(init["model_state_dict"][k], v), k


def test_the_authors_load_model_reads_a_checkpoint(author_run):
    """Their ``load_model`` (``pldr_run_model_v510.dist_pldr_model_e2e``) loads the model
    strictly and the optimizer into the AdamW their trainer builds (one group, all
    parameters), and returns the loss and accuracy saved."""
    model_mod, run_mod = author_modules()
    out, model, history = author_run
    cfg = small_config()
    theirs = author_model(model_mod, cfg.model)
    opt = torch.optim.AdamW(theirs.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-5,
                            weight_decay=0.1)  # fmt: skip
    theirs, opt, loss, acc = run_mod.dist_pldr_model_e2e.load_model(
        str(out / "run" / CHECKPOINT), theirs, opt
    )
    assert loss == history[-1]["train_loss"] and acc == history[-1]["train_accuracy"]
    for (n, p), q in zip(theirs.named_parameters(), model.parameters(), strict=True):
        assert torch.equal(p, q), n
    ours_state = load_checkpoint(out / "run" / CHECKPOINT)["optimizer_state_dict"]["state"]
    assert torch.equal(opt.state_dict()["state"][0]["exp_avg"], ours_state[0]["exp_avg"])


def test_resume_continues_bit_identically(tmp_path, one_thread):
    cfg = small_config()
    run = RUNS["prompt-A"]
    corpus = load_corpus()
    whole, h_whole = train_run(cfg, run, corpus, tmp_path / "whole")
    train_run(cfg, run, corpus, tmp_path / "part", stop_after=6)  # between measurements
    part, h_part = train_run(cfg, run, corpus, tmp_path / "part", resume=True)
    assert h_part == h_whole
    for (n, a), b in zip(whole.state_dict().items(), part.state_dict().values(), strict=True):
        assert torch.equal(a, b), n
    sa = load_checkpoint(tmp_path / "whole" / CHECKPOINT)
    sb = load_checkpoint(tmp_path / "part" / CHECKPOINT)
    assert sa["trainer"] == sb["trainer"] and sa["loss"] == sb["loss"]
    for k, v in sa["optimizer_state_dict"]["state"].items():
        for name, t in v.items():
            assert torch.equal(t, sb["optimizer_state_dict"]["state"][k][name]), (k, name)


def test_diagnose_reproduces_the_study_record_and_final_measurements(
    author_run, tmp_path, one_thread
):
    """One measurement path: ``pyverify diagnose --checkpoint CK --inputs inputs.json`` on the
    study's checkpoint at step 8 gives the study's record for step 8, number for number, and
    the final measurements the study would compute for that model (without the stale
    initial cache, which needs the step-0 model)."""
    out, model, history = author_run
    dest = tmp_path / "d.json"
    assert main(["diagnose", "--checkpoint", str(out / "run" / CHECKPOINT), "--inputs",
                 str(out / INPUTS_FILE), "--json", str(dest), "--no-progress"]) == 0  # fmt: skip
    d = json.loads(dest.read_text())
    want = {k: v for k, v in history[-1].items() if k not in TRAINING_KEYS}
    assert history[-1]["step"] == 8
    assert d["record"] == json.loads(json.dumps(want))
    fin = measure_final(as_float64(model), final_inputs(small_config(), load_corpus()))
    assert d["final"] == json.loads(json.dumps(fin))
    assert [r["claim"] for r in d["ledger"]] == ["E1", "E2", "E3", "E6", "E8", "N1", "N2", "F1"]
