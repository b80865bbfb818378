"""The training corpus: token ids, a fixed split, seeded batches and probe sets.

The default corpus is the vendored Python 3.11 documentation (``pyverify/data/``,
PSF licence, sha256 checked on load). Tokenizer: UTF-8 bytes, vocabulary 256
(every text round-trips exactly; no trained merges to keep).

A user's corpus (``pyverify collapse --corpus PATH``, :func:`load_corpus`) is a file
of token ids already produced by their tokenizer:

* ``PATH`` ending in ``.npy``: a 1-D NumPy array of an integer dtype;
* any other ``PATH`` (e.g. ``.bin``): raw little-endian ids, ``uint16`` or ``uint32``;
* beside it, ``PATH.json`` (e.g. ``tokens.bin.json``):
  ``{"vocab_size": 32000, "dtype": "uint16"}`` (``dtype`` for raw files only). The
  model's vocabulary is ``vocab_size`` (as the author's trainer takes its size from
  the tokenizer); every id must lie in ``[0, vocab_size)``.

A named corpus instead of a file: ``bpe``, the vendored text in the vendored byte-level
BPE's 1,024 ids (:mod:`~pyverify.collapse.bpe`: train ids from the training text, val
ids from the validation text, split at a line boundary near 90 % of the bytes and
encoded apart; the tokenizer never saw the validation text). A ``corpus`` with no
``/`` and no ``.`` that is not a file is read as a name; an unknown one is refused.

The file is memory-mapped, never read whole. Note: the author's loss skips targets
of id 0 (their ``[PAD]``; packed chunks hold none); this trainer scores every
position, so a corpus whose id 0 is a real token trains differently there.

Split: the first 90 % of the tokens train, the last 10 % validate (contiguous,
fixed). A batch for step ``t`` is drawn from ``numpy.random.default_rng([seed,
t])``, so a run resumed at step ``t`` sees exactly the batches an uninterrupted run
sees. Probe sets and prompts are evenly spaced windows of the validation part:
fixed inputs, the same for every measurement and both regimes.
"""

from __future__ import annotations

import lzma
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from numpy.typing import NDArray

from pyverify.collapse.bpe import tokenised
from pyverify.data import CORPUS_FILE, vendored_file
from pyverify.errors import InputValueError
from pyverify.output import read_json

if TYPE_CHECKING:
    from pyverify.collapse.config import RunConfig
    from pyverify.collapse.recall import RecallTask

__all__ = [
    "NAMED_CORPORA", "VOCAB", "Corpus", "decode", "encode", "load_corpus", "load_data",
    "read_tokens",
]  # fmt: skip

VOCAB = 256
VAL_FRACTION = 0.1
RAW_DTYPES = ("uint16", "uint32")
NAMED_CORPORA = ("bpe",)
"""Corpora named instead of given as a file (module docstring)."""
_SCAN = 1 << 24
"""Ids checked per chunk when a corpus is validated (64 MiB of uint32)."""


def encode(text: str) -> NDArray[np.uint8]:
    """UTF-8 bytes of ``text`` as token ids."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()


def decode(tokens: NDArray[np.integer] | list[int]) -> str:
    """Token ids back to text (invalid UTF-8 sequences replaced)."""
    return bytes(int(t) for t in tokens).decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Corpus:
    """Train and validation token arrays (uint8 bytes, BPE or a user's ids) and the vocabulary."""

    train: NDArray[np.integer]
    val: NDArray[np.integer]
    vocab: int = VOCAB

    def batch(
        self, seed: int, step: int, batch: int, seq: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and next-token targets ``(batch, seq)`` for training step ``step``."""
        rng = np.random.default_rng([seed, step])
        starts = rng.integers(0, len(self.train) - seq - 1, size=batch)
        win = np.stack([self.train[s : s + seq + 1] for s in starts]).astype(np.int64)
        t = torch.from_numpy(win)
        return t[:, :-1], t[:, 1:]

    def windows(self, n: int, seq: int, phase: float = 0.0) -> torch.Tensor:
        """``n`` evenly spaced validation windows of length ``seq`` (int64 ``(n, seq)``).

        ``phase`` in ``[0, 1)`` shifts the grid, giving disjoint fixed sets
        (probes, validation batches, prompts).
        """
        if n < 1 or seq < 1 or n * seq > len(self.val):
            raise InputValueError(
                f"cannot cut {n} windows of {seq} tokens from the validation split"
            )
        stride = (len(self.val) - seq - 1) // n
        starts = [int(i * stride + phase * stride) for i in range(n)]
        return torch.from_numpy(np.stack([self.val[s : s + seq] for s in starts]).astype(np.int64))


def _sidecar(path: Path, what: str) -> dict:
    side = path.with_name(path.name + ".json")
    if not side.is_file():
        raise InputValueError(
            f"{what}: {side} not found (it gives the vocabulary: "
            '{"vocab_size": N} and, for a raw file, "dtype": "uint16" or "uint32")'
        )
    meta = read_json(side, what)
    v = meta.get("vocab_size")
    if isinstance(v, bool) or not isinstance(v, int) or v < 2:
        raise InputValueError(f"{what}: {side}: vocab_size must be an int >= 2; got {v!r}")
    return meta


def read_tokens(path: str | Path, what: str = "--corpus") -> tuple[NDArray[np.integer], int]:
    """The ids of a corpus file (memory-mapped) and its vocabulary, validated.

    Raises :class:`~pyverify.errors.InputValueError` in one line naming the file: a
    missing file or sidecar, a bad dtype or shape, an id outside ``[0, vocab_size)``.
    """
    path = Path(path)
    if not path.is_file():
        raise InputValueError(f"{what}: {path} is not a file")
    meta = _sidecar(path, what)
    vocab = int(meta["vocab_size"])
    try:
        if path.suffix == ".npy":
            ids = np.load(path, mmap_mode="r", allow_pickle=False)
        else:
            dt = meta.get("dtype")
            if dt not in RAW_DTYPES:
                raise InputValueError(
                    f'{what}: {path.name}.json: a raw file needs "dtype": one of '
                    f"{', '.join(RAW_DTYPES)}; got {dt!r}"
                )
            if path.stat().st_size % np.dtype(dt).itemsize:
                raise InputValueError(f"{what}: {path}: its size is not a whole number of {dt}")
            ids = np.memmap(path, dtype=np.dtype(dt).newbyteorder("<"), mode="r")
    except (OSError, ValueError) as exc:
        if isinstance(exc, InputValueError):
            raise
        raise InputValueError(f"{what}: {path} cannot be read as token ids ({exc})") from None
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise InputValueError(
            f"{what}: {path} must hold a 1-D array of integer ids; got {ids.dtype} {ids.shape}"
        )
    for start in range(0, len(ids), _SCAN):
        chunk = np.asarray(ids[start : start + _SCAN])
        bad = np.flatnonzero((chunk < 0) | (chunk >= vocab))
        if bad.size:
            i = int(bad[0])
            raise InputValueError(
                f"{what}: {path}: id {int(chunk[i])} at position {start + i:,} is outside "
                f"[0, {vocab}) (vocab_size in {path.name}.json)"
            )
    return ids, vocab


def _is_name(path: str) -> bool:
    """``path`` reads as a corpus name: no ``/``, no ``.``, and no such file."""
    return "/" not in path and os.sep not in path and "." not in path and not Path(path).exists()


@lru_cache(maxsize=2)
def load_corpus(path: str | None = None) -> Corpus:
    """The corpus split 90/10: the vendored bytes (sha256 checked), a named one, or ``path``.

    A name of :data:`NAMED_CORPORA` (``bpe``: module docstring) returns its own split;
    an unknown name raises :class:`~pyverify.errors.InputValueError` in one line.
    """
    if path is not None and _is_name(path):
        if path == "bpe":
            tk = tokenised()
            return Corpus(train=tk.train, val=tk.val, vocab=tk.vocab)
        raise InputValueError(
            f"--corpus: unknown corpus name {path!r} (named corpora: "
            f"{', '.join(NAMED_CORPORA)}; a file of ids needs its path, e.g. ./{path}.npy)"
        )
    if path is None:
        with lzma.open(vendored_file(CORPUS_FILE), "rb") as fh:
            raw = np.frombuffer(fh.read(), dtype=np.uint8)
        vocab = VOCAB
    else:
        raw, vocab = read_tokens(path)
    cut = int(len(raw) * (1.0 - VAL_FRACTION))
    if cut < 2 or len(raw) - cut < 2:
        raise InputValueError(f"--corpus: {path} holds {len(raw)} ids: too few to split")
    return Corpus(train=raw[:cut], val=raw[cut:], vocab=vocab)


def load_data(cfg: RunConfig) -> Corpus | RecallTask:
    """What run settings train on: their recall task, else their corpus (:func:`load_corpus`)."""
    return cfg.recall if cfg.recall is not None else load_corpus(cfg.corpus)
