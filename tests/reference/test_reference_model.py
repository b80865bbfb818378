"""Multi-head layer, decoder stack, KV- and G-cached decoding."""

from __future__ import annotations

import numpy as np
import pytest

from pyverify.reference import (
    Decoder,
    DecoderParams,
    KVGCache,
    MHAParams,
    apply_rope,
    g_cache_from,
    mha_forward,
    plga_forward,
)
from pyverify.reference.data import DataFileMissingError, load_g_lm

TOKENS = np.array([3, 17, 5, 9, 30, 1, 12, 7, 22, 4])


@pytest.fixture(scope="module")
def model():
    return Decoder.random(vocab=32, d_model=16, num_heads=2, num_layers=3, dff=24, a_dff=8, seed=11)


def decode_all(m, tokens, n_prompt, G_cache=None):
    out = m.forward(tokens[:n_prompt], G_cache=G_cache)
    rows = [out.logits]
    cache = out.cache
    for t in tokens[n_prompt:]:
        step = m.decode_step(int(t), cache)
        assert step.logits.shape == (1, m.params.vocab)
        rows.append(step.logits)
        cache = step.cache
    assert cache.length == len(tokens)
    return np.vstack(rows)


def test_mha_matches_manual_heads():
    rng = np.random.default_rng(0)
    prm = MHAParams.random(12, 3, a_dff=6, num_reslayer=1, num_dense=1, rng=rng)
    x = rng.normal(size=(5, 12))
    res = mha_forward(x, prm)
    q = x @ prm.Wq + prm.bq
    k = x @ prm.Wk + prm.bk
    v = x @ prm.Wv + prm.bv
    outs = []
    for h in range(3):
        cols = slice(4 * h, 4 * h + 4)  # head h owns columns h*dk .. (h+1)*dk - 1
        o, ded = plga_forward(
            apply_rope(q[:, cols]), apply_rope(k[:, cols]), v[:, cols], prm.heads[h]
        )
        np.testing.assert_array_equal(ded.G, res.deductive[h].G)
        outs.append(o)
    np.testing.assert_allclose(res.out, np.hstack(outs) @ prm.Wo + prm.bo, rtol=1e-13, atol=1e-14)
    assert res.cache.k.shape == (3, 5, 4) and res.cache.A.shape == (3, 4, 4)


def test_constant_g_model_kvg_decode_equals_full_recompute(model):
    G = g_cache_from(model.forward(TOKENS[:4]))
    full = model.forward(TOKENS, G_cache=G).logits
    dec = decode_all(model, TOKENS, 4, G_cache=G)
    err = np.max(np.abs(dec - full)) / np.max(np.abs(full))
    print(f"constant-G KV+G decode vs recompute: rel err {err:.1e}")
    assert err <= 1e-12
    # prefix consistency of a constant-G stack
    for r in (0, 3, 7):
        np.testing.assert_allclose(
            model.forward(TOKENS[: r + 1], G_cache=G).logits[r], full[r], rtol=1e-12, atol=1e-13
        )


def test_reference_kv_decode_reuses_prompt_A(model):
    """Without a G-cache, decoding reuses A from the prompt pass (as pldr_model_v510)."""
    prompt = model.forward(TOKENS[:4])
    dec = decode_all(model, TOKENS, 4)
    frozen = model.forward(TOKENS, G_cache=g_cache_from(prompt)).logits
    np.testing.assert_allclose(dec, frozen, rtol=1e-12, atol=1e-12)
    recomputed = model.forward(TOKENS).logits  # the Gram grows: G changes with the sequence
    assert np.max(np.abs(dec[4:] - recomputed[4:])) > 1e-3
    assert np.max(np.abs(recomputed[:4] - prompt.logits)) > 1e-3  # not prefix-consistent


def test_stack_cache_equivalence_on_same_input(model):
    out = model.forward(TOKENS)
    cached = model.forward(TOKENS, G_cache=g_cache_from(out))
    np.testing.assert_array_equal(cached.logits, out.logits)
    as_array = model.forward(TOKENS, G_cache=np.stack(g_cache_from(out)))
    np.testing.assert_array_equal(as_array.logits, out.logits)


def test_embeddings_input_and_decode_with_embedding(model):
    emb = model.params.embedding[TOKENS]
    a = model.forward(TOKENS)
    b = model.forward(embeddings=emb)
    np.testing.assert_array_equal(a.logits, b.logits)
    s1 = model.decode_step(int(TOKENS[4]), model.forward(TOKENS[:4]).cache)
    s2 = model.decode_step(None, model.forward(TOKENS[:4]).cache, embedding=emb[4])
    np.testing.assert_array_equal(s1.logits, s2.logits)


def test_decode_does_not_mutate_cache(model):
    c = model.forward(TOKENS[:3]).cache
    k0 = c.layers[0].k.copy()
    model.decode_step(1, c)
    assert c.length == 3
    np.testing.assert_array_equal(c.layers[0].k, k0)


def test_real_trained_operators_drive_a_small_model():
    try:
        G_LM = load_g_lm("trained")
    except DataFileMissingError:
        pytest.skip("shared data not available")
    G = G_LM[:2, :2]  # 2 layers x 2 heads of the trained operator, dk = 64
    m = Decoder.random(
        vocab=40,
        d_model=128,
        num_heads=2,
        num_layers=2,
        dff=64,
        a_dff=4,
        num_reslayer=1,
        num_dense=1,
        seed=5,
    )
    full = m.forward(TOKENS, G_cache=G).logits
    dec = decode_all(m, TOKENS, 3, G_cache=G)
    assert np.max(np.abs(dec - full)) / np.max(np.abs(full)) <= 1e-12


@pytest.mark.parametrize(
    ("call", "exc", "msg"),
    [
        (lambda m: m.forward(np.array([1.0, 2.0])), TypeError, "tokens must be an integer"),
        (lambda m: m.forward(np.array([1, 99])), ValueError, r"tokens must lie in \[0, 32\)"),
        (lambda m: m.forward(np.array([], dtype=int)), ValueError, "tokens must have shape"),
        (lambda m: m.forward(), ValueError, "exactly one of tokens and embeddings"),
        (lambda m: m.forward(embeddings=np.ones((3, 5))), ValueError, "embeddings must have"),
        (lambda m: m.forward(TOKENS, G_cache=[np.eye(8)] * 3), ValueError, r"G_cache\[0\]"),
        (lambda m: m.forward(TOKENS, G_cache=[np.eye(8)]), ValueError, "G_cache must be"),
        (lambda m: m.decode_step(1, "cache"), TypeError, "cache must be a KVGCache"),
        (lambda m: m.decode_step(1, KVGCache(layers=[])), ValueError, "cache must have 3"),
        (lambda m: m.decode_step(None, m.forward(TOKENS[:2]).cache), ValueError, "token"),
        (lambda m: Decoder("p"), TypeError, "params must be a DecoderParams"),
    ],
)
def test_model_validation(model, call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(model)


def test_param_validation():
    with pytest.raises(ValueError, match="divisible"):
        DecoderParams.random(d_model=10, num_heads=3)
    with pytest.raises(ValueError, match="even"):
        DecoderParams.random(d_model=9, num_heads=3)


def test_shared_learner_is_the_default_form():
    """``DecoderParams.random`` draws the v510 form (one learner per layer, shared by its
    heads, distinct W, b, P, a, b_a); ``shared_learner=False`` the per-head generalisation."""
    from pyverify.reference.params import learners_equal

    shared = Decoder.random(num_heads=2, d_model=8, seed=1).params.layers[0].mha
    assert shared.shared_learner and learners_equal(shared.heads)
    assert not np.array_equal(shared.heads[0].W, shared.heads[1].W)
    per = Decoder.random(num_heads=2, d_model=8, seed=1, shared_learner=False)
    assert not per.params.layers[0].mha.shared_learner
    # (the reference has one code path for both forms; the kernels' one-GEMM shared
    # learner is checked against it in tests/kernels/test_shared_learner.py)
