"""The estimate printed before a run: parameters, FLOPs, a timed step, the dry run.

The counts have independent oracles: the model's own ``numel`` and torch's
``FlopCounterMode`` (which counts every matrix product the model runs, forward and
backward). Timings are run, never asserted.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import pyverify.collapse.estimate as est
from pyverify.cli import main
from pyverify.collapse.config import GPU_DAY_MODEL, PAPER_MODEL, preset_config, small_config
from pyverify.trainable.decoder import ModelConfig, PLDRDecoder

SHAPES = [
    ModelConfig(vocab=50, d_model=32, num_heads=4, num_layers=2, dff=40, a_dff=12, num_reslayer=3),
    ModelConfig(vocab=7, d_model=12, num_heads=3, num_layers=1, dff=5, a_dff=3, num_reslayer=1,
                num_dense=1),
]  # fmt: skip


@pytest.mark.parametrize("m", [*SHAPES, small_config().model, preset_config("small").model])
def test_parameter_count_is_the_models(m):
    assert est.param_count(m)["total"] == sum(p.numel() for p in PLDRDecoder(m).parameters())


def test_parameter_count_of_the_large_presets():
    """110M for the paper's model (the paper's name for it); the uninitialised model holds
    no pages it does not touch."""
    for m, total in ((PAPER_MODEL, 109_844_562), (GPU_DAY_MODEL, 52_187_474)):
        assert est.param_count(m)["total"] == total
        assert sum(p.numel() for p in PLDRDecoder(m, init=False).parameters()) == total


@pytest.mark.parametrize("m", SHAPES)
@pytest.mark.parametrize("S", [1, 9, 20])
def test_flops_are_every_matrix_product_the_model_runs(m, S):
    """Forward: exactly FlopCounterMode's count (2 m k n a product); backward: exactly twice
    the forward (each product's two gradients), so a step is 3 forward passes."""
    model = PLDRDecoder(m, seed=0)
    toks = torch.randint(0, m.vocab, (3, S), generator=torch.Generator().manual_seed(0))
    with FlopCounterMode(display=False) as fwd:
        logits = model(toks)[0]
    with FlopCounterMode(display=False) as bwd:
        logits.square().mean().backward()
    want = est.forward_flops(m, S)["total"]
    assert fwd.get_total_flops() == 3 * want
    assert bwd.get_total_flops() == 2 * 3 * want
    cfg = replace(small_config(), model=m, batch=3, seq=S)
    assert est.step_flops(cfg) == fwd.get_total_flops() + bwd.get_total_flops()


def test_six_nd_leaves_out_the_scores_and_the_learner():
    cfg = preset_config("paper")
    parts = est.forward_flops(cfg.model, cfg.seq)
    assert est.six_nd(cfg) < est.step_flops(cfg)
    assert parts["scores"] > 0.1 * parts["total"]  # context 1023: the S x S scores count


def test_a_cpu_measures_a_large_shape_reduced_and_scales(monkeypatch):
    """The scaling: forward and backward by FLOPs, the optimiser by parameters."""
    cfg = replace(small_config(), batch=2, seq=16)
    e = est.estimate(cfg, torch.device("cpu"), preset="t", runs=("author", "frozen"))
    assert not e.scaled and e.step_s == e.timing.step_s > 0
    assert e.runs == {"author": 36, "frozen": 12} and e.study_steps() == 48
    monkeypatch.setattr(est, "CPU_FLOP_BUDGET", 1.0)
    e = est.estimate(cfg, torch.device("cpu"), preset="t")
    small = est.reduced(cfg)
    t = e.timing
    assert e.scaled and t.cfg == small and small.batch == 1 and small.model.num_layers == 1
    fb = (t.step_s - t.optimizer_s) * est.step_flops(cfg) / est.step_flops(small)
    params = est.param_count(cfg.model)["total"] / est.param_count(small.model)["total"]
    opt = t.optimizer_s * params
    assert e.step_s == pytest.approx(fb + opt, rel=1e-12)
    text = est.format_estimate(e, corpus_tokens=10**6)
    assert "reduced shape" in text and "scaled to this shape by FLOPs" in text
    assert "epochs" in text and "6ND" in text


def test_paper_dry_run_prints_its_estimate_on_this_cpu(capsys):
    """Done-when of issue 28: measured at a reduced shape (never the 110M model), exit 0."""
    assert main(["collapse", "--preset", "paper", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "parameters: 109,844,562" in out and "context 1023 (+1 target)" in out
    assert "reduced shape (layers 1, vocabulary 4096, batch 1, context 128" in out
    assert "250,000 steps" in out and "estimate:" in out


def test_dry_run_and_preset_errors_are_one_line(capsys):
    assert main(["collapse", "--small", "--preset", "paper", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "exclude each other" in err and err.count("\n") == 1
    if not torch.cuda.is_available():
        assert main(["collapse", "--device", "cuda", "--dry-run"]) == 2
        assert "CUDA is not available" in capsys.readouterr().err


def test_batch_option_sets_the_global_batch(capsys):
    """``--batch`` overrides the preset's global batch (the author's BATCH_SIZE is per GPU:
    16 N on N GPUs) and the estimate counts its tokens; 0 is refused in one line."""
    assert main(["collapse", "--small", "--batch", "6", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "global batch 6" in out and "tokens: 96 a step (batch 6 x 16)" in out
    with pytest.raises(SystemExit) as exc:
        main(["collapse", "--small", "--batch", "0", "--dry-run"])
    assert exc.value.code == 2
    assert "argument --batch: must be >= 1" in capsys.readouterr().err
