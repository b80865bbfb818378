"""fp_decoder_step: a decoder pass's logits are within the composed bound of its stages.

Lean: ``Pldr.fp_decoder_step`` with ``fp_decoder_step_layer``, ``_residual``, ``_affine``
and ``_layerNorm`` (``lean/Pldr/Float/Decoder.lean``): the embedding's LayerNorm, each layer
(attention sublayer, residual + LayerNorm, feed-forward sublayer, residual + LayerNorm)
and the logits, every stage bounded along the exact trajectory: the computed logits are
within ``beta_logits(., beta_layers(., beta_emb(x, d)))`` of the exact ones
(:func:`pyverify.fp.stages.fp_decoder_step` composing the stages of
:func:`pyverify.testing.decoder_bounds.decoder_bound`: ``fp_layernorm``,
``fp_decoder_step_residual``, ``fp_decoder_step_affine`` with ``fp_mixed_precision``,
``fp_swiglu``, and the attention sublayer by ``fp_head_output``).

Through the protocol's ``decoder(ref).forward(tokens)``: the whole decoder of each
implementation (the reference :class:`~pyverify.reference.Decoder` in float64, the kernels'
``PLGADecoder`` in float32, SDPA pinned to the fused kernel), every row of a short
sequence (one token: a first decoding step) against mpmath at 50 digits.

What is covered, and what not. Two kinds of decoder, drawn small (``d_model`` 2 to 16, one
or two heads): the composed worst-case bound grows ~10^3 per layer, so one layer at
float32 (a second layer's LayerNorm or softmax premises are no longer met there), one or
two in float64.

* Zero keys (``W_k = 0``, ``b_k = 0``, :func:`~pyverify.testing.decoder_bounds.zero_key_decoder`):
  every score is exactly 0, the exact attention is the causal mean of the values and its
  bound ``fp_head_output`` with exact scores; the queries, RoPE and the metric learner
  run in both implementations but do not reach the logits. Every LayerNorm ``eps`` is
  ``2^-20``.
* Keys and a supplied metric ``G`` per head (:func:`~pyverify.testing.decoder_bounds.pass_bound`):
  the whole score path composed (the projections, RoPE against the implementation's own
  rotation table certified entry by entry against mpmath, ``fp_head_scores`` from
  computed queries and keys, ``fp_head_output`` with those scores' error), the drawn
  ``eps``; the pass and a cached decode with that ``G`` (the cached decode's rows are
  ``fp_cached_decode``'s hypothesis ``h_c``). The metric learner is not run (``G`` given).

The parameters are those the implementation holds (rounded to its dtype). The kernels'
LayerNorm moments are held to the two-pass statistics' bounds (the assumption stated in
:mod:`pyverify.testing.stage_bounds`, checked where observable by ``test_fp_layernorm``).

Tolerance: the composed bound itself (each float64-evaluated stage times ``EVAL_SLACK``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pyverify.errors import PowerLawOverflowError
from pyverify.reference import Decoder, DecoderParams
from pyverify.testing.decoder_bounds import pass_bound, zero_key_decoder
from pyverify.testing.decoder_tightness import decoder_pass, pinned_decoder
from pyverify.testing.fp import mp_excess
from pyverify.testing.impls import FLOAT, REFERENCE, impl_ids, kernels
from pyverify.testing.stage_bounds import OutsideModel, or_reject
from pyverify.testing.strategies import examples, prompted_decoders, small_decoder, tokens

pytestmark = pytest.mark.theorem("fp_decoder_step")

IMPLS = [REFERENCE, *kernels("float32")]
#: [non-vacuity] a metric off by this much (relative) must move a float64 decode out of
#: the proved bound (two layers; at 1e-6 the error is 0.63 of the bound, measured).
WRONG_METRIC = 1e-5


def _excess(impl, ref, toks) -> float:
    """``max |logits^ - logits| / bound`` of one pass (> 1: violated)."""
    try:
        exact, bound, got, _ = decoder_pass(impl, ref, toks)
    except (OutsideModel, PowerLawOverflowError):
        assume(False)  # a LayerNorm the theorem cannot resolve, or the unused learner overflowed
    return mp_excess(got, exact, bound)


@pytest.mark.parametrize("impl", IMPLS, ids=impl_ids)
@examples(20)
@given(st.data())
def test_decoder_pass_within_composed_bound(impl, data):
    dm = data.draw(st.sampled_from([4, 16]), label="d_model")
    ref = zero_key_decoder(data.draw(small_decoder(d_model=dm, num_layers=1), label="decoder"))
    toks = data.draw(tokens(min_size=1, max_size=5), label="tokens")
    assert _excess(impl, ref, toks) <= 1.0


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@examples(15)
@given(st.data())
def test_keyed_decoder_pass_and_decode_within_composed_bound(impl, data):
    """The pass with ``G`` supplied and a cached decode with it (``fp_cached_decode``'s
    hypotheses ``h_u``, ``h_c``; its conclusion: ``test_fp_cached_decode``, same cases)."""
    ref, G, toks, n = data.draw(prompted_decoders(impl))
    exact, bound, got, cached = or_reject(decoder_pass, impl, ref, toks, prompt=n, G=G)
    assert mp_excess(got, exact, bound) <= 1.0
    assert mp_excess(cached, exact[n:], bound[n:]) <= 1.0


@pytest.mark.implementation("kernels", dtype="float64")
def test_keyed_bound_is_sharp_enough_to_catch_a_wrong_metric():
    """A decode that uses a metric off by ``rel`` (relative) leaves the float64 bound; the
    same decode with the right metric (the positive control) stays within it."""
    ref = Decoder(DecoderParams.random(vocab=16, d_model=8, num_heads=2, num_layers=2, dff=12,
                                       a_dff=6, num_reslayer=1, num_dense=1, seed=5))  # fmt: skip
    rng = np.random.default_rng(5)
    G = [np.stack([np.eye(4) + rng.uniform(-1, 1, (4, 4)) / 4 for _ in range(2)]) for _ in range(2)]
    toks = np.array([3, 1, 4, 1, 5, 9])
    impl = kernels("float64")[0]
    exact, bound = pass_bound(impl, ref, toks, G)
    wrong = [g * (1 + WRONG_METRIC) for g in G]
    with pinned_decoder(impl, ref):
        model = impl.decoder(ref)
        right_steps = model.decode(toks[:2], toks[2:], G=G)
        wrong_steps = model.decode(toks[:2], toks[2:], G=wrong)
    assert mp_excess(right_steps, exact[2:], bound[2:]) <= 1.0
    assert mp_excess(wrong_steps, exact[2:], bound[2:]) > 1.0
