"""The decoder wrapper against the reference decoder; KV+G-cached decoding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_helpers import load_g_lm, rel_err

from pyverify.kernels.model import from_reference
from pyverify.reference import Decoder, g_cache_from

# Same tolerances as test_kernels.py (norm-wise relative): fp64 1e-12, fp32 1e-5.
TOL = {torch.float64: 1e-12, torch.float32: 1e-5}


@pytest.fixture(scope="module")
def ref() -> Decoder:
    return Decoder.random(vocab=32, d_model=16, num_heads=2, num_layers=2, dff=24, seed=0)


TOKS = np.array([[1, 5, 7, 3, 9, 2, 11, 4, 8], [0, 31, 6, 6, 2, 17, 9, 1, 30]])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_model_matches_reference(device, ref, dtype):
    m = from_reference(ref, device, dtype)
    logits, deds = m.forward(torch.tensor(TOKS, device=device))
    assert logits.shape == (2, 9, 32) and logits.dtype == dtype
    for b in range(2):
        r = ref.forward(TOKS[b])
        assert rel_err(logits[b], r.logits) <= TOL[dtype]
        for layer in range(2):
            for h in range(2):
                assert rel_err(deds[layer].G[b, h], r.deductive[layer][h].G) <= TOL[dtype]


def test_g_cached_model_matches_reference(device, ref):
    m = from_reference(ref, device)
    Gc = g_cache_from(ref.forward(TOKS[0, :5]))
    logits, _ = m.forward(torch.tensor(TOKS[:1], device=device), mode="g_cached",
                          G=[torch.tensor(g, device=device) for g in Gc])  # fmt: skip
    assert rel_err(logits[0], ref.forward(TOKS[0], G_cache=Gc).logits) <= 1e-12


@pytest.mark.parametrize("mode", ["g_cached", "collapsed"])
def test_decode_kv_g_cache_equals_full_recompute(device, ref, mode):
    """Constant G: KV+G-cached decoding reproduces the full recomputation."""
    m = from_reference(ref, device)
    toks = torch.tensor(TOKS, device=device)
    G = [torch.tensor(g, device=device) for g in g_cache_from(ref.forward(TOKS[0, :4]))]
    full, _ = m.forward(toks, mode=mode, G=G)
    _, cache = m.prefill(toks[:, :5], mode=mode, G=G)
    for pos in range(5, 9):
        step, cache = m.decode_step(toks[:, pos], cache)
        assert rel_err(step, full[:, pos]) <= 1e-12
    assert cache.length == 9


def test_decode_a_cache_matches_reference(device, ref):
    """Without the G-cache, steps 4-6 are recomputed from the stored A (reference semantics)."""
    m = from_reference(ref, device)
    _, cache = m.prefill(torch.tensor(TOKS[:1, :6], device=device))
    r = ref.forward(TOKS[0, :6])
    for pos in range(6, 9):
        step, cache = m.decode_step(torch.tensor([TOKS[0, pos]], device=device), cache,
                                    use_g_cache=False)  # fmt: skip
        r = ref.decode_step(int(TOKS[0, pos]), r.cache)
        assert rel_err(step[0], r.logits[0]) <= 1e-12


def test_trained_g_lm_model_cached_vs_collapsed(device):
    """A 5-layer, 14-head, dk = 64 model with the trained G_LM: g_cached == collapsed (fp32)."""
    G_lm = load_g_lm()
    ref = Decoder.random(vocab=50, d_model=14 * 64, num_heads=14, num_layers=5, dff=64,
                         a_dff=4, num_reslayer=0, num_dense=0, seed=1)  # fmt: skip
    m = from_reference(ref, device, torch.float32)
    toks = torch.tensor(np.random.default_rng(0).integers(0, 50, (2, 24)), device=device)
    G = [torch.tensor(g, device=device) for g in G_lm]
    a, _ = m.forward(toks, mode="g_cached", G=G)
    b, _ = m.forward(toks, mode="collapsed", G=G)
    assert torch.isfinite(a).all()
    assert rel_err(b, a) <= 1e-5


def test_model_validation(device, ref):
    m = from_reference(ref, device)
    with pytest.raises(TypeError, match="tokens"):
        m.forward(torch.zeros(1, 3, device=device))
    with pytest.raises(ValueError, match="tokens must lie"):
        m.forward(torch.tensor([[0, 99]], device=device))
    with pytest.raises(ValueError, match="needs G"):
        m.forward(torch.tensor([[0, 1]], device=device), mode="collapsed")
    with pytest.raises(ValueError, match="mode"):
        m.forward(torch.tensor([[0, 1]], device=device), mode="nope")
