"""fp_decoder_step: a decoder pass's logits are within the composed bound of its stages.

Lean: ``Pldr.fp_decoder_step`` with ``fp_decoder_step_layer``, ``_residual``, ``_affine``
and ``_layerNorm`` (``lean/Pldr/Float/Decoder.lean``): the embedding's LayerNorm, each layer
(attention sublayer, residual + LayerNorm, feed-forward sublayer, residual + LayerNorm)
and the logits, every stage bounded along the exact trajectory: the computed logits are
within ``beta_logits(., beta_layers(., beta_emb(x, d)))`` of the exact ones
(:func:`pyverify.fp.stages.fp_decoder_step` composing the stages of
:func:`pyverify.testing.stage_bounds.decoder_bound`: ``fp_layernorm``,
``fp_decoder_step_residual``, ``fp_decoder_step_affine`` with ``fp_mixed_precision``,
``fp_swiglu``, and the attention sublayer by ``fp_head_output``).

Through the protocol's ``decoder(ref).forward(tokens)``: the whole decoder of each
implementation (the reference :class:`~pyverify.reference.Decoder` in float64, the kernels'
``PLGADecoder`` in float32, SDPA pinned to the fused kernel), every row of a short
sequence (one token: a first decoding step) against mpmath at 50 digits.

What is covered, and what not: the decoders are drawn small (``d_model`` 4 or 16, one or
two heads, one layer: the composed worst-case bound grows ~10^3 per layer, and at float32
a second layer's LayerNorm is no longer resolved) with zero keys (``W_k = 0``,
``b_k = 0``): every score is exactly 0, so the exact attention is the causal mean of the
values and its bound is ``fp_head_output`` with exact scores. The queries, RoPE and the
metric learner still run in both implementations but do not reach the logits; the score
path (``fp_head_scores``, ``fp_softmax`` with nonzero scores) is covered by their own
tests, not composed here (RoPE's rounding has no proved bound). The parameters are
rounded to float32 (held exactly), every LayerNorm ``eps`` is ``2^-20`` and ``d_model`` a
perfect square (the embedding's scaling exact). The kernels' LayerNorm moments are held to
the two-pass statistics' bounds (the assumption stated in
:mod:`pyverify.testing.stage_bounds`, checked where observable by ``test_fp_layernorm``).

Tolerance: the composed bound itself (each float64-evaluated stage times ``EVAL_SLACK``).
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pyverify.errors import PowerLawOverflowError
from pyverify.testing.decoder_tightness import decoder_pass
from pyverify.testing.fp import mp_excess
from pyverify.testing.impls import REFERENCE, impl_ids, kernels
from pyverify.testing.stage_bounds import (
    OutsideModel,
    zero_key_decoder,
)
from pyverify.testing.strategies import examples, small_decoder, tokens

pytestmark = pytest.mark.theorem("fp_decoder_step")

IMPLS = [REFERENCE, *kernels("float32")]


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
