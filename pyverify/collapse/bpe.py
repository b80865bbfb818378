"""The text regime's tokenizer: byte-level BPE trained on the corpus's training split.

The vendored corpus (``pyverify/data/python311-docs.txt.xz``) is split at a line
boundary near its 90 % byte mark (:func:`split_text`): the training text is every
byte up to and including the last newline at or before byte ``floor(0.9 n)``, the
validation text the rest. The tokenizer is trained by the ``tokenizers`` library
(pinned in ``pyproject.toml``) on the training text alone (:func:`tokenizer_json`):
the validation text is never seen by the trainer. It is vendored as
``pyverify/data/python311-docs-bpe1024.json`` (sha256 in :data:`pyverify.data.VENDORED`);
``python -m pyverify.collapse.bpe --check`` trains it again and compares the bytes,
``-o FILE`` writes the regenerated file.

Settings (fixed before any run of the regime; :data:`BPE_SETTINGS`):

* ``vocab_size`` 1024 (256 bytes and 768 merges). Why this size: the training split
  holds 9.96 MB, which a 1024-piece vocabulary cuts into 3.79M tokens, ~3,700 per
  type on average (2048 pieces: 3.16M tokens, ~1,540 per type; 4096: 2.76M, ~670),
  so a token n-gram's contexts and a small model's embedding rows both see enough
  examples; and the output layer of the study's model (d_model 128) stays at 17 % of
  a training step's FLOPs (0.81e9 of 4.68e9 at 16 x 64 tokens), where 4096 pieces
  would make it ~45 %, paid at every token on a CPU budget.
* ``min_frequency`` 2 (a merge must occur at least twice); the initial alphabet is
  all 256 byte symbols, so every text encodes, and no special tokens (every id is
  text; the study scores every position).
* Pre-tokenizer and decoder: ``ByteLevel`` (GPT-2's byte-to-symbol map and split
  regex, ``add_prefix_space`` False), no normaliser: ``decode(encode(text)) == text``
  for every text, and each piece is a whole number of bytes (one per symbol, so
  :func:`token_byte_lengths` reads a piece's length in bytes off its symbols).

Training is deterministic: the same file in repeated trainings, in separate processes
and with ``RAYON_NUM_THREADS=1`` (checked with ``tokenizers`` 0.23.3).

The tokenised corpus (:func:`tokenised`) is the training text's ids and the validation
text's ids, each encoded whole (~25 s on one loaded core), cached under
:func:`cache_dir` by the sha256 of the tokenizer and of the corpus.
"""

from __future__ import annotations

import argparse
import hashlib
import lzma
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from pyverify.data import CORPUS_FILE, TOKENIZER_FILE, VENDORED, vendored_file
from pyverify.errors import InputValueError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "BPE_SETTINGS",
    "BPE_VOCAB",
    "SPLIT_FRACTION",
    "Tokenised",
    "bytes_per_token",
    "cache_dir",
    "corpus_text",
    "load_tokenizer",
    "per_byte",
    "split_text",
    "token_byte_lengths",
    "tokenised",
    "tokenizer_json",
    "train_tokenizer",
]

BPE_VOCAB = 1024
SPLIT_FRACTION = 0.9
BPE_SETTINGS: dict[str, Any] = {
    "vocab_size": BPE_VOCAB,
    "min_frequency": 2,
    "initial_alphabet": "ByteLevel.alphabet() (256 symbols)",
    "special_tokens": [],
    "pre_tokenizer": "ByteLevel(add_prefix_space=False, use_regex=True)",
    "decoder": "ByteLevel()",
    "normalizer": None,
}
"""The trainer's settings (module docstring), as :func:`train_tokenizer` applies them."""
_CACHE_VERSION = 1
"""Bumped when the cached arrays' layout or the split rule changes."""


def corpus_text() -> bytes:
    """The vendored corpus, uncompressed (sha256 of the ``.xz`` checked)."""
    with lzma.open(vendored_file(CORPUS_FILE), "rb") as fh:
        return fh.read()


def split_text(raw: bytes, fraction: float = SPLIT_FRACTION) -> tuple[bytes, bytes]:
    """``(train, val)``: ``raw`` cut after the last newline at or before ``floor(fraction n)``.

    Raises :class:`~pyverify.errors.InputValueError` when either part would be empty.
    """
    mark = int(len(raw) * fraction)
    cut = raw.rfind(b"\n", 0, mark) + 1
    if cut <= 0 or cut >= len(raw):
        raise InputValueError(f"no line boundary before byte {mark:,} of {len(raw):,}")
    return raw[:cut], raw[cut:]


def train_tokenizer(text: str, vocab_size: int = BPE_VOCAB) -> Tokenizer:
    """A byte-level BPE tokenizer trained on ``text`` alone (:data:`BPE_SETTINGS`)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=BPE_SETTINGS["min_frequency"],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator([text], trainer=trainer)
    return tok


def tokenizer_json() -> str:
    """The vendored tokenizer's content, made again: trained on the training split only."""
    train, _ = split_text(corpus_text())
    return train_tokenizer(train.decode("utf-8")).to_str(pretty=True)


def load_tokenizer() -> Tokenizer:
    """The vendored tokenizer (sha256 checked)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(vendored_file(TOKENIZER_FILE)))


def token_byte_lengths(tok: Tokenizer) -> NDArray[np.int64]:
    """Bytes of each piece, indexed by id (a ``ByteLevel`` symbol is one byte)."""
    from tokenizers import pre_tokenizers

    alphabet = set(pre_tokenizers.ByteLevel.alphabet())
    vocab = tok.get_vocab()
    lengths = np.zeros(len(vocab), dtype=np.int64)
    for piece, i in vocab.items():
        if not set(piece) <= alphabet:
            raise InputValueError(f"piece {piece!r} (id {i}) is not made of byte symbols")
        lengths[i] = len(piece)
    return lengths


@dataclass(frozen=True)
class Tokenised:
    """The corpus in BPE ids: the training text's, the validation text's, the vocabulary."""

    train: NDArray[np.uint16]
    val: NDArray[np.uint16]
    vocab: int
    val_bytes: int
    """Bytes of the validation text (``val_bytes / len(val)``: its bytes per token)."""

    @property
    def val_bytes_per_token(self) -> float:
        """Bytes per token of the whole validation text."""
        return self.val_bytes / len(self.val)


def cache_dir() -> Path:
    """``$PYVERIFY_CACHE_DIR``, else ``$XDG_CACHE_HOME/pyverify``, else ``~/.cache/pyverify``."""
    if os.environ.get("PYVERIFY_CACHE_DIR"):
        return Path(os.environ["PYVERIFY_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pyverify"


def _encode(tok: Tokenizer, text: bytes) -> NDArray[np.uint16]:
    return np.asarray(tok.encode(text.decode("utf-8")).ids, dtype=np.uint16)


def tokenised() -> Tokenised:
    """The vendored corpus in the vendored tokenizer's ids, each split encoded whole.

    Cached in ``cache_dir()/bpe-<key>.npz`` (``key``: the sha256 of the tokenizer, the
    corpus and the cache layout); written atomically, so jobs started together are safe.
    """
    key = hashlib.sha256(
        f"{VENDORED[TOKENIZER_FILE]}:{VENDORED[CORPUS_FILE]}:{_CACHE_VERSION}".encode()
    ).hexdigest()[:16]
    path = cache_dir() / f"bpe-{key}.npz"
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                return Tokenised(z["train"], z["val"], int(z["vocab"]), int(z["val_bytes"]))
        except (OSError, KeyError, ValueError):
            pass  # a damaged cache: encode again
    tok = load_tokenizer()
    train, val = split_text(corpus_text())
    out = Tokenised(_encode(tok, train), _encode(tok, val), tok.get_vocab_size(), len(val))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, train=out.train, val=out.val, vocab=out.vocab, val_bytes=out.val_bytes)
    os.replace(tmp, path)
    return out


def bytes_per_token(
    windows: NDArray[np.integer], lengths: NDArray[np.integer], start: int = 1
) -> float:
    """Mean bytes of the scored targets ``windows[:, start:]`` (``lengths``: bytes by id).

    Parameters
    ----------
    windows : numpy array of int, shape (N, S + 1)
        The validation windows a loss was measured on.
    lengths : numpy array of int, shape (vocab,)
        Bytes of each piece (:func:`token_byte_lengths`).
    start : int, default 1
        First scored position: 1 for the teacher-forced and causal losses and the
        n-gram (targets ``[1:]``); ``p`` for the loss after a ``p``-token prompt.

    Returns
    -------
    float
        Bytes per scored token.
    """
    targets = np.asarray(windows)[:, start:]
    if targets.size == 0:
        raise InputValueError(f"no targets after position {start} in windows {windows.shape}")
    return float(np.asarray(lengths)[targets].sum() / targets.size)


def per_byte(
    loss_per_token: float,
    windows: NDArray[np.integer],
    lengths: NDArray[np.integer],
    start: int = 1,
) -> float:
    """Nats per byte of a per-token loss on ``windows[:, start:]``: loss x tokens per byte."""
    return loss_per_token / bytes_per_token(windows, lengths, start)


def main(argv: list[str] | None = None) -> int:
    """``python -m pyverify.collapse.bpe [--check | -o FILE]``: train the tokenizer again."""
    ap = argparse.ArgumentParser(prog="python -m pyverify.collapse.bpe", description=__doc__)
    ap.add_argument("--check", action="store_true", help="compare with the vendored file")
    ap.add_argument("-o", "--output", type=Path, help="write the regenerated tokenizer here")
    args = ap.parse_args(argv)
    text = tokenizer_json()
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output} (sha256 {digest})")
    if args.check:
        same = digest == VENDORED[TOKENIZER_FILE]
        print(f"regenerated sha256 {digest}: {'matches' if same else 'DIFFERS from'} "
              f"the vendored {TOKENIZER_FILE}")  # fmt: skip
        return 0 if same else 1
    if args.output is None:
        print(digest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
