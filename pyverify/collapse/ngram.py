"""The n-gram baseline: an interpolated count model of the same corpus split.

A specimen that does not beat this baseline has not learned its corpus and
cannot speak for or against the paper (``docs/paper-claims.md``). Model: byte
n-grams of order 1..N counted on the training split, interpolated by
Witten-Bell (no free parameter to tune): with ``c(h, w)`` the count of byte
``w`` after context ``h``, ``c(h)`` the context count and ``u(h)`` the number
of distinct bytes seen after ``h``::

    P_n(w | h) = (c(h, w) + u(h) P_{n-1}(w | h')) / (c(h) + u(h))   (c(h) > 0)
    P_n(w | h) = P_{n-1}(w | h')                                      (c(h) = 0)

down to the uniform distribution over the vocabulary (256 bytes, or a user's
corpus's ``vocab_size``). Counts come from at most the first :data:`MAX_TRAIN`
training tokens (the byte corpus holds 1e7; a user's corpus can hold billions). It
is scored on the same
validation windows as the model, each window's first byte as context only and
contexts truncated at the window start (as the model sees them). The
baseline is the best order (lowest loss), the strongest of these models.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["MAX_TRAIN", "ngram_losses"]

MAX_TRAIN = 100_000_000


def _keys(tokens: NDArray[np.int64], k: int, base: int) -> NDArray[np.int64]:
    """Base-``base`` keys of the ``k``-grams of ``tokens`` (``base ** k < 2 ** 63``)."""
    n = len(tokens) - k + 1
    key = np.zeros(n, dtype=np.int64)
    for j in range(k):
        key = key * base + tokens[j : j + n]
    return key


def _lookup(sorted_keys: NDArray[np.int64], counts: NDArray[np.int64], q: NDArray[np.int64]):
    idx = np.searchsorted(sorted_keys, q)
    idx = np.minimum(idx, len(sorted_keys) - 1)
    hit = sorted_keys[idx] == q
    return np.where(hit, counts[idx], 0)


def ngram_losses(
    train: NDArray[np.integer], windows: NDArray[np.integer], max_order: int, vocab: int = 256
) -> list[float]:
    """Validation loss (nats per byte) of the Witten-Bell n-gram for orders 1..``max_order``.

    Parameters
    ----------
    train : numpy array of int, shape (T,)
        Training bytes.
    windows : numpy array of int, shape (N, S + 1)
        Validation windows; positions 1..S are predicted.
    max_order : int
        Largest n (``vocab ** max_order < 2 ** 63``: 7 for bytes, 4 for 32,000 ids).
    vocab : int, default 256
        Size of the vocabulary (ids lie in ``[0, vocab)``).

    Returns
    -------
    list of float
        Entry ``n - 1`` is the mean loss of the order-``n`` model.
    """
    if max_order < 1 or vocab**max_order >= 2**63:
        raise ValueError(f"max_order must be >= 1 with vocab ** max_order < 2 ** 63; got "
                         f"{max_order} (vocab {vocab})")  # fmt: skip
    tr = np.asarray(train[:MAX_TRAIN], dtype=np.int64)
    win = np.asarray(windows, dtype=np.int64)
    N, S1 = win.shape
    # p[i, j] = probability of win[i, j] for j >= 1, refined order by order
    p = np.full((N, S1 - 1), 1.0 / vocab)
    losses = []
    for n in range(1, max_order + 1):
        k = n - 1
        gram_keys, gram_counts = np.unique(_keys(tr, n, vocab), return_counts=True)
        if k == 0:
            ctx_c = np.full((N, S1 - 1), len(tr), dtype=np.int64)
            uniq = np.full((N, S1 - 1), len(gram_keys), dtype=np.int64)
            c_hw = _lookup(gram_keys, gram_counts, win[:, 1:].ravel()).reshape(N, S1 - 1)
            valid = np.ones((N, S1 - 1), dtype=bool)
        else:
            ctx_keys, ctx_counts = np.unique(_keys(tr[:-1], k, vocab), return_counts=True)
            succ_keys, succ_u = np.unique(gram_keys // vocab, return_counts=True)
            ctx_c = np.zeros((N, S1 - 1), dtype=np.int64)
            uniq = np.zeros((N, S1 - 1), dtype=np.int64)
            c_hw = np.zeros((N, S1 - 1), dtype=np.int64)
            valid = np.zeros((N, S1 - 1), dtype=bool)
            for j in range(1, S1):
                if j < k:
                    continue  # the window holds fewer than k bytes of context
                ctx = np.zeros(N, dtype=np.int64)
                for m in range(j - k, j):
                    ctx = ctx * vocab + win[:, m]
                full = ctx * vocab + win[:, j]
                ctx_c[:, j - 1] = _lookup(ctx_keys, ctx_counts, ctx)
                uniq[:, j - 1] = _lookup(succ_keys, succ_u, ctx)
                c_hw[:, j - 1] = _lookup(gram_keys, gram_counts, full)
                valid[:, j - 1] = True
        seen = valid & (ctx_c > 0)
        p = np.where(seen, (c_hw + uniq * p) / np.maximum(ctx_c + uniq, 1), p)
        losses.append(float(-np.log(p).mean()))
    return losses
