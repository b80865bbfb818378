"""The text regime's BPE: the vendored tokenizer, its split, the corpus hook, per-byte losses."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from pyverify.collapse import bpe, corpus
from pyverify.collapse.corpus import load_corpus
from pyverify.data import TOKENIZER_FILE, VENDORED, vendored_dir, vendored_file
from pyverify.errors import InputValueError


@pytest.fixture(scope="module")
def tok():
    return bpe.load_tokenizer()


def test_the_vendored_tokenizer_matches_its_sha256_here_and_in_the_readme():
    path = vendored_file(TOKENIZER_FILE)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == VENDORED[TOKENIZER_FILE]
    readme = (vendored_dir() / "README.md").read_text()
    assert re.search(rf"`{re.escape(TOKENIZER_FILE)}` \| `{VENDORED[TOKENIZER_FILE]}`", readme)


def test_training_again_gives_the_vendored_bytes(capsys):
    """The regeneration (``python -m pyverify.collapse.bpe --check``): byte-identical."""
    assert bpe.main(["--check"]) == 0
    assert "matches" in capsys.readouterr().out


def test_the_split_cuts_at_a_line_boundary_near_90_percent():
    raw = bpe.corpus_text()
    train, val = bpe.split_text(raw)
    mark = int(len(raw) * 0.9)
    assert train + val == raw and train.endswith(b"\n")
    assert len(train) <= mark and b"\n" not in raw[len(train) : mark]
    assert bpe.split_text(b"ab\ncd\nef\ngh\n", 0.5) == (b"ab\ncd\n", b"ef\ngh\n")
    with pytest.raises(InputValueError, match="no line boundary"):
        bpe.split_text(b"no newline at all")


def test_the_trainer_is_given_exactly_the_training_text(monkeypatch):
    seen: list[str] = []

    class Fake:
        def to_str(self, pretty: bool = False) -> str:
            return "{}"

    def fake_train(text: str, vocab_size: int = bpe.BPE_VOCAB) -> Fake:
        seen.append(text)
        return Fake()

    monkeypatch.setattr(bpe, "train_tokenizer", fake_train)
    assert bpe.tokenizer_json() == "{}"
    train, val = bpe.split_text(bpe.corpus_text())
    assert seen == [train.decode("utf-8")]
    assert val.decode("utf-8")[:1000] not in seen[0]  # the validation text is not in it


@pytest.mark.parametrize(
    "text",
    [
        "",
        "def f(x):\n    return x ** 2\n",
        "  leading  and trailing  ",
        "naïve café — ∑ 日本 🐍\t\r\n",
    ],
)
def test_the_tokenizer_round_trips_and_its_pieces_count_bytes(tok, text):
    ids = tok.encode(text).ids
    assert tok.decode(ids) == text
    lengths = bpe.token_byte_lengths(tok)
    assert int(lengths[ids].sum()) == len(text.encode("utf-8"))


def test_the_vocabulary_is_1024_pieces_with_every_byte(tok):
    lengths = bpe.token_byte_lengths(tok)
    assert tok.get_vocab_size() == bpe.BPE_VOCAB == len(lengths) == 1024
    assert int((lengths == 1).sum()) == 256 and int(lengths.min()) == 1


def test_tokenised_encodes_each_split_and_caches_it(monkeypatch, tmp_path, tok):
    raw = bpe.corpus_text()[:200_000]
    monkeypatch.setattr(bpe, "corpus_text", lambda: raw)
    monkeypatch.setenv("PYVERIFY_CACHE_DIR", str(tmp_path))
    first = bpe.tokenised()
    cached = list(tmp_path.glob("bpe-*.npz"))
    assert len(cached) == 1
    again = bpe.tokenised()
    train, val = bpe.split_text(raw)
    for got in (first, again):
        assert got.vocab == 1024 and got.train.dtype == got.val.dtype == np.uint16
        assert tok.decode(got.train.tolist()) == train.decode()
        assert tok.decode(got.val.tolist()) == val.decode()
        assert got.val_bytes == len(val)
    assert np.array_equal(first.train, again.train) and np.array_equal(first.val, again.val)


def test_the_corpus_hook_names_bpe(monkeypatch):
    fake = bpe.Tokenised(
        train=np.arange(100, dtype=np.uint16) % 1024, val=np.arange(30, dtype=np.uint16),
        vocab=1024, val_bytes=70,
    )  # fmt: skip
    monkeypatch.setattr(corpus, "tokenised", lambda: fake)
    load_corpus.cache_clear()
    try:
        c = load_corpus("bpe")
        assert c.vocab == 1024 and c.train is fake.train and c.val is fake.val
    finally:
        load_corpus.cache_clear()


def test_an_unknown_corpus_name_is_one_line():
    with pytest.raises(InputValueError, match="unknown corpus name 'bpx'") as err:
        load_corpus("bpx")
    assert "\n" not in str(err.value) and "named corpora: bpe" in str(err.value)


def test_per_byte_divides_by_the_scored_targets_bytes():
    lengths = np.array([1, 2, 3, 4])
    windows = np.array([[0, 1, 2], [3, 3, 1]])
    # targets [1:]: ids 1, 2, 3, 1 -> 2 + 3 + 4 + 2 = 11 bytes over 4 tokens
    assert bpe.bytes_per_token(windows, lengths) == pytest.approx(11 / 4)
    assert bpe.per_byte(2.2, windows, lengths) == pytest.approx(2.2 * 4 / 11)
    # after a 2-token prompt: targets ids 2, 1 -> 3 + 2 bytes
    assert bpe.per_byte(1.0, windows, lengths, start=2) == pytest.approx(2 / 5)
    with pytest.raises(InputValueError, match="no targets"):
        bpe.bytes_per_token(windows, lengths, start=3)
