"""incremental_decoding: token-by-token decoding with a growing KV-cache and a G-cache
equals the full causal forward pass, at every prefix length.

Two semantics, both on the reference :class:`~pyverify.reference.Decoder` and the kernels'
:class:`~pyverify.kernels.model.PLGADecoder`:

* invariant G (every head's metric is ``a = 0, b_a = G*``, so ``G(X) = G*`` on every
  prefix): for each prompt length ``n`` in ``1 .. S-1``, prompt pass then one decode step
  per remaining token (cache growing one row per step) gives the logits of the full
  uncached forward pass on the whole sequence, row for row; with ``G*`` supplied to the
  prompt pass or taken from it alike;
* G from the prompt (any, Gram-dependent metric): decoding with the G-cache of the prompt
  equals the forward pass on the whole sequence with that G supplied (the reference
  decoder's semantics); across implementations with the same supplied G (the kernels'
  decode against the reference's forward pass: an independent oracle).

The loop is written here (not through the adapters) so the cache itself is checked: its
length grows by exactly one per step and the rows already stored are never changed
(bitwise).

Tolerance: the decode step (one query row against the cache) and the full pass sum in
different orders, so they agree within the proved bounds of both computations
(``[fp_cached_decode]``: ``B_c + B_u`` of
:func:`~pyverify.testing.decoder_bounds.cached_decode_bound`, each the ``fp_decoder_step``
bound of the pass with its ``G`` supplied), SDPA pinned to the backend they model.
float32 decoders have one layer (no proved bound at two); bfloat16/float16 models are
not tested (no proved bound at one).

Non-vacuity: with a Gram-dependent G, decoding with the prompt's G differs from the full
uncached pass (the invariance hypothesis matters): checked on a fixed model.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import pyverify.kernels as kern
from pyverify.reference import Decoder, DecoderParams, KVGCache, PowerLawOverflowError, g_cache_from
from pyverify.testing.decoder_bounds import cached_decode_bound, pass_bound
from pyverify.testing.decoder_tightness import pinned_decoder
from pyverify.testing.impls import FLOAT, REFERENCE, impl_ids, kernels
from pyverify.testing.stage_bounds import or_reject, oracle_gap
from pyverify.testing.strategies import (
    decoder_constant_g,
    decoder_g,
    examples,
    proved_layers,
    small_decoder,
    tokens,
)

pytestmark = pytest.mark.theorem("incremental_decoding")

OVERFLOW = PowerLawOverflowError  # pyverify.errors: one class for both implementations

#: [non-vacuity] Without invariance, decoding with the prompt's G must move the logits by
#: more than this many times the rounding tolerance of the uncached pass ("far more than
#: rounding": the invariance hypothesis matters).
SHARP_FACTOR = 1000


# --------------------------------------------------------------------------- decode loops
def _decode_reference(ref: Decoder, toks, n: int, G, from_prompt: bool) -> np.ndarray:
    out = ref.forward(np.asarray(toks[:n]), G_cache=G)
    cache = out.cache
    if from_prompt:
        cache = KVGCache(layers=cache.layers, G=g_cache_from(out))
    logits = []
    for tok in toks[n:]:
        step = ref.decode_step(int(tok), cache)
        new = step.cache
        assert new.length == cache.length + 1  # one row per step
        for old_l, new_l in zip(cache.layers, new.layers, strict=True):
            assert np.array_equal(new_l.k[:, : cache.length], old_l.k)  # stored rows kept
            assert np.array_equal(new_l.v[:, : cache.length], old_l.v)
        cache = new
        logits.append(step.logits[0])
    return np.array(logits)


def _decode_kernels(impl, ref: Decoder, toks, n: int, G, from_prompt: bool) -> np.ndarray:
    model = kern.model.from_reference(ref, impl.device, impl.tdtype)
    t = torch.as_tensor(np.asarray(toks, dtype=np.int64), device=impl.device)[None]
    if G is None:
        _, cache = model.prefill(t[:, :n])
    else:
        _, cache = model.prefill(t[:, :n], mode="g_cached", G=[impl.t(g, impl.cdtype) for g in G])
    assert from_prompt or G is not None
    logits = []
    for i in range(n, len(toks)):
        before = [(lc.k.clone(), lc.v.clone()) for lc in cache.layers]
        length = cache.length
        step, cache = model.decode_step(t[:, i], cache, use_g_cache=True)
        assert cache.length == length + 1
        for (k_old, v_old), lc in zip(before, cache.layers, strict=True):
            assert lc.k.shape[2] == length + 1
            assert torch.equal(lc.k[:, :, :length], k_old)
            assert torch.equal(lc.v[:, :, :length], v_old)
        logits.append(step[0].to(torch.float64).cpu().numpy())
    return np.array(logits)


def decode(impl, ref: Decoder, toks, n: int, *, G=None, from_prompt=False) -> np.ndarray:
    """Logits of positions ``n ..`` by prompt pass + one decode step per token."""
    if impl.name == "reference":
        return _decode_reference(ref, toks, n, G, from_prompt)
    if impl.name == "kernels":
        return _decode_kernels(impl, ref, toks, n, G, from_prompt)
    # any other implementation: its protocol decoder (the shipped two also have their
    # caches' growth checked above; a plugin's cache layout is its own)
    return impl.decoder(ref).decode(toks[:n], toks[n:], G=G)


def prompt_g(impl, ref: Decoder, prompt) -> list[np.ndarray]:
    """The per-layer ``(H, dk, dk)`` G of an uncached prompt pass of the implementation."""
    return [np.stack([h.G for h in layer]) for layer in impl.decoder(ref).deductive(prompt)]


# --------------------------------------------------------------------------- invariant G
@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@examples(12)
@given(st.data())
def test_invariant_g_decoding_equals_full_pass_at_every_length(impl, data):
    base = data.draw(small_decoder(**proved_layers(impl)), label="decoder")
    G = data.draw(decoder_g(base), label="G")
    toks = data.draw(tokens(16, 2, 6), label="tokens")
    ref = decoder_constant_g(base, G)
    tol = or_reject(cached_decode_bound, impl, ref, toks, G)
    with pinned_decoder(impl, ref):
        full = impl.decoder(ref).forward(toks)  # uncached: G recomputed (= G*) on the whole
        assert np.all(np.isfinite(full))
        for n in range(1, len(toks)):
            # the prompt pass itself is the full pass on the prefix (causal, G invariant)
            assert np.all(np.abs(impl.decoder(ref).forward(toks[:n]) - full[:n]) <= tol[:n])
            for kw in ({"G": G}, {"from_prompt": True}):
                steps = decode(impl, ref, toks, n, **kw)
                assert steps.shape == full[n:].shape
                assert np.all(np.abs(steps - full[n:]) <= tol[n:])


# --------------------------------------------------------------------------- G from prompt
@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@examples(12)
@given(st.data())
def test_decoding_with_prompt_g_equals_full_pass_with_that_g(impl, data):
    ref = data.draw(small_decoder(**proved_layers(impl)), label="decoder")
    toks = data.draw(tokens(16, 2, 6), label="tokens")
    model = impl.decoder(ref)
    with pinned_decoder(impl, ref):
        for n in range(1, len(toks)):
            try:
                G = prompt_g(impl, ref, toks[:n])
            except OVERFLOW:
                continue  # the power law overflowed on this prompt: no G to cache
            want = model.forward(toks, G=G)
            steps = decode(impl, ref, toks, n, from_prompt=True)
            tol = or_reject(cached_decode_bound, impl, ref, toks, G)[n:]
            assert np.all(np.abs(steps - want[n:]) <= tol)


def _across(impl, ref, toks, G) -> np.ndarray:
    """``[fp_decoder_step]`` ``impl``'s pass against the reference's, both with ``G``.

    Each within its bound of its own exact pass (:func:`pass_bound`: the parameters as each
    holds them), and the two exact passes apart by at most their mpmath oracles' distance
    plus both oracles' own errors (:func:`~pyverify.testing.stage_bounds.oracle_gap`),
    rounded up: the triangle inequality. Rejects a decoder without a proved bound.
    """
    exact_i, b_i = or_reject(pass_bound, impl, ref, toks, G)
    exact_r, b_r = or_reject(pass_bound, REFERENCE, ref, toks, G)
    return b_i + b_r + oracle_gap(exact_i, exact_r)


@pytest.mark.parametrize("impl", kernels("float64", "float32"), ids=impl_ids)
@examples(12)
@given(st.data())
def test_kernel_decoding_matches_reference_forward_with_the_same_g(impl, data):
    """Independent oracle: the kernels' decode (G-cached prompt with the reference's prompt
    G) against the reference's full pass with that G; two implementations' bounds."""
    ref = data.draw(small_decoder(**proved_layers(impl)), label="decoder")
    toks = data.draw(tokens(16, 2, 6), label="tokens")
    for n in range(1, len(toks)):
        try:
            G = prompt_g(REFERENCE, ref, toks[:n])
        except OVERFLOW:
            continue
        want = REFERENCE.decoder(ref).forward(toks, G=G)
        with pinned_decoder(impl, ref):
            steps = decode(impl, ref, toks, n, G=G)
        assert np.all(np.abs(steps - want[n:]) <= _across(impl, ref, toks, G)[n:])


@pytest.mark.parametrize("impl", [REFERENCE, *kernels("float64")], ids=impl_ids)
def test_gram_dependent_g_makes_decoding_differ_from_recomputation(impl):
    """Sharpness: without invariance the prompt's G is not the whole sequence's G, and the
    decoded logits differ from the uncached full pass by far more than rounding (the
    proved bound of the two computations, the full pass's own G supplied)."""
    ref = Decoder(DecoderParams.random(vocab=16, d_model=8, num_heads=2, num_layers=1, dff=12,
                                       a_dff=6, num_reslayer=1, num_dense=1, seed=3))  # fmt: skip
    toks = np.array([1, 7, 3, 12, 5, 9])
    tol = cached_decode_bound(impl, ref, toks, prompt_g(impl, ref, toks))
    with pinned_decoder(impl, ref):
        full = impl.decoder(ref).forward(toks)
        steps = decode(impl, ref, toks, 1, from_prompt=True)
    assert np.max(np.abs(steps - full[1:])) > SHARP_FACTOR * np.max(tol[1:])
