"""The small ablation study end to end: files, determinism, interrupt + resume, figures, runs.

The study runs each run as its own job (a subprocess, ``--jobs`` at a time) and merges the
run folders; the jobs themselves (DDP, kill and resume, merging folders, errors) are tested
in ``test_distributed.py``.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from pyverify.cli import main
from pyverify.collapse.config import RUNS, STUDY_RUNS, small_config
from pyverify.collapse.corpus import load_corpus
from pyverify.collapse.job import RUN_FILE, run_job
from pyverify.collapse.runner import (
    RESULT_FILE,
    RUNS_DIR,
    TIMINGS_FILE,
    JobFailedError,
    run_collapse,
)
from pyverify.collapse.train import (
    CHECKPOINT,
    INIT,
    load_checkpoint,
    lr_at,
    make_optimizer,
    train_run,
)
from pyverify.measure.order import order_pair, pair_parts
from pyverify.measure.twirl import commutant_residual
from pyverify.output import json_text
from pyverify.report.collapse_plots import FIGURES
from pyverify.trainable.decoder import PLDRDecoder


@pytest.fixture(scope="module")
def full_small(tmp_path_factory, child_bytecode):
    out = tmp_path_factory.mktemp("full")
    assert main(["collapse", "--small", "--jobs", "2", "--no-progress", "-o", str(out)]) == 0
    return out


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as each job runs (--threads 1)
    yield
    torch.set_num_threads(before)


def test_small_study_writes_json_and_figures(full_small):
    res = json.loads((full_small / RESULT_FILE).read_text())
    cfg = small_config()
    assert res["study"] == "ablation" and sorted(res["runs"]) == sorted(STUDY_RUNS)
    base = res["baseline"]["val_loss_by_order"]
    assert len(base) == cfg.ngram_max and all(a >= b for a, b in itertools.pairwise(base))
    L, H = cfg.model.num_layers, cfg.model.num_heads
    for name, run in res["runs"].items():
        steps = [h["step"] for h in run["history"]]
        assert steps == list(range(0, cfg.run_steps(RUNS[name]) + 1, cfg.measure_every))
        last = run["history"][-1]
        for S in cfg.s_measure:
            for t in ("A", "A_LM", "A_P", "G"):
                arr = np.array(last["order_parameter"][str(S)][t])
                assert arr.shape == (L, H) and np.all(np.isfinite(arr)) and np.all(arr >= 0)
        for t in ("A", "G"):
            pair = last["pairwise_order"][t]
            for form in ("rms", "signed_mean", "numerator", "signed_mean_denominator"):
                assert np.array(pair[form]).shape == (cfg.n_pairs, L)
            assert np.all(np.array(pair["rms"]) > 0)  # random weights move
            # the parts give the forms back (the author's definition)
            np.testing.assert_allclose(
                np.array(pair["numerator"]) / np.array(pair["signed_mean_denominator"]),
                pair["signed_mean"], rtol=1e-12,
            )  # fmt: skip
        for key in ("jacobian_top_sv", "row_energy_A", "commutant_residual_rho"):
            assert np.array(last[key]).shape == (L, H), key
        for key, v in last["twirl_rho"].items():
            assert np.array(v).shape == (L, H) and np.all(np.array(v) <= 1), key
        # the author's row energy is the square of the identical-rows residual, per probe;
        # averaged over probes, Jensen's inequality orders them
        assert np.all(np.array(last["row_energy_A"])
                      >= np.array(last["identical_rows_residual_A"]) ** 2 - 1e-12)  # fmt: skip
        assert np.all(np.array(last["numerical_rank_A"]) <= cfg.model.dk)
        assert 0 <= np.min(last["floor_fraction_A_LM"]) <= np.max(last["floor_fraction_A_LM"]) <= 1
        assert math.isfinite(run["causal_val_loss"]) and run["causal_val_loss"] > 0
        assert math.isfinite(run["prompt_A_val_loss"]) and run["prompt_A_val_loss"] > 0
        assert run["val_loss"] == last["val_loss"]  # the final pass is the last record's
        fid = run["fidelity"]
        for k in ("prompt_G", "mean_G", "kv_A"):
            assert 0 <= fid[k]["tokens_identical"] <= fid["n_prompts"]
            # a decoder whose logits are within half the margin cannot change a token
            assert fid[k]["margin_covers_gap"] <= fid[k]["tokens_identical"]
        # the author's KV-cache (A kept) is the prompt's G-cache by construction
        assert fid["kv_A"]["tokens_identical"] == fid["prompt_G"]["tokens_identical"]
        assert math.isclose(fid["kv_A"]["max_logit_gap"], fid["prompt_G"]["max_logit_gap"],
                            rel_tol=1e-9, abs_tol=1e-12)  # fmt: skip
        online = run["online_contract"]
        assert online["entries"] == cfg.online_n * cfg.online_prefix * cfg.model.vocab
        assert 0 < online["changed"] <= online["entries"]  # G from the whole window leaks
        n1 = run["cache_contract"]
        assert n1["calibration_contexts"] == cfg.n_probe and n1["assessment_contexts"] == cfg.n_val
        for cache in ("own", "initial"):
            assert n1[cache]["mean_kl"] >= 0 and n1[cache]["max_kl"] >= n1[cache]["mean_kl"]
    timings = json.loads((full_small / TIMINGS_FILE).read_text())
    ta = timings["runs"]["author"]
    assert math.isclose(ta["speedup"], ta["uncached_s_per_token"] / ta["g_cached_s_per_token"])
    for f in FIGURES:
        assert (full_small / f).stat().st_size > 1000
    assert main(["claims", "-i", str(full_small)]) == 0


def test_the_study_folder(full_small):
    assert json.loads((full_small / "settings.json").read_text()) == small_config().to_dict()
    for name in STUDY_RUNS:
        d = full_small / RUNS_DIR / name
        for f in (RUN_FILE, "timing.json", "settings.json", "inputs.json", CHECKPOINT, INIT):
            assert (d / f).is_file(), (name, f)


def test_a_job_keeps_the_numbers_of_the_plain_loop(full_small, tmp_path, one_thread):
    """The study's run, trained in its own job process, has the history of ``train_run``
    called in this process (the loop the study ran in-process before runs were jobs)."""
    res = json.loads((full_small / RESULT_FILE).read_text())
    _, history = train_run(small_config(), RUNS["author"], load_corpus(), tmp_path)
    assert res["runs"]["author"]["history"] == json.loads(json_text(history))


def test_interrupted_and_resumed_study_gives_the_same_numbers(
    full_small, tmp_path, one_thread, child_bytecode
):
    import shutil

    cfg = small_config()
    out = tmp_path / "resumed"
    for name in ("author", "frozen"):  # interrupted between measurements
        assert run_job(cfg, name, out / RUNS_DIR / name, stop_after=6) is None
        assert load_checkpoint(out / RUNS_DIR / name / CHECKPOINT)["trainer"]["step"] == 6
    for name in set(STUDY_RUNS) - {"author", "frozen"}:  # finished
        shutil.copytree(full_small / RUNS_DIR / name, out / RUNS_DIR / name)
    assert not (out / RESULT_FILE).exists()  # nothing merged on interruption
    # work in a run folder is neither overwritten nor silently resumed
    argv = ["collapse", "--small", "--jobs", "1", "--no-progress", "-o", str(out)]
    assert main(argv) == 2
    # the rest, one job at a time: the numbers do not depend on --jobs
    assert main([*argv, "--resume"]) == 0
    assert (out / RESULT_FILE).read_bytes() == (full_small / RESULT_FILE).read_bytes()
    timings = json.loads((out / TIMINGS_FILE).read_text())
    assert timings["jobs"] == 1 and set(timings["runs"]) == set(STUDY_RUNS)


def test_a_failed_job_is_reported_and_nothing_is_merged(tmp_path, child_bytecode):
    (tmp_path / RUNS_DIR).mkdir()
    (tmp_path / RUNS_DIR / "frozen").write_text("a file where the run's folder goes")
    with pytest.raises(JobFailedError, match=r"1 of 1 jobs failed \(frozen;") as exc:
        run_collapse(small_config(), tmp_path, runs=("frozen",), progress=False)
    assert exc.value.status == 2  # the job's own error was the user's (its -o)
    assert not (tmp_path / RESULT_FILE).exists()


def test_plots_only_redraws_from_json(full_small, tmp_path):
    import shutil

    shutil.copy(full_small / RESULT_FILE, tmp_path / RESULT_FILE)
    assert main(["collapse", "--plots-only", "-o", str(tmp_path)]) == 0
    for f in FIGURES:
        assert (tmp_path / f).read_bytes() == (full_small / f).read_bytes()


def test_plots_only_without_json_is_a_one_line_error(tmp_path, capsys):
    from pyverify.errors import InputValueError, MissingInputError
    from pyverify.report.collapse_plots import draw_all

    with pytest.raises(MissingInputError, match=r"collapse\.json not found"):
        draw_all(tmp_path)
    assert main(["collapse", "--plots-only", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path / RESULT_FILE) in err
    (tmp_path / RESULT_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(InputValueError, match="unreadable"):
        draw_all(tmp_path)
    assert main(["claims", "-i", str(tmp_path)]) == 2


def test_resume_with_other_settings_is_refused(tmp_path, capsys, one_thread):
    run_job(small_config(), "author", tmp_path, stop_after=4)
    argv = ["collapse", "--small", "--steps", "8", "--run", "author", "--no-progress",
            "--resume", "-o", str(tmp_path)]  # fmt: skip
    assert main(argv) == 2
    assert "other settings" in capsys.readouterr().err


def test_runs_differ_only_in_what_they_name(tmp_path):
    cfg = small_config()
    a, s = PLDRDecoder(cfg.model, 0), PLDRDecoder(cfg.model, 0, p_init="spread")
    for (na, pa), (_ns, ps) in zip(a.named_parameters(), s.named_parameters(), strict=True):
        same = torch.equal(pa, ps)
        assert same == (not na.endswith(".pwlst")), na
    assert float(s.layers[0].mha1.P.detach().min()) >= 0.5
    # frozen: the metric learner and W, b, P, a, b_a do not move; the rest does
    model, _ = train_run(cfg, RUNS["frozen"], load_corpus(), tmp_path, stop_after=2)
    init = PLDRDecoder(cfg.model, 0)
    mha, mha0 = model.layers[0].mha1, init.layers[0].mha1
    for p, p0 in zip(mha.metric_parameters(), mha0.metric_parameters(), strict=True):
        assert torch.equal(p, p0)
    assert not torch.equal(mha.wq.weight, mha0.wq.weight)
    opt = make_optimizer(PLDRDecoder(cfg.model, 0), cfg, RUNS["no-decay"])
    assert [g["weight_decay"] for g in opt.param_groups] == [cfg.weight_decay, 0.0]
    assert len(opt.param_groups[1]["params"]) == 2 * cfg.model.num_layers  # P and a
    # decay_vocab False: the embedding and the output layer (weight, bias) join P and a
    model = PLDRDecoder(cfg.model, 0)
    opt = make_optimizer(model, replace(cfg, decay_vocab=False), RUNS["no-decay"])
    plain = {id(p) for p in opt.param_groups[1]["params"]}
    vocab = [model.decoder.embedding.weight, model.final_layer.weight, model.final_layer.bias]
    assert all(id(p) in plain for p in vocab)
    assert len(plain) == 2 * cfg.model.num_layers + 3
    assert sum(p.numel() for g in opt.param_groups for p in g["params"]) == sum(
        p.numel() for p in model.parameters()
    )


def test_objectives_train_what_they_name(tmp_path):
    """``last``: only the final position's logits carry a gradient; ``prompt-A``: A comes from
    the prompt prefix alone and no gradient reaches the prompt positions' logits."""
    from pyverify.collapse.train import objective_loss

    cfg = small_config()
    model = PLDRDecoder(cfg.model, 0)
    x, y = load_corpus().batch(0, 0, 2, cfg.seq)
    seen = {}

    def hook(name):
        def h(_mod, _inp, out):
            out.register_hook(lambda g: seen.__setitem__(name, g.detach().clone()))

        return h

    handle = model.final_layer.register_forward_hook(hook("logits"))
    for objective, first in (("all", 0), ("last", cfg.seq - 1), ("prompt-A", cfg.prompt_len - 1)):
        loss, acc = objective_loss(model, x, y, objective, cfg.prompt_len)
        loss.backward()
        rows = seen["logits"].abs().sum(dim=(0, 2))  # gradient per position
        assert torch.all(rows[first:] > 0) and torch.all(rows[:first] == 0), objective
        assert 0 <= float(acc) <= 1
    handle.remove()
    # prompt-A: the suffix does not change the prompt's A (hence G), so positions >= prompt
    # see only earlier tokens: changing token t changes no logit before t
    with torch.no_grad():
        x2 = x.clone()
        x2[:, cfg.seq - 3] = (x2[:, cfg.seq - 3] + 1) % 256
        p = cfg.prompt_len
        l1 = model(x, a_prefix=p)[0]
        l2 = model(x2, a_prefix=p)[0]
        assert torch.equal(l1[:, : cfg.seq - 3], l2[:, : cfg.seq - 3])
        assert not torch.equal(model(x)[0][:, : cfg.seq - 3], model(x2)[0][:, : cfg.seq - 3])


def test_lr_schedule():
    cfg = small_config()
    for run in RUNS.values():
        steps = cfg.run_steps(run)
        lrs = [lr_at(s, cfg, run) for s in range(steps)]
        peak = int(np.argmax(lrs))
        assert math.isclose(max(lrs), run.peak_lr)
        assert all(a <= b for a, b in itertools.pairwise(lrs[: peak + 1]))
        assert all(a >= b for a, b in itertools.pairwise(lrs[peak:]))
        assert lrs[-1] >= cfg.min_lr_frac * run.peak_lr - 1e-15
    assert RUNS["subcritical"].peak_lr == RUNS["author"].peak_lr / 10
    # the longer runs stretch the schedule: at the full size, author's warm-up is 3 x 32
    # steps and its cosine spans 3 x the steps, so step 3k of author is step k of frozen
    from pyverify.collapse.config import full_config

    full, a, f = full_config(), RUNS["author"], RUNS["frozen"]
    assert full.run_steps(a) == 3 * full.run_steps(f) == 12_000
    for k in (1, 32, 100, 1000, 2500, 3999):
        assert math.isclose(lr_at(3 * k, full, a), lr_at(k, full, f), rel_tol=1e-12), k
    assert lr_at(0, full, a) == lr_at(0, full, f) == 0.0  # the author's warm-up starts at 0


def test_order_pair_matches_the_author_formula():
    x1 = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    x2 = torch.tensor([[1.0, 2.0], [3.0, 6.0]], dtype=torch.float64)
    num = math.sqrt(4 / 4)  # one entry differs by 2
    rms = 0.5 * (math.sqrt(30 / 4) + math.sqrt(50 / 4))
    mean = 0.5 * (10 / 4 + 12 / 4)
    got = pair_parts(x1, x2)
    assert math.isclose(got.rms, num / rms) and math.isclose(got.signed_mean, num / mean)
    assert math.isclose(got.numerator, num) and math.isclose(got.signed_mean_denominator, mean)
    assert order_pair(x1, x2) == (got.rms, got.signed_mean)
    assert order_pair(x1, x1.clone()) == (0.0, 0.0) and pair_parts(x1, x1.clone()).numerator == 0
    # zero-mean tensors: the signed-mean form is ill-conditioned, its denominator says so
    z1 = torch.tensor([1.0, -1.0], dtype=torch.float64)
    assert pair_parts(z1, -z1).signed_mean_denominator == 0.0


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
    from pyverify.measure import as_float64
    from pyverify.measure.loss import causal_val_loss, val_loss

    cfg = small_config()
    val = (load_corpus().windows(4, cfg.seq + 1, phase=0.5),)
    live = as_float64(PLDRDecoder(cfg.model, 0, p_init="spread"))
    assert abs(causal_val_loss(live, val) - val_loss(live, val)) > 1e-6
    inv = PLDRDecoder(cfg.model, 0, p_init="spread")
    with torch.no_grad():
        for layer in inv.layers:
            layer.mha1.a.zero_()
            layer.mha1.plgatt_layer.balst.normal_(generator=torch.Generator().manual_seed(1))
    inv = as_float64(inv)
    assert math.isclose(causal_val_loss(inv, val), val_loss(inv, val), rel_tol=1e-12)
