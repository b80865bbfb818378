"""A user's tokenised corpus (``--corpus``): the format, the split, the one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pyverify.cli import main
from pyverify.collapse.corpus import load_corpus, read_tokens
from pyverify.errors import InputValueError


def _write(path, ids, meta):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".npy":
        np.save(path, ids)
    else:
        ids.tofile(path)
    path.with_name(path.name + ".json").write_text(json.dumps(meta))
    return path


@pytest.fixture
def ids():
    return np.random.default_rng(0).integers(0, 1000, 5000)


@pytest.mark.parametrize("kind", ["npy-int64", "npy-uint16", "bin-uint16", "bin-uint32"])
def test_formats_read_back_the_same_ids_split_90_10(tmp_path, ids, kind):
    fmt, dt = kind.split("-")
    path = tmp_path / f"tokens.{fmt}"
    meta = {"vocab_size": 1000} | ({"dtype": dt} if fmt == "bin" else {})
    _write(path, ids.astype(dt), meta)
    got, vocab = read_tokens(path)
    assert vocab == 1000 and np.array_equal(np.asarray(got), ids)
    c = load_corpus(str(path))
    assert c.vocab == 1000 and len(c.train) == 4500 and len(c.val) == 500
    assert np.array_equal(np.concatenate([c.train, c.val]), ids)
    x, y = c.batch(0, 3, 4, 16)
    assert x.shape == y.shape == (4, 16) and int(x.max()) < 1000
    assert np.array_equal(x[:, 1:].numpy(), y[:, :-1].numpy())  # next-token targets
    assert c.windows(5, 20).shape == (5, 20)


def test_the_default_corpus_is_the_vendored_bytes():
    c = load_corpus()
    assert c.vocab == 256 and c.train.dtype == np.uint8 and len(c.train) > 10**6


@pytest.mark.parametrize(
    ("meta", "payload", "match"),
    [
        (None, None, "tokens.npy.json not found"),
        ({"vocab_size": 1}, None, "vocab_size must be an int >= 2"),
        ({"vocab_size": "32000"}, None, "vocab_size must be an int >= 2"),
        ({"vocab_size": 999}, None, "id 999 at position"),
        ({"vocab_size": 1000}, np.arange(10.0), "1-D array of integer ids"),
        ({"vocab_size": 1000}, np.zeros((2, 3), dtype=np.int32), "1-D array of integer ids"),
        ({"vocab_size": 1000}, np.array([3, -1, 4]), "id -1 at position 1"),
    ],
)
def test_bad_npy_files_are_one_line_errors(tmp_path, ids, meta, payload, match):
    path = tmp_path / "tokens.npy"
    np.save(path, ids if payload is None else payload)
    if meta is not None:
        path.with_name("tokens.npy.json").write_text(json.dumps(meta))
    with pytest.raises(InputValueError, match=match) as err:
        read_tokens(path)
    assert "\n" not in str(err.value) and str(path.name) in str(err.value)


def test_bad_raw_files_are_one_line_errors(tmp_path):
    path = tmp_path / "tokens.bin"
    np.arange(10, dtype=np.uint16).tofile(path)
    (tmp_path / "tokens.bin.json").write_text('{"vocab_size": 50}')
    with pytest.raises(InputValueError, match='needs "dtype"'):
        read_tokens(path)
    (tmp_path / "tokens.bin.json").write_text('{"vocab_size": 1048576, "dtype": "uint32"}')
    assert len(read_tokens(path)[0]) == 5  # 20 bytes: five uint32
    path.write_bytes(b"\x01\x00\x00")
    with pytest.raises(InputValueError, match="not a whole number of uint32"):
        read_tokens(path)
    (tmp_path / "tokens.bin.json").write_text("{nope")
    with pytest.raises(InputValueError, match="unreadable"):
        read_tokens(path)
    with pytest.raises(InputValueError, match="is not a file"):
        read_tokens(tmp_path / "missing.bin")


def test_the_cli_reports_a_bad_corpus_in_one_line(tmp_path, capsys):
    path = _write(tmp_path / "t.npy", np.array([1, 2, 70000]), {"vocab_size": 32000})
    assert main(["collapse", "--corpus", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "id 70000 at position 2" in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_user_corpus_feeds_the_baseline_and_training(tmp_path):
    """The settings carry the corpus (its file and vocabulary): the n-gram baseline counts
    its ids, the trainer draws its batches and sizes the model's vocabulary by it."""
    from dataclasses import replace

    from pyverify.collapse.config import RUNS, small_config
    from pyverify.collapse.runner import baseline
    from pyverify.collapse.train import train_run

    ids = np.random.default_rng(1).integers(0, 700, 60_000)
    path = _write(tmp_path / "c.npy", ids.astype(np.uint16), {"vocab_size": 700})
    base = small_config()
    cfg = replace(base, model=replace(base.model, vocab=700), corpus=str(path)).validate()
    b = baseline(cfg)
    assert np.isfinite(b["val_loss"]) and b["val_loss"] != baseline(base)["val_loss"]
    model, history = train_run(cfg, RUNS["frozen"], load_corpus(cfg.corpus), tmp_path / "run",
                               stop_after=2)  # fmt: skip
    assert model.final_layer.out_features == 700 and history[0]["step"] == 0
    assert cfg.to_dict()["corpus"] == str(path)
