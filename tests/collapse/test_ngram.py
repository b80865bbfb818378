"""The n-gram baseline against a direct, dictionary-based Witten-Bell oracle."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from pyverify.collapse.ngram import ngram_losses


def oracle(train: list[int], windows: list[list[int]], order: int) -> float:
    """Witten-Bell by the formula, one probability at a time (contexts cut at the window start)."""
    counts = [
        Counter(tuple(train[i : i + n]) for i in range(len(train) - n + 1))
        for n in range(1, order + 1)
    ]

    def prob(ctx: tuple[int, ...], w: int) -> float:
        if not ctx and order >= 1:
            c1 = counts[0]
            total, u = sum(c1.values()), len(c1)
            return (c1[(w,)] + u / 256) / (total + u)
        lower = prob(ctx[1:], w)
        k = len(ctx)
        c_h = sum(c for g, c in counts[k].items() if g[:-1] == ctx)
        if c_h == 0:
            return lower
        u = sum(1 for g in counts[k] if g[:-1] == ctx)
        return (counts[k][(*ctx, w)] + u * lower) / (c_h + u)

    losses = []
    for win in windows:
        for j in range(1, len(win)):
            ctx = tuple(win[max(0, j - order + 1) : j])
            losses.append(-math.log(prob(ctx, win[j])))
    return sum(losses) / len(losses)


def test_ngram_matches_the_oracle():
    rng = np.random.default_rng(3)
    train = [*rng.integers(0, 5, size=400).tolist(), 7, 7, 7]
    windows = [list(rng.integers(0, 6, size=9)) for _ in range(4)] + [[7, 7, 7, 7, 200]]
    got = ngram_losses(np.array(train), np.array([w[:5] for w in windows]), 3)
    for n in (1, 2, 3):
        want = oracle(train, [w[:5] for w in windows], n)
        assert math.isclose(got[n - 1], want, rel_tol=1e-12), n  # same sums, float64


def test_a_larger_vocabulary_gets_its_own_base_and_uniform_floor():
    """Ids above 255 are n-gram symbols of their own (base-256 keys would collide)."""
    rng = np.random.default_rng(0)
    train = rng.integers(0, 1000, 20_000)
    win = rng.integers(0, 1000, (8, 9))
    big = ngram_losses(train, win, 3, vocab=1000)
    shifted = ngram_losses(train % 256, win % 256, 3, vocab=256)
    assert big != shifted and all(math.isfinite(x) for x in big)
    with pytest.raises(ValueError, match="vocab \\*\\* max_order"):
        ngram_losses(train, win, 5, vocab=32000)
