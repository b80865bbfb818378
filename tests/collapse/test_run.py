"""The small ablation study end to end: files, determinism, interrupt + resume, figures, runs."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
import torch

from pyverify.cli import main
from pyverify.collapse.config import RUNS, small_config
from pyverify.collapse.corpus import load_corpus
from pyverify.collapse.measure import commutant_residual, order_pair
from pyverify.collapse.model import PLDRDecoder
from pyverify.collapse.plots import FIGURES
from pyverify.collapse.runner import RESULT_FILE, TIMINGS_FILE, run_collapse
from pyverify.collapse.train import lr_at, make_optimizer, train_run


@pytest.fixture(scope="module")
def full_small(tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    assert main(["collapse", "--small", "--jobs", "1", "--no-progress", "-o", str(out)]) == 0
    return out


def test_small_study_writes_json_and_figures(full_small):
    res = json.loads((full_small / RESULT_FILE).read_text())
    cfg = small_config()
    assert res["study"] == "ablation" and list(res["runs"]) == list(RUNS)
    base = res["baseline"]["val_loss_by_order"]
    assert len(base) == cfg.ngram_max and all(a >= b for a, b in itertools.pairwise(base))
    L, H = cfg.model.num_layers, cfg.model.num_heads
    for run in res["runs"].values():
        steps = [h["step"] for h in run["history"]]
        assert steps == list(range(0, cfg.steps + 1, cfg.measure_every))
        last = run["history"][-1]
        for S in cfg.s_measure:
            for t in ("A", "A_LM", "A_P", "G"):
                arr = np.array(last["order_parameter"][str(S)][t])
                assert arr.shape == (L, H) and np.all(np.isfinite(arr)) and np.all(arr >= 0)
        for t in ("A", "G"):
            pair = np.array(last["pairwise_order"][t]["rms"])
            assert pair.shape == (cfg.n_pairs, L) and np.all(pair > 0)  # random weights move
        assert np.array(last["jacobian_top_sv"]).shape == (L, H)
        assert np.all(np.array(last["numerical_rank_A"]) <= cfg.model.dk)
        assert 0 <= np.min(last["floor_fraction_A_LM"]) <= np.max(last["floor_fraction_A_LM"]) <= 1
        assert math.isfinite(run["causal_val_loss"]) and run["causal_val_loss"] > 0
        fid = run["fidelity"]
        for k in ("prompt_G", "mean_G", "kv_A"):
            assert 0 <= fid[k]["tokens_identical"] <= fid["n_prompts"]
            # a decoder whose logits are within half the margin cannot change a token
            assert fid[k]["margin_covers_gap"] <= fid[k]["tokens_identical"]
        # the author's KV-cache (A kept) is the prompt's G-cache by construction
        assert fid["kv_A"]["tokens_identical"] == fid["prompt_G"]["tokens_identical"]
        assert math.isclose(fid["kv_A"]["max_logit_gap"], fid["prompt_G"]["max_logit_gap"],
                            rel_tol=1e-9, abs_tol=1e-12)  # fmt: skip
    timings = json.loads((full_small / TIMINGS_FILE).read_text())
    ta = timings["runs"]["author"]
    assert math.isclose(ta["speedup"], ta["uncached_s_per_token"] / ta["g_cached_s_per_token"])
    for f in FIGURES:
        assert (full_small / f).stat().st_size > 1000
    assert main(["claims", "-i", str(full_small)]) == 0


def test_interrupted_and_resumed_study_gives_the_same_numbers(full_small, tmp_path):
    cfg = small_config()
    out = tmp_path / "resumed"
    part = run_collapse(cfg, out, runs=("author", "frozen"), stop_after=6, progress=False)
    assert [h["step"] for h in part["runs"]["author"]["history"]] == [0, 4]
    assert not (out / RESULT_FILE).exists()  # nothing final written on interruption
    # the rest in two worker processes: the numbers do not depend on --jobs
    assert main(["collapse", "--small", "--jobs", "2", "--no-progress", "--resume",
                 "-o", str(out)]) == 0  # fmt: skip
    assert (out / RESULT_FILE).read_bytes() == (full_small / RESULT_FILE).read_bytes()


def test_plots_only_redraws_from_json(full_small, tmp_path):
    import shutil

    shutil.copy(full_small / RESULT_FILE, tmp_path / RESULT_FILE)
    assert main(["collapse", "--plots-only", "-o", str(tmp_path)]) == 0
    for f in FIGURES:
        assert (tmp_path / f).read_bytes() == (full_small / f).read_bytes()


def test_plots_only_without_json_is_a_one_line_error(tmp_path, capsys):
    from pyverify.collapse.plots import draw_all
    from pyverify.errors import InputValueError, MissingInputError

    with pytest.raises(MissingInputError, match=r"collapse\.json not found"):
        draw_all(tmp_path)
    assert main(["collapse", "--plots-only", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path / RESULT_FILE) in err
    (tmp_path / RESULT_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(InputValueError, match="unreadable"):
        draw_all(tmp_path)
    assert main(["claims", "-i", str(tmp_path)]) == 2


def test_resume_with_other_settings_is_refused(full_small, tmp_path, capsys):
    run_collapse(small_config(), tmp_path, runs=("author",), stop_after=4, progress=False)
    argv = ["collapse", "--small", "--steps", "8", "--run", "author", "--jobs", "1",
            "--no-progress", "--resume", "-o", str(tmp_path)]  # fmt: skip
    assert main(argv) == 2
    assert "other settings" in capsys.readouterr().err


def test_runs_differ_only_in_what_they_name(tmp_path):
    cfg = small_config()
    a, s = PLDRDecoder(cfg.model, 0), PLDRDecoder(cfg.model, 0, p_init="spread")
    for (na, pa), (_ns, ps) in zip(a.named_parameters(), s.named_parameters(), strict=True):
        same = torch.equal(pa, ps)
        assert same == (not na.endswith(".P")), na
    P = a.layers[0].mha.P
    H, dk = P.shape[0], P.shape[1]
    std = math.sqrt(2 / (dk * dk + H * dk))  # torch's xavier_normal_ of an (H, dk, dk) tensor
    assert (
        0.5 * std < float(P.detach().std()) < 1.5 * std
        and float(a.layers[0].mha.b.detach().abs().max()) == 0
    )
    assert float(s.layers[0].mha.P.detach().min()) >= 0.5
    # frozen: the metric learner and W, b, P, a, b_a do not move; the rest does
    model, _ = train_run(cfg, RUNS["frozen"], load_corpus(), tmp_path, stop_after=2)
    init = PLDRDecoder(cfg.model, 0)
    mha, mha0 = model.layers[0].mha, init.layers[0].mha
    for p, p0 in zip(mha.metric_parameters(), mha0.metric_parameters(), strict=True):
        assert torch.equal(p, p0)
    assert not torch.equal(mha.Wq, mha0.Wq)
    opt = make_optimizer(PLDRDecoder(cfg.model, 0), cfg, RUNS["no-decay"])
    assert [g["weight_decay"] for g in opt.param_groups] == [cfg.weight_decay, 0.0]
    assert len(opt.param_groups[1]["params"]) == 2 * cfg.model.num_layers  # P and a


def test_lr_schedule():
    cfg = small_config()
    for run in RUNS.values():
        lrs = [lr_at(s, cfg, run) for s in range(cfg.steps)]
        peak = int(np.argmax(lrs))
        assert math.isclose(max(lrs), run.peak_lr)
        assert all(a <= b for a, b in itertools.pairwise(lrs[: peak + 1]))
        assert all(a >= b for a, b in itertools.pairwise(lrs[peak:]))
        assert lrs[-1] >= cfg.min_lr_frac * run.peak_lr - 1e-15
    assert RUNS["subcritical"].peak_lr == RUNS["author"].peak_lr / 10


def test_order_pair_matches_the_author_formula():
    x1 = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    x2 = torch.tensor([[1.0, 2.0], [3.0, 6.0]], dtype=torch.float64)
    num = math.sqrt(4 / 4)  # one entry differs by 2
    rms = 0.5 * (math.sqrt(30 / 4) + math.sqrt(50 / 4))
    mean = 0.5 * (10 / 4 + 12 / 4)
    got = order_pair(x1, x2)
    assert math.isclose(got[0], num / rms) and math.isclose(got[1], num / mean)
    assert order_pair(x1, x1.clone()) == (0.0, 0.0)


def test_commutant_residual_spec():
    """Zero on x I + y J blocks, one on a matrix with nothing in the commutant."""
    blocks = torch.zeros(4, 4, dtype=torch.float64)
    blocks[0:2, 0:2] = torch.tensor([[2.0, -3.0], [3.0, 2.0]])
    blocks[2:4, 2:4] = torch.tensor([[1.0, 5.0], [-5.0, 1.0]])
    assert float(commutant_residual(blocks)) < 1e-15
    off = torch.zeros(4, 4, dtype=torch.float64)
    off[0, 2] = 1.0
    off[0, 0], off[1, 1] = 1.0, -1.0  # diag(1, -1) is orthogonal to span{I, J}
    assert math.isclose(float(commutant_residual(off)), 1.0)


def test_causal_loss_equals_teacher_forced_only_for_an_invariant_g():
    """G from the whole window lets a teacher-forced pass see later tokens; with a = 0
    (G = b_a for every input) the pass is causal and both losses agree to rounding
    (float64, sums of 64 terms: relative 1e-12 is far above roundoff)."""
    from pyverify.collapse.measure import as_float64, causal_val_loss, val_loss

    cfg = small_config()
    val = load_corpus().windows(4, cfg.seq + 1, phase=0.5)
    x, y = val[:, :-1], val[:, 1:]
    live = as_float64(PLDRDecoder(cfg.model, 0, p_init="spread"))
    assert abs(causal_val_loss(live, x, y) - val_loss(live, x, y)) > 1e-6
    inv = PLDRDecoder(cfg.model, 0, p_init="spread")
    with torch.no_grad():
        for layer in inv.layers:
            layer.mha.a.zero_()
            layer.mha.b_a.normal_(generator=torch.Generator().manual_seed(1))
    inv = as_float64(inv)
    assert math.isclose(causal_val_loss(inv, x, y), val_loss(inv, x, y), rel_tol=1e-12)
