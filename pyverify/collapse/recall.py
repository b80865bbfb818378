"""Multi-query associative recall: a seeded in-context task a small decoder learns on a CPU.

Each sequence (``length`` tokens, :attr:`RecallTask.length`) is::

    k_1 v_1 k_2 v_2 ... k_N v_N  f_1 ... f_gap  q_1 a_1 q_2 a_2 ... q_Q a_Q

* the *kv section* (``2 N`` tokens): ``N = n_pairs`` distinct keys drawn from
  ``[0, n_keys)``, each followed by its value; the ``N`` values are distinct, drawn
  from ``[n_keys, n_keys + n_values)``; the binding is new in every sequence;
* ``gap`` filler tokens drawn from ``[n_keys + n_values, vocab)`` (none by default);
* the *query section*: ``Q = n_queries`` distinct keys of the kv section in random
  order, each followed by its value, the *answer*.

A model reads the tokens ``w[:-1]`` and predicts ``w[1:]`` (``seq = length - 1``
inputs). The answer mask (:meth:`RecallTask.answer_mask`) marks the target
positions whose token is an answer: the prediction made at a query. The kv section
is the *prompt* an inference cache would hold (:attr:`RecallTask.kv_len`): it
never holds an answer.

Streams. Training sequences for ``(seed, step)`` come from
``numpy.random.default_rng([TRAIN_TAG, seed, step])``; every validation set from
``default_rng([VAL_TAG, val_seed, role])``. The tags differ, so no training seed's
stream is a validation stream; the validation sets are the same for every run
and every training seed.

Baselines on the validation answers: *chance* (:meth:`RecallTask.chance`), the
accuracy of a guesser that knows the layout but not the binding (it picks
uniformly among the context's values not yet given as an answer: query ``j``
is right with probability ``1 / (N - j)``), beside the uniform ``1 / n_values``;
and the *n-gram* (:func:`ngram_baseline`): Witten-Bell count models of orders
1..``ngram_max`` counted on the run's first training sequences, scored on the
answer positions (argmax accuracy and loss), the best order by accuracy. The
binding is random per sequence, so the n-gram is near ``1 / n_values`` by
construction.

:class:`RecallTask` also answers ``batch(seed, step, batch, seq)`` and
``windows(n, length, phase)`` as :class:`~pyverify.collapse.corpus.Corpus` does
(validation prefixes for the study's probe sets, one stream per ``phase``), so
the study's trainer and measurement inputs take it in place of a corpus.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from pyverify.errors import InputValueError

__all__ = [
    "TRAIN_TAG",
    "VAL_PHASE",
    "VAL_TAG",
    "RecallTask",
    "answer_accuracy_ngram",
    "ngram_baseline",
]

TRAIN_TAG = 0x7472
"""First entropy word of every training stream (``"tr"``)."""
VAL_TAG = 0x7661
"""First entropy word of every validation stream (``"va"``)."""
VAL_PHASE = 0.5
"""The ``phase`` of the answer validation set (:data:`pyverify.collapse.inputs.PHASE_VAL`)."""


@dataclass(frozen=True)
class RecallTask:
    """Settings of the recall task (module docstring).

    Attributes
    ----------
    n_keys, n_values : int
        Sizes of the key and value vocabularies (disjoint id ranges).
    n_pairs : int
        Key-value pairs per sequence (``N``).
    n_queries : int
        Queries per sequence (``Q <= N``, distinct keys of the pairs).
    gap : int
        Filler tokens between the kv section and the first query.
    n_filler : int
        Size of the filler vocabulary (``>= 1`` when ``gap > 0``).
    val_seed : int
        Seed of the validation streams.
    n_val : int
        Sequences of the answer validation set.
    ngram_train_seqs : int
        Training sequences the n-gram baseline counts (the run's first ones).
    ngram_max : int
        Largest n-gram order of the baseline.
    """

    n_keys: int = 64
    n_values: int = 64
    n_pairs: int = 16
    n_queries: int = 8
    gap: int = 0
    n_filler: int = 0
    val_seed: int = 0
    n_val: int = 512
    ngram_train_seqs: int = 32_768
    ngram_max: int = 4

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> RecallTask:
        """Raise :class:`~pyverify.errors.InputValueError` naming a bad setting."""
        for name, val in asdict(self).items():
            low = 0 if name in ("gap", "n_filler", "val_seed") else 1
            if isinstance(val, bool) or not isinstance(val, int) or val < low:
                raise InputValueError(f"recall.{name} must be an int >= {low}; got {val!r}")
        if self.n_pairs > self.n_keys:
            raise InputValueError(
                f"recall.n_pairs ({self.n_pairs}) must not exceed n_keys ({self.n_keys})"
            )
        if self.n_pairs > self.n_values:
            raise InputValueError(
                f"recall.n_pairs ({self.n_pairs}) must not exceed n_values ({self.n_values})"
            )
        if self.n_queries > self.n_pairs:
            raise InputValueError(
                f"recall.n_queries ({self.n_queries}) must not exceed n_pairs ({self.n_pairs})"
            )
        if self.gap > 0 and self.n_filler < 1:
            raise InputValueError(f"recall.n_filler must be >= 1 when gap > 0; got {self.n_filler}")
        if self.vocab**self.ngram_max >= 2**63:
            raise InputValueError(
                f"recall.ngram_max ({self.ngram_max}) too large: vocab ** ngram_max >= 2 ** 63"
            )
        return self

    # -- layout ---------------------------------------------------------------
    @property
    def vocab(self) -> int:
        """Token ids: keys, values, filler."""
        return self.n_keys + self.n_values + self.n_filler

    @property
    def kv_len(self) -> int:
        """Tokens of the kv section: the prompt an inference cache holds (no answer in it)."""
        return 2 * self.n_pairs

    @property
    def length(self) -> int:
        """Tokens of one sequence."""
        return self.kv_len + self.gap + 2 * self.n_queries

    @property
    def seq(self) -> int:
        """Model inputs per sequence (``length - 1``): :attr:`RunConfig.seq` of a recall run."""
        return self.length - 1

    def answer_positions(self) -> NDArray[np.int64]:
        """Target positions (indices into ``w[1:]``) whose token is an answer."""
        first = self.kv_len + self.gap  # w-index of q_1; its answer is w[first + 1]
        return first + 2 * np.arange(self.n_queries, dtype=np.int64)

    def answer_mask(self) -> torch.Tensor:
        """Bool ``(seq,)``: True at the target positions of the answers."""
        m = torch.zeros(self.seq, dtype=torch.bool)
        m[torch.from_numpy(self.answer_positions())] = True
        return m

    def chance(self) -> float:
        """Accuracy of the layout-aware guesser: the mean of ``1 / (N - j)`` over queries ``j``."""
        return float(np.mean([1.0 / (self.n_pairs - j) for j in range(self.n_queries)]))

    def chance_loss(self) -> float:
        """Loss (nats) of that guesser: the mean of ``ln(N - j)``."""
        return float(np.mean([np.log(self.n_pairs - j) for j in range(self.n_queries)]))

    def uniform_chance(self) -> float:
        """Accuracy of a uniform guess among all values: ``1 / n_values``."""
        return 1.0 / self.n_values

    # -- generation -------------------------------------------------------------
    def sample(self, rng: np.random.Generator, n: int) -> NDArray[np.int64]:
        """``n`` sequences ``(n, length)`` drawn from ``rng`` (module docstring)."""
        N, Q = self.n_pairs, self.n_queries
        keys = rng.random((n, self.n_keys)).argsort(axis=1)[:, :N]
        values = self.n_keys + rng.random((n, self.n_values)).argsort(axis=1)[:, :N]
        pick = rng.random((n, N)).argsort(axis=1)[:, :Q]
        out = np.empty((n, self.length), dtype=np.int64)
        out[:, 0 : 2 * N : 2], out[:, 1 : 2 * N : 2] = keys, values
        base = self.n_keys + self.n_values
        out[:, 2 * N : 2 * N + self.gap] = rng.integers(
            base, base + max(1, self.n_filler), size=(n, self.gap)
        )
        first = 2 * N + self.gap
        out[:, first::2] = np.take_along_axis(keys, pick, axis=1)
        out[:, first + 1 :: 2] = np.take_along_axis(values, pick, axis=1)
        return out

    def train_sequences(self, seed: int, step: int, batch: int) -> NDArray[np.int64]:
        """The ``batch`` training sequences of step ``step`` of seed ``seed``."""
        return self.sample(np.random.default_rng([TRAIN_TAG, seed, step]), batch)

    def batch(
        self, seed: int, step: int, batch: int, seq: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and targets ``(batch, seq)`` for training step ``step``.

        The signature of :meth:`pyverify.collapse.corpus.Corpus.batch`; ``seq`` must be
        :attr:`seq`.
        """
        if seq != self.seq:
            raise InputValueError(f"seq must be the recall task's {self.seq}; got {seq}")
        t = torch.from_numpy(self.train_sequences(seed, step, batch))
        return t[:, :-1], t[:, 1:]

    def windows(self, n: int, length: int, phase: float = 0.0) -> torch.Tensor:
        """``n`` validation sequences cut to their first ``length`` tokens (int64 ``(n, length)``).

        One validation stream per ``phase`` (:meth:`Corpus.windows`'s roles), so
        the roles are fixed and independent; ``phase`` :data:`VAL_PHASE` is the
        answer validation set (:meth:`validation`).
        """
        if not 1 <= length <= self.length or n < 1:
            raise InputValueError(
                f"recall windows: need n >= 1 and 1 <= length <= {self.length}; got {n}, {length}"
            )
        role = round(phase * 1000)
        rows = self.sample(np.random.default_rng([VAL_TAG, self.val_seed, role]), n)
        return torch.from_numpy(rows[:, :length])

    def validation(self) -> torch.Tensor:
        """The answer validation set: ``n_val`` whole sequences ``(n_val, length)``."""
        return self.windows(self.n_val, self.length, VAL_PHASE)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings."""
        return asdict(self)


# -- the n-gram baseline ------------------------------------------------------------
def _gram_keys(seqs: NDArray[np.int64], n: int, vocab: int) -> NDArray[np.int64]:
    """Keys of every ``n``-gram lying inside one sequence (none across two)."""
    L = seqs.shape[1]
    key = np.zeros((seqs.shape[0], L - n + 1), dtype=np.int64)
    for j in range(n):
        key = key * vocab + seqs[:, j : j + L - n + 1]
    return key.ravel()


def _count(keys: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    return np.unique(keys, return_counts=True)


def _lookup(
    sorted_keys: NDArray[np.int64], counts: NDArray[np.int64], q: NDArray[np.int64]
) -> NDArray[np.int64]:
    if len(sorted_keys) == 0:
        return np.zeros(q.shape, dtype=np.int64)
    idx = np.minimum(np.searchsorted(sorted_keys, q), len(sorted_keys) - 1)
    return np.where(sorted_keys[idx] == q, counts[idx], 0)


def answer_accuracy_ngram(
    train: NDArray[np.int64], val: NDArray[np.int64], positions: NDArray[np.int64],
    max_order: int, vocab: int,
) -> list[dict[str, float]]:  # fmt: skip
    """Witten-Bell n-grams of orders 1..``max_order``, scored at ``positions`` of ``val``.

    Parameters
    ----------
    train : numpy array of int, shape (M, L)
        Training sequences; n-grams are counted inside each.
    val : numpy array of int, shape (N, L)
        Validation sequences.
    positions : numpy array of int
        Target positions (indices into ``val[:, 1:]``) to score.
    max_order : int
        Largest order.
    vocab : int
        Ids lie in ``[0, vocab)``.

    Returns
    -------
    list of dict
        Entry ``n - 1``: ``{"accuracy", "loss"}`` of the order-``n`` model (argmax
        accuracy, ties to the lowest id; mean negative log-probability), the
        interpolation as in :mod:`pyverify.collapse.ngram`, contexts cut at the
        sequence start.
    """
    tr = np.asarray(train, dtype=np.int64)
    va = np.asarray(val, dtype=np.int64)
    w_idx = np.asarray(positions, dtype=np.int64) + 1  # indices into a whole sequence
    target = va[:, w_idx].ravel()
    words = np.arange(vocab, dtype=np.int64)
    p = np.full((target.size, vocab), 1.0 / vocab)
    out = []
    for n in range(1, max_order + 1):
        k = n - 1
        gk, gc = _count(_gram_keys(tr, n, vocab))
        if k == 0:
            ctx_c = np.full(target.size, gc.sum(), dtype=np.int64)
            uniq = np.full(target.size, len(gk), dtype=np.int64)
            c_hw = _lookup(gk, gc, np.broadcast_to(words, p.shape))
            ok = np.ones(target.size, dtype=bool)
        else:
            ctx = np.zeros((va.shape[0], len(w_idx)), dtype=np.int64)
            for m in range(k, 0, -1):
                ctx = ctx * vocab + va[:, np.maximum(w_idx - m, 0)]
            ctx = ctx.ravel()
            ok = np.tile(w_idx >= k, va.shape[0])
            hk, first = np.unique(gk // vocab, return_index=True)
            ctx_total = np.add.reduceat(gc, first) if len(gc) else gc
            succ = np.diff(np.append(first, len(gk)))
            ctx_c = _lookup(hk, ctx_total, ctx)
            uniq = _lookup(hk, succ, ctx)
            c_hw = _lookup(gk, gc, ctx[:, None] * vocab + words[None, :])
        seen = (ok & (ctx_c > 0))[:, None]
        p = np.where(seen, (c_hw + uniq[:, None] * p) / np.maximum(ctx_c + uniq, 1)[:, None], p)
        acc = float((p.argmax(axis=1) == target).mean())
        loss = float(-np.log(p[np.arange(target.size), target]).mean())
        out.append({"accuracy": acc, "loss": loss})
    return out


def ngram_baseline(task: RecallTask, seed: int, batch: int) -> dict[str, Any]:
    """The best n-gram of the run's training split on the validation answers.

    The training split: the first ``task.ngram_train_seqs`` sequences the run of seed
    ``seed`` trains on (steps ``0, 1, ...`` of ``batch`` sequences). The best order is
    the one of highest answer accuracy (chosen on the validation set: generous to the
    baseline).
    """
    steps = -(-task.ngram_train_seqs // batch)
    train = np.concatenate([task.train_sequences(seed, t, batch) for t in range(steps)])
    train = train[: task.ngram_train_seqs]
    by_order = answer_accuracy_ngram(
        train, task.validation().numpy(), task.answer_positions(), task.ngram_max, task.vocab
    )
    best = max(range(len(by_order)), key=lambda i: (by_order[i]["accuracy"], -i))
    return {
        "model": "Witten-Bell interpolated token n-gram, the run's first training sequences, "
        "scored on the validation answers",
        "train_sequences": int(train.shape[0]),
        "by_order": by_order,
        "best_order": best + 1,
        "accuracy": by_order[best]["accuracy"],
        "loss": by_order[best]["loss"],
    }
