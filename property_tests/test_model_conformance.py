"""Model-level conformance: each decoder against the spec written out in exact arithmetic.

Every other model-level property compares a decoder with itself in another mode, so a
structural bug (a residual or a rotation dropped, the learner fed the wrong tensor, a cache
that reuses the wrong ``G``) would sit on both sides. Here the oracle is ``plga-spec.md``
"The reference model around the head" evaluated in mpmath
(:func:`pyverify.testing.decoder_bounds.decoder_bound`: the embedding times
``sqrt(d_model)`` then LayerNorm, projections with bias, RoPE at the exact angles
``n 10000^(-2p/dk)``, per head ``softmax(q G k^T / sqrt(dk)) v`` causal, concat and output
projection, residual + post-LayerNorm, SwiGLU FFN, residual + post-LayerNorm, readout;
steps 1-6 of the head from :mod:`pyverify.reference.mp_stages`), and every comparison is
held to a proved bound:

* **logits**: ``[fp_decoder_step]`` for the pass with the metric ``G`` the decoder used
  (its own, read out of its deductive tensors; the cache's; or the one supplied):
  :func:`~pyverify.testing.decoder_bounds.pass_bound`, a cached decode's rows included
  (``fp_cached_decode``);
* **A** of every layer and head: the metric learner's composed bound
  (:func:`~pyverify.testing.learner_bounds.composed_learner_bound`: ``D = Q^T Q`` on the
  computed queries, the row LayerNorms, the SwiGLU units) on the exact rotated queries of
  that pass and their bound (``pass_bound(..., queries=)``);
* **A_LM, A_P, G**: steps 4-6 applied exactly to the decoder's own previous tensor, each
  within its stage's bound (:func:`~pyverify.testing.bounds.formula_excess`).

So a layer's ``G`` is the spec's function of that layer's input (the pass run with the
decoder's ``G`` for the layers below), and the logits are the spec's pass with those ``G``.
What is assumed: the premises of the stage statements (:mod:`pyverify.testing.stage_bounds`:
torch's CPU kernels at the subject's arithmetic, SDPA pinned to the backend the bound
models), and that ``deductive`` reports the tensors ``forward`` used (one deterministic
pass). The A-cache's decode is held to the G-cache's pass: its ``G`` is steps 4-6 re-run on
the prompt's ``A`` (the numbers the prompt's ``G`` came from), checked as its rows being the
G-cache's rows bit for bit. A mismatch fails the shipped implementations (theirs are
deterministic) and ends a plugin's test as not applicable (a plugin may recompute ``G`` in
another order: a correct A-cache, but outside the bound). The check cannot tell a correct
A-cache from a decoder that ignores ``use_g_cache=False`` altogether.

Where it cannot speak: below float32 (no proved decoder bound: bfloat16 and float16
decoders are held to the stage statements by the cross-check and the stage property tests,
not here); float32 decoders have one layer (at two the proved bound does not exist:
``test_fp_decoder_step``); an example whose stage premises fail (a LayerNorm row whose
variance the bound cannot resolve) is rejected and another drawn.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pyverify.conformance.subject import not_applicable
from pyverify.fp.exps import LIB_ACCURACY, TRIG_ACCURACY
from pyverify.fp.formulas import EVAL_SLACK, fp_elementwise
from pyverify.kernels.model import from_reference as kernel_decoder
from pyverify.reference import LN_EPS, METRIC_EPS, ROPE_BASE, Decoder
from pyverify.reference import mp as rmp
from pyverify.testing.bounds import formula_excess
from pyverify.testing.decoder_bounds import pass_bound
from pyverify.testing.decoder_tightness import pinned_decoder
from pyverify.testing.fp import arith, mp_excess
from pyverify.testing.impls import ALL, FLOAT, Impl, impl_ids, params_as_used
from pyverify.testing.learner_bounds import composed_learner_bound
from pyverify.testing.stage_bounds import (
    eps_error,
    layernorm_bound,
    mp_context,
    or_reject,
    stage_arith,
)
from pyverify.testing.strategies import decoder_g, examples, proved_layers, small_decoder, tokens

# The spec's constants, by value (plga-spec.md): nothing below reads them from parameters.
SPEC_LN_EPS = 1e-6  # every LayerNorm (decoder and metric learner)
SPEC_METRIC_EPS = 1e-9  # A_LM = iSwiGLU(W A + b) + eps
SPEC_ROPE_BASE = 10000.0  # theta_p = base^(-2p/dk)

SHIPPED = ("reference", "kernels")


# --------------------------------------------------------------------------- helpers
@st.composite
def cases(draw, impl: Impl):
    """A small decoder (one layer at float32: see the module docstring) and tokens."""
    return draw(small_decoder(**proved_layers(impl))), draw(tokens(16, 2, 7))


def _metric(deds) -> list[np.ndarray]:
    """Per layer the ``(H, dk, dk)`` metric of a pass's deductive tensors."""
    return [np.stack([d.G for d in layer]) for layer in deds]


def check_logits(got, exact, bound, what: str) -> None:
    """``[fp_decoder_step]``: every computed logit within its bound of the exact one."""
    excess = mp_excess(got, exact, bound)
    assert excess <= 1, f"{what}: error {excess:.3g} x its proved bound"


# --------------------------------------------------------------------------- uncached
@pytest.mark.theorem("metric_positivity")
@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@examples(10)
@given(st.data())
def test_uncached_logits_and_deductive_tensors_conform(impl, data):
    """Uncached: the logits (the spec's pass with the decoder's own ``G``), every layer's
    and head's ``A`` (the spec's learner of that pass's queries), ``A_LM``, ``A_P``, ``G``
    (steps 4-6 of the decoder's own tensors), each within its proved bound of the exact
    value; ``A_LM > 0`` and ``A_P > 0``."""
    ref, toks = data.draw(cases(impl))
    with pinned_decoder(impl, ref):
        model = impl.decoder(ref)
        logits, deds = model.forward(toks), model.deductive(toks)
    queries: list = []
    exact, bound = or_reject(pass_bound, impl, ref, toks, _metric(deds), queries=queries)
    check_logits(logits, exact, bound, f"{impl} uncached logits")
    sa = stage_arith(impl)
    for li, (layer, (Q, dQ)) in enumerate(zip(deds, queries, strict=True)):
        heads = ref.params.layers[li].mha.heads
        dk = len(Q[0]) // len(heads)
        for h, d in enumerate(layer):
            assert np.all(d.A_LM > 0) and np.all(d.A_P > 0)
            cols = slice(h * dk, (h + 1) * dk)
            held = params_as_used(impl, heads[h])
            rows = [r[cols] for r in Q]
            A, bA = or_reject(composed_learner_bound, rows, held, sa, dq=dQ[:, cols])
            excess = mp_excess(d.A, A, bA)
            assert excess <= 1, f"{impl} A layer {li} head {h}: {excess:.3g} x its bound"
            steps = formula_excess(impl, d, held)
            assert max(steps.values()) <= 1, f"{impl} layer {li} head {h}: steps 4-6 {steps}"


# --------------------------------------------------------------------------- G-cached
@pytest.mark.theorem("collapse_absorption")
@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@examples(10)
@given(st.data())
def test_g_cached_and_collapsed_logits_conform(impl, data):
    """A supplied per-layer G (G-cache, and the collapsed SDPA-on-Q G* mode): the logits
    within the proved bound of the spec's pass with that G."""
    ref, toks = data.draw(cases(impl))
    G = [impl.hold(g) for g in data.draw(decoder_g(ref))]
    with pinned_decoder(impl, ref):
        model = impl.decoder(ref)
        got = {"g_cached": model.forward(toks, G=G), "collapsed": model.collapsed(toks, G)}
    exact, bound = or_reject(pass_bound, impl, ref, toks, G)
    for mode, logits in got.items():
        check_logits(logits, exact, bound, f"{impl} {mode} logits")


# --------------------------------------------------------------------------- decoding
@pytest.mark.theorem("cache_equivalence")
@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@examples(8)
@given(st.data())
def test_token_by_token_decoding_conforms(impl, data):
    """Prompt pass, then one token at a time with the KV-cache and the prompt's G (G-cache)
    or the prompt's A (A-cache, steps 4-6 recomputed): the spec's semantics is the whole
    sequence run with ``G`` frozen at the prompt's. The decoded rows within the proved
    bound of that pass (the prompt's ``G`` is held to the spec by the uncached test); the
    A-cache's rows are the G-cache's bit for bit (its ``G``: the same steps on the same
    ``A``)."""
    ref, toks = data.draw(cases(impl))
    n = data.draw(st.integers(1, len(toks) - 1))
    with pinned_decoder(impl, ref):
        model = impl.decoder(ref)
        G = _metric(model.deductive(toks[:n]))
        got = {
            use_g: model.decode(toks[:n], toks[n:], use_g_cache=use_g) for use_g in (True, False)
        }
    exact, bound = or_reject(pass_bound, impl, ref, toks, G)
    check_logits(got[True], exact[n:], bound[n:], f"{impl} G-cache decoding")
    if not np.array_equal(got[False], got[True]):
        why = ("its A-cache decode is not its G-cache decode bit for bit: the cache's G "
               "(steps 4-6 on the prompt's A) is not the prompt's, and no proved bound "
               "covers a pass with a recomputed G")  # fmt: skip
        if impl.name in SHIPPED:
            pytest.fail(f"{impl}: {why}")
        not_applicable(why)


# --------------------------------------------------------------------------- constants
def rope_unit_bound(impl: Impl, theta: float, exact: list) -> np.ndarray:
    """``[fp_elementwise]`` The computed entries ``cos(theta), sin(theta)`` of the unit row
    ``e_{2p}`` rotated at position 1 against their exact values ``exact`` (mpmath).

    The angle ``1 * base^(-2p/dk)``: a ``pow`` of exact arguments, so within
    ``LIB_ACCURACY theta`` (``fp_elementwise`` with ``d = 0``; the product by 1 exact);
    ``cos`` and ``sin`` (1-Lipschitz) of absolute accuracy ``TRIG_ACCURACY`` at it:
    ``fp_elementwise(1, d_theta, 0, |f|, TRIG_ACCURACY)``; the products by 1 and 0 and
    their difference are exact; then the rounding to the compute dtype and to the output
    dtype where they are narrower than float64 (the kernels' ``.to``):
    ``fp_elementwise(1, d, u, |f|, eta)`` each. Times ``EVAL_SLACK`` (its float64 evaluation).
    """
    ar = arith(impl)
    f = np.abs(np.array([float(t) for t in exact]))
    d_theta = fp_elementwise(1.0, 0.0, LIB_ACCURACY["float64"], theta)
    d = fp_elementwise(1.0, d_theta, 0.0, f, TRIG_ACCURACY)
    if ar.compute != "float64":
        d = fp_elementwise(1.0, d, ar.u_c, f, ar.eta_c)
    if ar.dtype != ar.compute:
        d = fp_elementwise(1.0, d, ar.u_io, f, ar.eta_io)
    return EVAL_SLACK * d


@pytest.mark.theorem("metric_positivity")
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
def test_spec_constants_pinned(impl):
    """metric eps = 1e-9, LayerNorm eps = 1e-6, RoPE base 10000: by value where the
    implementation exposes them, and by behaviour: iSwiGLU(0) = 0 makes A_LM = eps exactly
    (the floor of metric_positivity); a row ``+-t`` (``t = 2^-10``, variance ``t^2``, exact
    in every dtype) is normalised to ``+-t / sqrt(t^2 + 1e-6)`` (about 0.699; 1 without
    eps, 0.296 at eps = 1e-5), within the proved ``[fp_layernorm]`` bound; R_1 turns plane
    p by 10000^(-2p/dk), within :func:`rope_unit_bound`. Oracles: mpmath."""
    assert (METRIC_EPS, LN_EPS, ROPE_BASE) == (SPEC_METRIC_EPS, SPEC_LN_EPS, SPEC_ROPE_BASE)
    ref = Decoder.random(
        vocab=4,
        d_model=8,
        num_heads=2,
        num_layers=1,
        dff=4,
        a_dff=2,
        num_reslayer=1,
        num_dense=1,
        seed=0,
    )
    hp = ref.params.layers[0].mha.heads[0]
    assert (hp.metric_eps, hp.ln_eps, ref.params.ln_eps) == (1e-9, 1e-6, 1e-6)
    # behaviour: W = b = 0 gives Z = 0, iSwiGLU(0) = 0, A_LM = eps in every entry
    zero = dataclasses.replace(hp, W=np.zeros((4, 4)), b=np.zeros((4, 4)))
    q = np.arange(12.0).reshape(3, 4) / 7
    a_lm = impl.deductive(impl.round(q), zero).A_LM
    assert np.all(a_lm == impl.hold(SPEC_METRIC_EPS))
    # RoPE: position 1 rotates plane p by theta_p = 10000^(-2p/dk) (adjacent pairs)
    ctx = mp_context()
    eye = np.eye(8)
    for p_, th in ((0, ctx.mpf(1)), (3, ctx.power(SPEC_ROPE_BASE, ctx.mpf(-6) / 8))):
        got = impl.rope(np.stack([eye[2 * p_], eye[2 * p_]]), offset=0)[1]  # position 1
        want = [ctx.cos(th), ctx.sin(th)]
        bound = rope_unit_bound(impl, float(th), want)
        assert mp_excess(got[None, 2 * p_ : 2 * p_ + 2], [want], bound[None]) <= 1
    # LayerNorm eps: embeddings +-t / 4 at d_model = 16 (times sqrt(16) = 4: exact rows)
    p = Decoder.random(vocab=4, d_model=16, num_heads=2, num_layers=1, dff=4, a_dff=2,
                       num_reslayer=0, num_dense=1, seed=0).params  # fmt: skip
    t = 2.0**-10
    emb = np.tile([t / 4, -t / 4], (4, p.d_model // 2))
    ones, zeros = np.ones(p.d_model), np.zeros(p.d_model)
    flat = dataclasses.replace(p, embedding=emb, ln_gamma=ones, ln_beta=zeros)
    if impl.name == "reference":
        x = Decoder(flat).embed(np.array([0, 1]))
    elif impl.name != "kernels":
        not_applicable("the decoder's embedding LayerNorm is not part of the protocol")
    else:
        dec = kernel_decoder(Decoder(flat), impl.device, impl.tdtype)
        assert (dec.params.ln_eps, dec.params.rope_base) == (SPEC_LN_EPS, SPEC_ROPE_BASE)
        assert dec.params.layers[0].heads.metric_eps == SPEC_METRIC_EPS
        x = dec.embed(kern_tokens(impl, [0, 1]))[0].to("cpu").double().numpy()
    rows = emb[:2] * np.sqrt(p.d_model)
    want = rmp.layer_norm_rows(rows, ones, zeros, SPEC_LN_EPS, ctx)
    # [fp_layernorm] on the exact rows; the eps the implementation adds is SPEC_LN_EPS as
    # held in its compute dtype (its distance from SPEC_LN_EPS: eta_eps)
    eta_eps = eps_error(SPEC_LN_EPS, stage_arith(impl).ar.compute)
    xs = [[Fraction(float(v)) for v in r] for r in rows]
    bound = layernorm_bound(xs, np.zeros_like(rows), ones, zeros, SPEC_LN_EPS,
                            stage_arith(impl), ctx, eta_eps=eta_eps)  # fmt: skip
    assert mp_excess(x, want, bound) <= 1


def kern_tokens(impl: Impl, toks: list[int]) -> torch.Tensor:
    """A (1, S) token tensor on the implementation's device."""
    return torch.tensor([toks], device=impl.device)
