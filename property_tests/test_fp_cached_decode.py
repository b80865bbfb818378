"""fp_cached_decode: a cached decode and the uncached pass differ by at most B_c + B_u.

Lean: ``Pldr.fp_cached_decode`` (``lean/Pldr/Float/Decoder.lean``): decoding token by token
with a KV- and G-cache (``decodeLoop``) and the uncached pass with the same metrics
(``runWith``) are equal in exact arithmetic (``incremental_decoding``), so computed rows
within ``B_c`` and ``B_u`` of their exact values differ by at most ``B_c + B_u``
(:func:`pyverify.fp.stages.fp_cached_decode`).

Through the protocol's ``decoder(ref)``: ``decode(prompt, rest)`` (a prompt pass, then one
KV+G-cached step per token of ``rest``) against ``forward(prompt + rest)``, on the rows of
``rest``, in each implementation (the reference in float64, the kernels in float32, SDPA
pinned to the fused kernel). ``B_c`` and ``B_u`` are the composed ``fp_decoder_step``
bounds of :func:`pyverify.testing.decoder_bounds.decoder_bound` (the decoders of
``test_fp_decoder_step``: one layer, zero keys, parameters held exactly): a decoded row
goes through the same stage kernels on the same exact trajectory as the pass's row, and
its attention (one query against the cache) has the bound of the pass's row over the same
keys (``fp_head_output`` row by row), so ``B_c = B_u``. Checked: both hypotheses of the
statement (each computation within its bound of the mpmath oracle at 50 digits) and its
conclusion ``|Y_c - Y_u| <= B_c + B_u``, the last exactly (Fractions).

With keys and a supplied metric (:func:`pyverify.testing.decoder_bounds.pass_bound`: the
score path composed, the implementation's RoPE table certified) the conclusion, on the
decoders of ``test_fp_decoder_step``'s keyed test (one strategy,
:func:`~pyverify.testing.strategies.prompted_decoders`), which checks the hypotheses.
``incremental_decoding``'s and ``cache_equivalence``'s tests use these bounds as their
tolerance.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pyverify.errors import PowerLawOverflowError
from pyverify.fp.stages import fp_cached_decode
from pyverify.testing.decoder_bounds import zero_key_decoder
from pyverify.testing.decoder_tightness import decoder_pass
from pyverify.testing.fp import mp_excess, worst_excess
from pyverify.testing.impls import FLOAT, REFERENCE, impl_ids, kernels
from pyverify.testing.stage_bounds import OutsideModel, or_reject
from pyverify.testing.strategies import examples, prompted_decoders, small_decoder, tokens

pytestmark = pytest.mark.theorem("fp_cached_decode")

IMPLS = [REFERENCE, *kernels("float32")]


def _conclusion(bound, full, cached, n: int) -> float:
    """``max |Y_c - Y_u| / (B_c + B_u)`` on the rows after the prompt, exactly (Fractions).

    ``B_c = B_u``: the pass's bound on those rows (the same stages on the same exact rows,
    module docstring).
    """
    B_c = B_u = bound[n:]
    y_u = [[Fraction(float(t)) for t in row] for row in full[n:]]
    return worst_excess(cached, y_u, fp_cached_decode(B_c, B_u))


@pytest.mark.parametrize("impl", IMPLS, ids=impl_ids)
@examples(15)
@given(st.data())
def test_cached_decode_within_the_sum_of_the_bounds(impl, data):
    dm = data.draw(st.sampled_from([4, 16]), label="d_model")
    ref = zero_key_decoder(data.draw(small_decoder(d_model=dm, num_layers=1), label="decoder"))
    toks = data.draw(tokens(min_size=2, max_size=6), label="tokens")
    n = data.draw(st.integers(1, len(toks) - 1), label="prompt")
    try:
        exact, bound, full, cached = decoder_pass(impl, ref, toks, prompt=n)
    except (OutsideModel, PowerLawOverflowError):
        assume(False)  # a stage's premise fails, or the unused learner overflowed
    assert mp_excess(cached, exact[n:], bound[n:]) <= 1.0  # h_c: within B_c of the exact rows
    assert mp_excess(full[n:], exact[n:], bound[n:]) <= 1.0  # h_u: the uncached pass's rows
    assert _conclusion(bound, full, cached, n) <= 1.0  # the statement


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@examples(15)
@given(st.data())
def test_keyed_cached_decode_within_the_sum_of_the_bounds(impl, data):
    """Keys and a supplied metric ``G`` (``runWith``): the bounds of
    :func:`~pyverify.testing.decoder_bounds.pass_bound`, one layer at float32, one or two
    in float64 (``test_fp_decoder_step`` says why). The statement's conclusion; its
    hypotheses (the pass and the decode each within the bound of the exact rows) are
    ``test_fp_decoder_step``'s keyed test, on the same cases (``prompted_decoders``)."""
    ref, G, toks, n = data.draw(prompted_decoders(impl))
    _, bound, full, cached = or_reject(decoder_pass, impl, ref, toks, prompt=n, G=G)
    assert _conclusion(bound, full, cached, n) <= 1.0
