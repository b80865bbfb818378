"""The decode step (pyverify.kernels.decode), its fused weight blocks and the RoPE table."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from kernel_helpers import rel_err

from pyverify.errors import NonFiniteStageError
from pyverify.kernels.decode import layer_blocks
from pyverify.kernels.linear import fused, output_major, output_major_block
from pyverify.kernels.model import from_reference
from pyverify.kernels.rope import RopeTable, apply_rope
from pyverify.reference import Decoder, g_cache_from

TOKS = np.array([[1, 5, 7, 3, 9, 2, 11, 4, 8], [0, 31, 6, 6, 2, 17, 9, 1, 30]])


@pytest.fixture(scope="module")
def ref() -> Decoder:
    return Decoder.random(vocab=32, d_model=16, num_heads=2, num_layers=2, dff=24, seed=0)


def test_output_major_block_views_and_fused_block():
    """The parts keep their values and layout; the block is their concatenation, and
    writing a part is seen through the block (the tests' in-place faults rely on it)."""
    rng = np.random.default_rng(0)
    mats = [rng.normal(size=(5, n)) for n in (3, 4, 2)]
    parts = output_major_block(mats, "cpu", torch.float64)
    for m, p in zip(mats, parts, strict=True):
        assert p.shape == m.shape and p.t().is_contiguous() and np.array_equal(p.numpy(), m)
    block = fused(parts)
    assert block is not None and np.array_equal(block.numpy(), np.concatenate(mats, axis=1))
    parts[1][2, 3] = 99.0
    assert block[2, 3 + 3] == 99.0
    vecs = output_major_block([rng.normal(size=n) for n in (3, 4)], "cpu", torch.float32)
    assert fused(vecs) is not None and fused(vecs).shape == (7,)


def test_fused_refuses_parts_that_are_not_side_by_side():
    a, b = (output_major(torch.randn(5, n)) for n in (3, 4))
    assert fused([a, b]) is None  # two buffers
    parts = output_major_block([np.ones((5, 3)), np.ones((5, 4))], "cpu", torch.float32)
    assert fused(parts[::-1]) is None  # wrong order
    assert fused([parts[0], parts[1].double()]) is None  # dtypes differ
    assert fused([parts[0].contiguous(), parts[1]]) is None  # not output-major


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_rope_table_rotates_as_apply_rope(dtype):
    """One complex product per row against apply_rope's real form: the same angles and
    cosines, so they differ by the rounding of the products alone (a few ulps of the
    compute dtype; bfloat16 rows round once to bfloat16 in both)."""
    cdt = torch.float64 if dtype == torch.float64 else torch.float32
    table = RopeTable(8, 10000.0, cdt, torch.device("cpu"))
    x = torch.randn(3, 4, 8, generator=torch.Generator().manual_seed(1)).to(dtype)
    tol = {torch.float64: 1e-15, torch.float32: 1e-6, torch.bfloat16: 1e-2}[dtype]
    for pos in (0, 1, 15, 16, 40, 1000):  # 16 and 40 grow the table
        got = table.rotate_(x.clone(), pos)
        want = apply_rope(x.unsqueeze(-2), offset=pos).squeeze(-2)
        assert got.dtype == dtype and rel_err(got.double(), want.double().numpy()) <= tol
    assert table.table.shape[0] >= 1001


def test_from_reference_stores_fused_blocks(ref):
    m = from_reference(ref, "cpu", torch.float32)
    for lp in m.params.layers:
        blk = layer_blocks(lp)
        assert blk.qkv is not None and blk.w12 is not None
        assert blk.qkv[0].shape == (16, 48) and blk.w12[0].shape == (16, 48)
        assert torch.equal(blk.qkv[0][:, 16:32], lp.Wk) and torch.equal(blk.w12[1][24:], lp.ffn.b2)


def _separate(m):
    """The same model with every weight in its own buffer (no fused blocks)."""
    p = m.params
    layers = [
        dataclasses.replace(
            lp,
            **{n: getattr(lp, n).clone() for n in ("Wq", "Wk", "Wv", "bq", "bk", "bv")},
            ffn=dataclasses.replace(lp.ffn, W1=lp.ffn.W1.clone(), W2=lp.ffn.W2.clone()),
        )
        for lp in p.layers
    ]
    return type(m)(dataclasses.replace(p, layers=layers))


@pytest.mark.parametrize("B", [1, 2])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_decode_without_fused_blocks_matches(ref, B, dtype):
    """The part-by-part path (weights not side by side) and the fused one agree, at one
    row (plain products) and two (the transposed few-row products), and both match the
    forward pass with the prompt's G (float64: 1e-12; float32: 1e-5, as test_model)."""
    m = from_reference(ref, "cpu", dtype)
    sep = _separate(m)
    assert layer_blocks(sep.params.layers[0]).qkv is None
    toks = torch.tensor(TOKS[:B])
    G = [torch.tensor(g) for g in g_cache_from(ref.forward(TOKS[0, :5]))]
    full, _ = m.forward(toks, mode="g_cached", G=G)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    caches = [mod.prefill(toks[:, :5], mode="g_cached", G=G)[1] for mod in (m, sep)]
    for pos in range(5, 9):
        a, _ = m.decode_step(toks[:, pos], caches[0])
        b, _ = sep.decode_step(toks[:, pos], caches[1])
        assert rel_err(a, b.double().numpy()) <= tol
        assert rel_err(a, full[:, pos].double().numpy()) <= tol


def test_decode_low_precision_steps_match_forward(ref):
    """bfloat16 decoding, "compensated" (uncached prefill) and "rounded" (collapsed):
    the step against the forward pass over the same tokens with the same G, within
    bfloat16's own error over the model (4e-2 of the logits' norm)."""
    m = from_reference(ref, "cpu", torch.bfloat16)
    toks = torch.tensor(TOKS)
    G = [torch.tensor(g) for g in g_cache_from(ref.forward(TOKS[0, :5]))]
    for mode in ("g_cached", "collapsed"):
        full, _ = m.forward(toks, mode=mode, G=G)
        _, cache = m.prefill(toks[:, :5], mode=mode, G=G)
        for pos in range(5, 9):
            step, cache = m.decode_step(toks[:, pos], cache)
            assert step.dtype == torch.bfloat16
            assert rel_err(step.double(), full[:, pos].double().numpy()) <= 4e-2


def test_decode_score_bound_false_alarm_is_looked_at_again(ref, monkeypatch):
    """A running key bound far above the keys sends the step to its second look, which
    forms the exact scores, finds them in range and returns the usual logits."""
    import pyverify.kernels.decode as dec

    looks = []
    second_look = dec._raise_first_failure
    monkeypatch.setattr(dec, "_raise_first_failure", lambda *a: looks.append(second_look(*a)))
    m = from_reference(ref, "cpu", torch.float32)
    toks = torch.tensor(TOKS)
    _, cache = m.prefill(toks[:, :5], mode="uncached")
    _, fresh = m.prefill(toks[:, :5], mode="uncached")
    cache.layers[1].k_norm_bound = torch.full((2, 2), 3e38)  # float32's max is 3.4e38
    got, _ = m.decode_step(toks[:, 5], cache)
    assert looks == [None]
    want, _ = m.decode_step(toks[:, 5], fresh)
    assert looks == [None] and torch.equal(got, want) and cache.length == 6


def test_failed_step_restores_the_key_bounds(ref):
    m = from_reference(ref, "cpu", torch.float32)
    toks = torch.tensor(TOKS)
    _, cache = m.prefill(toks[:, :5])
    m.decode_step(toks[:, 5], cache)
    before = [lc.key_norm_bound().clone() for lc in cache.layers]
    bk = m.params.layers[0].bk
    good = bk[1].item()
    bk[1] = float("nan")
    try:
        with pytest.raises(NonFiniteStageError, match=r"layer 0 k"):
            m.decode_step(toks[:, 6], cache)
    finally:
        bk[1] = good
    assert cache.length == 6
    for lc, b in zip(cache.layers, before, strict=True):
        assert torch.equal(lc.key_norm_bound(), b) and lc.k.shape[2] == 6


def test_decode_rejects_a_batch_the_cache_does_not_hold(ref):
    m = from_reference(ref, "cpu", torch.float32)
    _, cache = m.prefill(torch.tensor(TOKS[:, :5]))
    with pytest.raises(ValueError, match="token has 1 rows; the cache holds 2"):
        m.decode_step(torch.tensor([3]), cache)
