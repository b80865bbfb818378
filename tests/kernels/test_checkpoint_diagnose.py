"""``pyverify diagnose --checkpoint``: a v510 state dict, prompts from a file or random.

The checkpoint is measured by :mod:`pyverify.measure` (the study's code) and judged by
:func:`pyverify.claims.rules.checkpoint_rules` (the study's rules); the oracle here is
the definition of each figure on models whose answer is known (a live metric, and
``alst = 0``, which makes G the constant ``balst``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from v510_author import random_author_model

from pyverify.cli import main
from pyverify.diagnose.checkpoint import read_tokens, run_checkpoint_diagnose

SIZES = {"L": 2, "d": 16, "H": 2, "dff": 24, "vocab": 40, "a_dff": 12, "n_res": 1, "n_dense": 2}
RECORD_KEYS = {
    "val_loss", "order_parameter", "eps_G", "pairwise_order", "commutant_residual_G",
    "identical_rows_residual_A", "cross_head_residual_A", "sigma2_over_sigma1_A",
    "numerical_rank_A", "sigma2_over_sigma1_A_LM", "numerical_rank_A_LM", "floor_fraction_A_LM",
    "jacobian_top_sv", "mean_abs_P", "norm_a", "row_energy_A", "commutant_residual_rho",
    "twirl_rho",
}  # fmt: skip


@pytest.fixture(scope="module")
def state():
    return random_author_model(seed=1, **SIZES).state_dict()


def test_live_metric_fluctuates_and_cache_is_inexact(tmp_path, state):
    f = tmp_path / "m.pt"
    torch.save(state, f)
    d = run_checkpoint_diagnose(f, n_prompts=4, seq_len=10, seed=0)
    assert d["model"]["layers"] == 2 and d["model"]["heads"] == 2
    rec, fin = d["record"], d["final"]
    assert set(rec) == RECORD_KEYS  # the study's record schema (no step, no training loss)
    assert list(rec["order_parameter"]) == ["10"]  # one probe set, named by its length
    for t in ("A", "A_LM", "A_P", "G"):
        assert np.min(rec["order_parameter"]["10"][t]) > 0  # random weights: no collapse
    assert np.array(rec["order_parameter"]["10"]["G"]).shape == (2, 2)
    assert np.max(rec["eps_G"]["10"]) > 0
    # the ledger rows: a live metric is neither invariant nor prefix-consistent
    rows = {r["claim"]: r for r in d["ledger"]}
    assert list(rows) == ["E1", "E2", "E3", "E6", "E8", "N1", "N2", "F1"]
    assert rows["E1"]["verdict"] == "not supported"
    assert rows["E3"]["verdict"] == "not supported"  # random A is far from rank one
    assert "learned vs inherited: not decidable here" in rows["E3"]["caveat"]
    assert (
        "prefix logits change" in rows["F1"]["numbers"]["checkpoint " + str(f) + " online contract"]
    )
    assert fin["online_contract"]["changed"] > 0
    fid = fin["fidelity"]
    # G moves, so the cache claims (about a collapsed model) have no premise: their
    # mismatch would only restate E1
    for claim in ("E2", "E8", "E6", "N1"):
        assert (rows[claim]["verdict"], rows[claim]["reason"]) == ("inconclusive", "premise absent")
    g = fid["prompt_G"]
    assert g["max_logit_gap"] > 1e-9  # the prompt's G is not the recomputed one
    assert g["margin_covers_gap"] <= g["tokens_identical"] <= fid["n_prompts"] == 4
    pair = np.array(rec["pairwise_order"]["G"]["rms"])
    assert pair.shape == (4, 2) and np.all(pair > 0)
    assert "test_any_stack_a_cached_decoding_equals_g_cached_decoding" in rows["E2"]["caveat"]
    n1 = fin["cache_contract"]
    assert (n1["calibration_contexts"], n1["assessment_contexts"]) == (2, 2)
    assert n1["own"]["mean_kl"] > 0 and "initial" not in n1  # no step 0 in a checkpoint


def test_invariant_metric_gives_zero_eps_and_exact_cache(tmp_path, state):
    """alst = 0: G = balst for every input (the spec's invariant metric). Then eps_G = 0,
    G's order parameter is 0, every cache is the recomputed G (so the cached decoders and
    the mean-operator cache give the native logits), and a pass over a prefix does not
    depend on what follows: the online contract holds bitwise. A still fluctuates."""
    sd = dict(state)
    for i in range(2):
        sd[f"decoder.dec_layers.{i}.mha1.plgatt_layer.alst"] = torch.zeros(2, 8, 8)
    f = tmp_path / "inv.pt"
    torch.save(sd, f)
    d = run_checkpoint_diagnose(f, n_prompts=3, seq_len=9, seed=2)
    rec, fin = d["record"], d["final"]
    assert np.all(np.array(rec["eps_G"]["9"]) == 0.0)
    assert np.all(np.array(rec["order_parameter"]["9"]["G"]) == 0.0)
    assert np.min(rec["order_parameter"]["9"]["A"]) > 0
    rows = {r["claim"]: r for r in d["ledger"]}
    assert rows["E2"]["verdict"] == rows["E8"]["verdict"] == "true by construction"
    for mode in ("prompt_G", "kv_A", "mean_G"):
        assert fin["fidelity"][mode]["tokens_identical"] == 3
        assert fin["fidelity"][mode]["max_logit_gap"] <= 1e-12  # float64 rounding of Q G K^T
    assert np.all(np.array(rec["pairwise_order"]["G"]["rms"]) == 0)
    assert rows["E1"]["verdict"] != "supported"  # A, A_LM, A_P still move
    assert fin["online_contract"]["changed"] == 0  # a constant G keeps the prefix causal
    assert rows["F1"]["verdict"] == "absent"  # causal and teacher-forced losses agree
    assert fin["cache_contract"]["own"]["mean_kl"] <= 1e-12


def test_cli_with_tokens_file(tmp_path, state, capsys):
    f = tmp_path / "m.pt"
    torch.save({"model_state_dict": state, "loss": 0.0, "accuracy": 0.0}, f)
    toks = tmp_path / "prompts.txt"
    toks.write_text("1 2 3 4 5 6\n7, 8, 9, 10\n\n39 0 3\n")
    out = tmp_path / "d.json"
    assert main(["diagnose", "--checkpoint", str(f), "--tokens", str(toks), "--json", str(out),
                 "--no-progress"]) == 0  # fmt: skip
    assert "cache fidelity" in capsys.readouterr().out
    d = json.loads(out.read_text())
    assert d["kind"] == "checkpoint" and d["model"]["n_prompts"] == 3
    assert list(d["record"]["order_parameter"]) == ["all"]  # lengths differ: one pooled set


def test_errors_are_one_line(tmp_path, state, capsys):
    assert main(["diagnose", "--checkpoint", str(tmp_path / "none.pt")]) == 2
    assert "no such file" in capsys.readouterr().err
    sd = dict(state)
    sd.pop("final_layer.bias")
    torch.save(sd, tmp_path / "bad.pt")
    assert main(["diagnose", "--checkpoint", str(tmp_path / "bad.pt"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'bad.pt'}: missing keys final_layer.bias" in err and err.count("\n") == 1
    sd = dict(state)
    sd["final_layer.bias"] = torch.full_like(sd["final_layer.bias"], float("nan"))
    torch.save(sd, tmp_path / "nan.pt")
    assert main(["diagnose", "--checkpoint", str(tmp_path / "nan.pt"), "--no-progress"]) == 2
    assert "final_layer.bias holds inf or NaN" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2 x\n")
    with pytest.raises(ValueError, match=r"bad.txt:1: not a list of integers"):
        read_tokens(bad, 40)
    bad.write_text("1 2 99\n")
    with pytest.raises(ValueError, match=r"outside \[0, 40\)"):
        read_tokens(bad, 40)
    assert main(["diagnose", "--tokens", str(bad)]) == 2
    assert "--tokens needs --checkpoint" in capsys.readouterr().err
    assert main(["diagnose", "--inputs", str(bad)]) == 2
    assert "--inputs needs --checkpoint" in capsys.readouterr().err
    one = tmp_path / "one.txt"
    one.write_text("1 2 3\n")
    torch.save(state, tmp_path / "m.pt")
    assert main(["diagnose", "--checkpoint", str(tmp_path / "m.pt"), "--tokens", str(one),
                 "--no-progress"]) == 2  # fmt: skip
    assert "needs >= 2 prompts" in capsys.readouterr().err
    assert main(["diagnose", "--checkpoint", str(tmp_path / "m.pt"), "--inputs", str(one),
                 "--no-progress"]) == 2  # fmt: skip
    assert "--inputs" in capsys.readouterr().err
