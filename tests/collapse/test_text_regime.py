"""The text regime's preset and its per-byte losses (from the windows actually scored)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from pyverify.collapse import text_regime
from pyverify.collapse.config import full_config
from pyverify.collapse.job import read_settings, settings_from_dict
from pyverify.errors import InputValueError


def test_the_preset_is_the_study_on_the_bpe_corpus():
    cfg = text_regime.text_config()
    full = full_config()
    assert cfg.corpus == "bpe" and cfg.model.vocab == 1024
    assert cfg.model.d_model == full.model.d_model and cfg.steps == full.steps
    assert settings_from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert text_regime.text_config(seed=2).seed == 2


def test_the_settings_file_is_what_a_job_reads(tmp_path):
    path = tmp_path / "settings.json"
    assert text_regime.main(["settings", str(path), "--seed", "1"]) == 0
    assert read_settings(path) == text_regime.text_config(seed=1)


def _result(cfg, entry, base):
    return {"settings": cfg.to_dict(), "baseline": {"val_loss_by_order": base}, "entry": entry}


def test_per_byte_losses_on_the_byte_corpus_are_the_per_token_ones(monkeypatch):
    cfg = full_config()
    monkeypatch.setattr(
        text_regime, "scored_bytes_per_token", lambda c: {"targets": 1.0, "after_prompt": 1.0}
    )
    entry = {"val_loss": 1.5, "causal_val_loss": 1.7, "prompt_A_val_loss": 1.6}
    d = text_regime.per_byte_losses(_result(cfg, entry, [3.0, 2.0, 1.48]))
    assert d["per_byte"]["causal_val_loss"] == 1.7 and d["best_order"] == 3
    assert d["passed"] is False


def test_per_byte_losses_divide_each_loss_by_its_own_targets(monkeypatch):
    cfg = text_regime.text_config()
    monkeypatch.setattr(
        text_regime, "scored_bytes_per_token", lambda c: {"targets": 2.5, "after_prompt": 2.0}
    )
    entry = {"val_loss": 2.5, "causal_val_loss": 2.6, "prompt_A_val_loss": 3.0}
    d = text_regime.per_byte_losses(_result(cfg, entry, [5.0, 3.0, 2.75, 2.8]))
    assert d["per_byte"]["val_loss"] == pytest.approx(1.0)
    assert d["per_byte"]["causal_val_loss"] == pytest.approx(1.04)
    assert d["per_byte"]["prompt_A_val_loss"] == pytest.approx(1.5)
    assert d["per_byte"]["ngram_best"] == pytest.approx(1.1) and d["best_order"] == 3
    assert d["passed"] is True
    assert "PASS" in text_regime.format_losses(d)


def test_scored_bytes_come_from_the_scored_windows(monkeypatch):
    from pyverify.collapse.corpus import Corpus

    # ids 0..3 of 1, 2, 3, 4 bytes; the validation split repeats 0 1 2 3
    val = np.tile(np.arange(4, dtype=np.uint16), 10_000)
    fake = Corpus(train=val.copy(), val=val, vocab=1024)
    monkeypatch.setattr(text_regime, "load_corpus", lambda c: fake)
    monkeypatch.setattr(text_regime, "_lengths", lambda c: np.array([1, 2, 3, 4] + [1] * 1020))
    cfg = text_regime.text_config()
    got = text_regime.scored_bytes_per_token(cfg)
    win = fake.windows(cfg.n_val, cfg.seq + 1, phase=0.5).numpy()
    lengths = np.array([1, 2, 3, 4])
    assert got["targets"] == pytest.approx(lengths[win[:, 1:]].mean())
    assert got["after_prompt"] == pytest.approx(lengths[win[:, cfg.prompt_len :]].mean())


def test_a_user_corpus_has_no_known_bytes_per_token():
    cfg = text_regime.text_config()
    with pytest.raises(InputValueError, match="unknown for the corpus"):
        text_regime._lengths(replace(cfg, corpus="tokens.npy"))
