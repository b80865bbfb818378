"""The training corpus: byte-level tokens, a fixed split, seeded batches and probe sets.

The corpus is the vendored Python 3.11 documentation (``pyverify/data/``,
PSF licence, sha256 checked on load). Tokenizer: UTF-8 bytes, vocabulary 256
(every text round-trips exactly; no trained merges to keep). Split: the first
90 % of the bytes train, the last 10 % validate (contiguous, fixed). A batch
for step ``t`` is drawn from ``numpy.random.default_rng([seed, t])``, so a run
resumed at step ``t`` sees exactly the batches an uninterrupted run sees.
Probe sets and prompts are evenly spaced windows of the validation part: fixed
inputs, the same for every measurement and both regimes.
"""

from __future__ import annotations

import lzma
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from numpy.typing import NDArray

from pyverify.data import CORPUS_FILE, vendored_file
from pyverify.errors import InputValueError

__all__ = ["VOCAB", "Corpus", "decode", "encode", "load_corpus"]

VOCAB = 256
VAL_FRACTION = 0.1


def encode(text: str) -> NDArray[np.uint8]:
    """UTF-8 bytes of ``text`` as token ids."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()


def decode(tokens: NDArray[np.integer] | list[int]) -> str:
    """Token ids back to text (invalid UTF-8 sequences replaced)."""
    return bytes(int(t) for t in tokens).decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Corpus:
    """Train and validation token arrays (uint8)."""

    train: NDArray[np.uint8]
    val: NDArray[np.uint8]

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


@lru_cache(maxsize=1)
def load_corpus() -> Corpus:
    """Read the vendored corpus (sha256 checked) and split it 90/10."""
    with lzma.open(vendored_file(CORPUS_FILE), "rb") as fh:
        raw = np.frombuffer(fh.read(), dtype=np.uint8)
    cut = int(len(raw) * (1.0 - VAL_FRACTION))
    return Corpus(train=raw[:cut], val=raw[cut:])
