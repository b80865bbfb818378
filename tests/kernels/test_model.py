"""The decoder wrapper against the reference decoder; KV+G-cached decoding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_helpers import TOL, load_g_lm, rel_err

from pyverify.kernels.model import from_reference
from pyverify.reference import Decoder, g_cache_from


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


@pytest.mark.parametrize("rows", [1, 2, 7, 64, 65])
@pytest.mark.parametrize("output_major", [True, False])
def test_linear_matches_matmul_in_both_layouts(device, rows, output_major):
    """``_linear`` (its small-row path runs ``(W^T x^T)^T``) equals ``x @ W + b``.

    Oracle: the float64 product in NumPy. Only the summation order differs, over
    K = 48 terms, so the error is below K u ~ 5e-15 relative (norm-wise, for
    these well-conditioned Gaussian operands); 1e-13 leaves 20x headroom.
    """
    from pyverify.kernels.linear import linear as _linear
    from pyverify.kernels.linear import output_major as _output_major

    g = torch.Generator().manual_seed(rows)
    x, W, b = (
        torch.randn(*s, generator=g, dtype=torch.float64) for s in ((rows, 48), (48, 40), (40,))
    )
    Wd = (_output_major(W) if output_major else W).to(device)
    got = _linear(x.to(device).view(1, rows, 48), Wd, b.to(device))
    assert got.shape == (1, rows, 40)
    assert rel_err(got[0], x.numpy() @ W.numpy() + b.numpy()) <= 1e-13


def test_model_weights_are_output_major(device, ref):
    """from_reference stores the projections as nn.Linear does (the fast decode layout)."""
    p = from_reference(ref, device, torch.float32).params
    lp = p.layers[0]
    for W in (lp.Wq, lp.Wk, lp.Wv, lp.Wo, lp.ffn.W1, lp.ffn.W2, lp.ffn.W3, p.Wf):
        assert W.t().is_contiguous()
    assert torch.equal(
        lp.Wq.cpu().double(), torch.as_tensor(ref.params.layers[0].mha.Wq).float().double()
    )


def test_decode_step_reports_non_finite_logits(device, ref):
    """The step checks its own rows and its logits (not the whole cache per layer)."""
    from pyverify.errors import NonFiniteStageError

    m = from_reference(ref, device)
    toks = torch.tensor(TOKS, device=device)
    _, cache = m.prefill(toks[:, :5])
    cache.layers[1].v[0, 0, 2, 0] = float("inf")
    with pytest.raises(NonFiniteStageError, match="logits"):
        m.decode_step(toks[:, 5], cache)


def test_decode_step_checks_its_new_rows(device, ref):
    """A new row that overflows is named (torch's CPU SDPA would turn its NaN scores
    into zero outputs, so the logits alone could not show it)."""
    from pyverify.errors import NonFiniteStageError

    m = from_reference(ref, device)
    toks = torch.tensor(TOKS, device=device)
    _, cache = m.prefill(toks[:, :5])
    bk = m.params.layers[1].bk
    good = bk[0].item()
    bk[0] = float("inf")  # the parameters were checked at build time
    with pytest.raises(NonFiniteStageError, match=r"layer 1 k"):
        m.decode_step(toks[:, 5], cache)
    # the failed step left the cache as it was (layer 0 had already taken its row)
    assert cache.length == 5 and all(lc.k.shape[2] == lc.v.shape[2] == 5 for lc in cache.layers)
    bk[0] = good
    _, fresh = m.prefill(toks[:, :5])
    assert torch.equal(m.decode_step(toks[:, 5], cache)[0], m.decode_step(toks[:, 5], fresh)[0])


@pytest.mark.parametrize("use_g_cache", [True, False])
def test_decode_step_refuses_finite_rows_whose_scores_overflow(device, ref, use_g_cache):
    """Finite q and k rows (1e19 each, float32 max 3.4e38) whose scores overflow are a
    [scores] error under every CPU dispatch (torch's SDPA would make NaN logits on some,
    silently zero attention rows on others); the cache stays as it was."""
    from pyverify.errors import NonFiniteStageError

    m = from_reference(ref, device, torch.float32)
    toks = torch.tensor(TOKS, device=device)
    _, cache = m.prefill(toks[:, :5], mode="uncached")
    lp = m.params.layers[1]
    saved = lp.bq.clone(), lp.bk.clone()
    lp.bq.fill_(1e19)
    lp.bk.fill_(1e19)
    try:
        with pytest.raises(NonFiniteStageError, match=r"\[scores\]"):
            m.decode_step(toks[:, 5], cache, use_g_cache=use_g_cache)
    finally:
        lp.bq.copy_(saved[0])
        lp.bk.copy_(saved[1])
    assert cache.length == 5 and all(lc.k.shape[2] == 5 for lc in cache.layers)
    logits, _ = m.decode_step(toks[:, 5], cache, use_g_cache=use_g_cache)
    assert torch.isfinite(logits).all()


def test_cache_key_norm_bound_stays_an_upper_bound(device, ref):
    """The running bound equals max |k_j| after appends and stays above it after a
    truncation (an over-estimate only sends check_score_range to its exact path)."""
    m = from_reference(ref, device)
    toks = torch.tensor(TOKS, device=device)
    _, cache = m.prefill(toks[:, :3])
    lc = cache.layers[0]
    lc.key_norm_bound()
    for t in range(3, 8):
        m.decode_step(toks[:, t], cache)
    exact = torch.linalg.vector_norm(lc.k, dim=-1).amax(dim=-1)
    assert torch.equal(lc.key_norm_bound(), exact)
    cache.truncate(4)
    now = torch.linalg.vector_norm(lc.k, dim=-1).amax(dim=-1)
    assert (lc.key_norm_bound() >= now).all()
