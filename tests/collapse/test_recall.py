"""The recall task: layout, streams, settings, chance and the n-gram baseline."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import torch

from pyverify.collapse.recall import (
    TRAIN_TAG,
    VAL_TAG,
    RecallTask,
    answer_accuracy_ngram,
    ngram_baseline,
)
from pyverify.errors import InputValueError

TASK = RecallTask(
    n_keys=8, n_values=8, n_pairs=4, n_queries=3, gap=2, n_filler=2, n_val=32,
    ngram_train_seqs=512, ngram_max=3,
)  # fmt: skip


# -- the generator -------------------------------------------------------------------
def test_layout_and_answer_mask():
    t = TASK
    assert (t.vocab, t.kv_len, t.length, t.seq) == (18, 8, 16, 15)
    w = t.train_sequences(3, 7, 64)
    assert w.shape == (64, t.length) and w.dtype == np.int64
    keys, vals = w[:, 0 : t.kv_len : 2], w[:, 1 : t.kv_len : 2]
    gap = w[:, t.kv_len : t.kv_len + t.gap]
    q, ans = w[:, t.kv_len + t.gap :: 2], w[:, t.kv_len + t.gap + 1 :: 2]
    assert ((keys >= 0) & (keys < 8)).all() and ((vals >= 8) & (vals < 16)).all()
    assert ((gap >= 16) & (gap < 18)).all()
    for r in range(64):
        assert len(set(keys[r])) == 4 and len(set(vals[r])) == 4 and len(set(q[r])) == 3
        binding = dict(zip(keys[r], vals[r], strict=True))
        assert [binding[k] for k in q[r]] == list(ans[r])
    x, y = t.batch(3, 7, 64, t.seq)
    assert torch.equal(torch.cat((x, y[:, -1:]), 1), torch.from_numpy(w))
    mask = t.answer_mask()
    assert mask.shape == (t.seq,) and int(mask.sum()) == t.n_queries
    assert torch.equal(y[:, mask], torch.from_numpy(ans))
    # the prediction at an answer position is made at its query, after the prompt
    assert torch.equal(x[:, mask], torch.from_numpy(q))
    assert int(mask.nonzero().min()) >= t.kv_len
    assert not bool(mask[: t.kv_len].any())  # the prompt (kv section) holds no answer


def test_batches_are_deterministic_and_seeded():
    t = TASK
    a, b = t.batch(0, 5, 8, t.seq), t.batch(0, 5, 8, t.seq)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], t.batch(0, 6, 8, t.seq)[0])
    assert not torch.equal(a[0], t.batch(1, 5, 8, t.seq)[0])
    assert torch.equal(t.validation(), t.validation())
    with pytest.raises(InputValueError, match="seq must be"):
        t.batch(0, 0, 8, t.seq + 1)


def test_validation_streams_are_not_training_streams():
    t = replace(TASK, n_keys=32, n_values=32, n_pairs=8, n_queries=4, gap=0, n_filler=0)
    assert TRAIN_TAG != VAL_TAG
    val = {tuple(r) for r in t.validation().tolist()}
    assert len(val) == t.n_val
    for seed in range(3):
        for step in range(50):
            train = {tuple(r) for r in t.train_sequences(seed, step, 16).tolist()}
            assert not (train & val)
    # the roles (phases) are separate streams; prefixes of the same sequences per length
    probes = t.windows(16, 10, 0.0)
    assert probes.shape == (16, 10)
    assert torch.equal(probes, t.windows(16, t.length, 0.0)[:, :10])
    assert not torch.equal(probes, t.windows(16, 10, 0.25))
    assert torch.equal(t.windows(t.n_val, t.length, 0.5), t.validation())


@pytest.mark.parametrize(
    ("change", "name"),
    [
        ({"n_pairs": 9}, "n_pairs"),
        ({"n_queries": 5}, "n_queries"),
        ({"n_keys": 0}, "n_keys"),
        ({"gap": -1}, "gap"),
        ({"gap": 2, "n_filler": 0}, "n_filler"),
        ({"n_val": 1.5}, "n_val"),
        ({"ngram_max": 30}, "ngram_max"),
    ],
)
def test_bad_settings_name_the_setting(change, name):
    with pytest.raises(InputValueError, match=f"recall.{name}") as exc:
        replace(TASK, **change)
    assert "\n" not in str(exc.value)


def test_chance():
    t = replace(TASK, n_pairs=4, n_queries=3)
    assert t.chance() == pytest.approx((1 / 4 + 1 / 3 + 1 / 2) / 3)
    assert t.chance_loss() == pytest.approx((math.log(4) + math.log(3) + math.log(2)) / 3)
    assert t.uniform_chance() == 1 / 8


# -- the n-gram baseline ---------------------------------------------------------------
def _oracle(train, val, positions, order, vocab):
    """Witten-Bell by the formula, one distribution at a time, n-grams inside sequences."""
    counts = [Counter() for _ in range(order)]
    for s in train:
        for n in range(1, order + 1):
            for i in range(len(s) - n + 1):
                counts[n - 1][tuple(s[i : i + n])] += 1

    def prob(ctx, w):
        if not ctx:
            c1 = counts[0]
            return (c1[(w,)] + len(c1) / vocab) / (sum(c1.values()) + len(c1))
        lower = prob(ctx[1:], w)
        k = len(ctx)
        succ = [c for g, c in counts[k].items() if g[:-1] == ctx]
        if not succ:
            return lower
        return (counts[k][(*ctx, w)] + len(succ) * lower) / (sum(succ) + len(succ))

    hits, nll = 0, 0.0
    for s in val:
        for p in positions:
            j = p + 1
            ctx = tuple(s[max(0, j - order + 1) : j])
            dist = [prob(ctx, w) for w in range(vocab)]
            hits += int(np.argmax(dist) == s[j])
            nll -= math.log(dist[s[j]])
    n = len(val) * len(positions)
    return hits / n, nll / n


def test_ngram_matches_the_formula():
    t = TASK
    train = t.train_sequences(0, 0, 40)
    val = t.validation().numpy()[:6]
    pos = t.answer_positions()
    got = answer_accuracy_ngram(train, val, pos, 3, t.vocab)
    for n in (1, 2, 3):
        acc, loss = _oracle(train.tolist(), val.tolist(), pos.tolist(), n, t.vocab)
        assert got[n - 1]["accuracy"] == pytest.approx(acc)
        assert got[n - 1]["loss"] == pytest.approx(loss)


def test_ngram_is_near_uniform_chance():
    t = RecallTask(n_keys=32, n_values=32, n_pairs=8, n_queries=4, n_val=256,
                   ngram_train_seqs=4096, ngram_max=3)  # fmt: skip
    b = ngram_baseline(t, seed=0, batch=32)
    assert b["train_sequences"] == 4096 and len(b["by_order"]) == 3
    # by construction the binding is random: no order beats uniform by much (1/32 = 0.031)
    assert b["accuracy"] < 0.07 < t.chance()
    assert all(o["loss"] > math.log(t.n_values) - 0.2 for o in b["by_order"][1:])
