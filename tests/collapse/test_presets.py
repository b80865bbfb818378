"""Presets: ``small`` is the committed study, ``paper`` the author's recipe, ``gpu-day`` sized.

The ``small`` preset is held to the settings the committed study was run with
(``reports/collapse/collapse.json``), key for key; the ``paper`` preset to the numbers of
the author's sample script and trainer (restated here from their files, cited); the
``gpu-day`` preset to its stated sizing.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from pyverify.collapse.config import (
    GPU_DAY_STEPS,
    GPU_DAY_TFLOPS,
    PRESETS,
    RUNS,
    STUDY_RUNS,
    full_config,
    preset_config,
    small_config,
)
from pyverify.collapse.estimate import step_flops
from pyverify.collapse.train import lr_at
from pyverify.errors import InputValueError
from pyverify.paths import repo_root


def test_small_preset_is_the_committed_study():
    """The committed study (reports/collapse/collapse.json) was run with exactly the
    ``small`` preset's settings, key for key: the figures in reports/ are this preset's."""
    saved = json.loads((repo_root() / "reports" / "collapse" / "collapse.json").read_text())
    assert preset_config("small") == full_config()
    assert preset_config("small").to_dict() == saved["settings"]


def test_later_fields_appear_in_the_settings_only_when_set():
    """Fields added after the first study appear only where they differ from what it did,
    so its saved settings read back as it ran (warm-up one step ahead)."""
    d = full_config().to_dict()
    assert d["warmup_start"] == 0  # the author's warm-up, since the second study
    assert not {"bf16_autocast", "run_factors", "corpus"} & set(d)
    first = {k: v for k, v in d.items() if k != "warmup_start"}
    from pyverify.collapse.job import settings_from_dict

    assert settings_from_dict(first).warmup_start == 1
    p = preset_config("paper").to_dict()
    assert (p["warmup_start"], p["bf16_autocast"], p["run_factors"]) == (0, True, False)
    assert "corpus" not in p
    assert preset_config("small", corpus="x.npy").to_dict()["corpus"] == "x.npy"


def test_paper_preset_is_the_authors_recipe():
    """sample-train-script-pldrv510.sh: NUM_LAYERS=5, NUM_HEADS=14, DK=64, NUM_RESLAYERA=8,
    NUM_DENSEA=2, ADFF=180, CONTEXT_LENGTH=1024 (packed chunks; the step trains on
    inp[:, :-1] -> inp[:, 1:], 1023 positions), BATCH_SIZE=16, TRAIN_BATCHES_CNT=250000,
    WARMUP_STEPS=2000, LEARNING_RATE=1e-3, LR_ALPHA=0.1, ADAMW_DECAY=0.1;
    dist_pldr_v510_train_main.py: dff = floor(num_heads dk 4 2/3) = 2389; their tokenizer:
    32,000 pieces; pldr_run_model_v510.py: AdamW (0.9, 0.95), eps 1e-5, clip by value 1.0,
    bf16 autocast."""
    cfg = preset_config("paper")
    m = cfg.model
    assert (m.num_layers, m.num_heads, m.dk, m.d_model) == (5, 14, 64, 896)
    assert (m.num_reslayer, m.num_dense, m.a_dff, m.vocab) == (8, 2, 180, 32000)
    assert m.dff == math.floor(14 * 64 * 4 * 2 / 3) == 2389
    assert (cfg.seq + 1, cfg.batch) == (1024, 16)
    assert (cfg.betas, cfg.adam_eps, cfg.weight_decay, cfg.grad_clip_value) == (
        (0.9, 0.95), 1e-5, 0.1, 1.0)  # fmt: skip
    run = RUNS["author"]
    assert cfg.run_steps(run) == 250_000 and run.peak_lr == 1e-3 and cfg.min_lr_frac == 0.1
    assert round(run.warmup_frac * cfg.run_steps(run)) == 2000
    assert cfg.bf16_autocast and cfg.warmup_start == 0
    assert all(cfg.run_steps(r) == 250_000 for r in RUNS.values())


def test_warmup_start_one_is_the_first_studys_schedule_and_zero_the_authors():
    """The author's LambdaLR (built at step 0, stepped after each optimiser step) gives step
    t the factor t / W during warm-up, so their first step has lr 0; the first study's
    first step had lr peak / W. After the warm-up both are the same cosine. The study
    follows the author's since the recipe check found the offset."""
    run = RUNS["author"]
    study, author = replace(full_config(), warmup_start=1), full_config()
    W = round(run.warmup_frac * study.run_steps(run))
    for t in (0, 1, W // 2, W - 1):
        assert lr_at(t, study, run) == run.peak_lr * (t + 1) / W
        assert lr_at(t, author, run) == pytest.approx(run.peak_lr * t / W, abs=1e-18)
    for t in (W, W + 7, study.run_steps(run) - 1):
        assert lr_at(t, study, run) == lr_at(t, author, run)


def test_gpu_day_preset_holds_its_stated_sizing():
    """Its seven runs (11 x steps with the study's factors) at the assumed rate fill 24 h
    within 10 % (a changed shape or step count without a new sizing fails here)."""
    cfg = preset_config("gpu-day")
    units = sum(cfg.run_steps(RUNS[n]) for n in STUDY_RUNS) / cfg.steps
    assert units == 11 and cfg.steps == GPU_DAY_STEPS
    hours = units * cfg.steps * step_flops(cfg) / (GPU_DAY_TFLOPS * 1e12) / 3600
    assert 0.9 * 24 <= hours <= 1.1 * 24
    m = cfg.model
    assert (m.dk, m.a_dff, m.num_reslayer, m.num_dense, m.num_layers, cfg.seq) == (
        64, 180, 8, 2, 5, 1023)  # fmt: skip


def test_presets_validate_and_take_a_corpus_vocabulary():
    for name in PRESETS:
        assert preset_config(name).validate()
        assert preset_config(name, vocab=50257).model.vocab == 50257
    with pytest.raises(InputValueError, match="--preset must be one of"):
        preset_config("huge")
    assert small_config().to_dict() == replace(small_config()).to_dict()


def test_warmup_start_is_validated():
    with pytest.raises(InputValueError, match="warmup_start"):
        replace(full_config(), warmup_start=2).validate()
