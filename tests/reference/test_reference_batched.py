"""``plga_forward_batched`` is ``plga_forward_full`` on every (batch, head) slice."""

from __future__ import annotations

import numpy as np
import pytest

from pyverify.reference import PLGAParams, plga_forward_batched, plga_forward_full


def _qkv(B, H, S, dk, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=(B, H, S, dk)) for _ in range(3))


def test_uncached_equals_the_loop():
    q, k, v = _qkv(2, 3, 5, 4)
    heads = [PLGAParams.random(4, 3, 1, 1, seed=h) for h in range(3)]
    r = plga_forward_batched(q, k, v, heads)
    assert r.out.shape == (2, 3, 5, 4) and r.ded.G.shape == (2, 3, 4, 4)
    for b in range(2):
        for h in range(3):
            one = plga_forward_full(q[b, h], k[b, h], v[b, h], heads[h], True)
            assert np.array_equal(r.out[b, h], one.out) and np.array_equal(r.E[b, h], one.E)
            for n in ("A", "A_LM", "A_P", "G"):
                assert np.array_equal(getattr(r.ded, n)[b, h], getattr(one.ded, n))


def test_g_cached_per_head_and_per_slice():
    q, k, v = _qkv(2, 2, 4, 4, seed=1)
    p = PLGAParams.random(4, 1, 0, 0, seed=0)
    G = np.random.default_rng(2).normal(size=(2, 4, 4))
    r = plga_forward_batched(q, k, v, p, G=G)
    assert r.ded.A is None and np.array_equal(r.ded.G[1, 0], G[0])
    r4 = plga_forward_batched(q, k, v, p, G=np.broadcast_to(G, (2, 2, 4, 4)))
    assert np.array_equal(r.out, r4.out)
    assert np.array_equal(r.out[1, 1], plga_forward_full(q[1, 1], k[1, 1], v[1, 1], p, G=G[1]).out)


@pytest.mark.parametrize(
    ("shapes", "heads", "G", "match"),
    [
        (((2, 4, 4), (2, 4, 4), (2, 4, 4)), 1, None, "4-D"),
        (((1, 2, 4, 4), (1, 3, 4, 4), (1, 2, 4, 4)), 2, None, "equal"),
        (((1, 2, 4, 4),) * 3, 3, None, "H = 2"),
        (((1, 2, 4, 4),) * 3, 2, np.zeros((3, 4, 4)), "G must have shape"),
        (((1, 2, 4, 4),) * 3, 2, np.zeros((2, 2, 4, 4)), r"B, H = 1, 2; got \(2, 2, 4, 4\)"),
    ],
)
def test_bad_batches_are_named(shapes, heads, G, match):
    q, k, v = (np.zeros(s) for s in shapes)
    ps = [PLGAParams.random(4, 1, 0, 0, seed=0)] * heads
    with pytest.raises(ValueError, match=match):
        plga_forward_batched(q, k, v, ps, G=G)
