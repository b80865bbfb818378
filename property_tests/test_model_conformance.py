"""Model-level conformance: both decoders against each other and against the spec composition.

Every other model-level property compares a decoder with itself in another mode, so a
structural bug (a residual or a rotation dropped) would sit on both sides. Here:

* :func:`spec_decoder` is ``plga-spec.md`` "The reference model around the head", written
  out from the head API alone (``plga_forward``, one call per head) and NumPy: embedding
  times ``sqrt(d_model)`` then LayerNorm, projections with bias, RoPE (base 10000, adjacent
  planes, written here) on q and k, one PLGA head per head, concat and output projection,
  residual + post-LayerNorm, SwiGLU FFN, residual + post-LayerNorm, readout. Its constants
  (LayerNorm eps, RoPE base, and the heads' eps handed to ``plga_forward``) are the spec's,
  pinned here by value, never read from the parameters.
* each decoder (reference ``Decoder``, kernels ``PLGADecoder`` in every dtype) is held to
  the spec oracle, and the kernels also to the reference decoder directly: logits and every
  deductive tensor, uncached, G-cached, and token-by-token decoding with the G-cache and
  with the A-cache (the reference model's KV-cache semantics: steps 4-6 recomputed from the
  prompt's A).

Tolerances (:func:`tolerances`): stochastic arithmetic (CESTAC, Vignes 1993). A first-order
worst-case bound composed through the Gram matrix, the row LayerNorms of the metric learner
and a second layer is vacuous here (it was measured at 10^4-10^10 times the actual error:
each LayerNorm multiplies a worst-case bound by 1 / sigma of its row), so the error is
estimated on the computation itself: the oracle is re-run with every stage's result and
every parameter perturbed at random by the size of one rounding (the stage's unit round-off
``u``; a parameter by the backward error of the product it enters, ``sqrt(n) u``), which
moves each output by its actual conditioning times ``u``. The tolerance is ``K = 16`` times
the largest move seen in ``N = 3`` runs (CESTAC's 3 samples estimate the error's magnitude;
the factor covers a worst case a few times the sample spread and roundings the
perturbation does not model), and never below ``K u max|T|``. The target of a
low-precision decoder is the spec at the parameters as that decoder holds them (decoder
weights rounded to its dtype, head parameters to float32), so the tolerance measures
arithmetic, not the rounding of weights.
"""

from __future__ import annotations

import dataclasses
import functools
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
from pyverify.reference import LN_EPS, METRIC_EPS, ROPE_BASE, Decoder, PLGAParams, plga_forward
from pyverify.reference import mp as rmp
from pyverify.reference.params import SWIGLU_FIELDS
from pyverify.testing.fp import arith, mp_excess
from pyverify.testing.impls import (
    ALL,
    REFERENCE,
    UNIT_ROUNDOFF,
    Impl,
    impl_ids,
    map_head_arrays,
    params_as_used,
)
from pyverify.testing.stage_bounds import eps_error, layernorm_bound, mp_context, stage_arith
from pyverify.testing.strategies import decoder_g, examples, small_decoder, tokens

# The spec's constants, by value (plga-spec.md): nothing below reads them from parameters.
SPEC_LN_EPS = 1e-6  # every LayerNorm (decoder and metric learner)
SPEC_METRIC_EPS = 1e-9  # A_LM = iSwiGLU(W A + b) + eps
SPEC_ROPE_BASE = 10000.0  # theta_p = base^(-2p/dk)

K_SAFETY = 16  # tolerance = K times the largest stochastic move (module docstring)
N_RUNS = 3


# --------------------------------------------------------------------------- the oracle
def _head_params(mha, h: int) -> PLGAParams:
    """Head ``h``'s PLGA parameters (the one place that knows the decoder's layout), with
    the spec's epsilons (a decoder holding other values would then disagree)."""
    return dataclasses.replace(mha.heads[h], ln_eps=SPEC_LN_EPS, metric_eps=SPEC_METRIC_EPS)


def _ln(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    xc = x - x.mean(axis=-1, keepdims=True)
    return xc / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + SPEC_LN_EPS) * g + b


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def _rope(x: np.ndarray, offset: int = 0) -> np.ndarray:
    """Row at position n times ``R_n^T``; plane p = coordinates (2p, 2p+1)."""
    S, dk = x.shape
    theta = SPEC_ROPE_BASE ** (-2.0 * np.arange(dk // 2) / dk)
    ang = (offset + np.arange(S))[:, None] * theta[None, :]
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 0::2] * s + x[:, 1::2] * c
    return out


def _same(x):
    return x


def spec_decoder(p, toks, *, G=None, A=None, jitter=_same) -> tuple[np.ndarray, list]:
    """The spec's post-LayerNorm decoder on ``toks`` (causal), from the head API alone.

    ``G`` / ``A``: per layer ``(H, dk, dk)`` operators / metric-learner outputs used
    instead of computing them (the G-cache / the A-cache). ``jitter`` is applied to every
    stage's result (identity, or a random rounding: :class:`Jitter`). Returns the logits
    and, per layer, the heads' :class:`~pyverify.reference.Deductive` tensors.
    """
    J = jitter
    d = p.embedding.shape[1]
    x = J(_ln(J(p.embedding[np.asarray(toks)] * np.sqrt(d)), p.ln_gamma, p.ln_beta))
    deds = []
    for li, layer in enumerate(p.layers):
        m = layer.mha
        H = len(m.heads)
        dk = d // H
        q_all, k_all, v_all = J(x @ m.Wq + m.bq), J(x @ m.Wk + m.bk), J(x @ m.Wv + m.bv)
        outs, layer_deds = [], []
        for h in range(H):
            cols = slice(h * dk, (h + 1) * dk)
            q, k, v = J(_rope(q_all[:, cols])), J(_rope(k_all[:, cols])), v_all[:, cols]
            kw = {}
            if G is not None:
                kw["G"] = J(G[li][h])
            elif A is not None:
                kw["A"] = J(A[li][h])
            out, ded = plga_forward(q, k, v, _head_params(m, h), causal=True, **kw)
            outs.append(J(out))
            layer_deds.append(ded)
        x1 = J(
            _ln(
                J(J(np.concatenate(outs, axis=1) @ m.Wo + m.bo) + x),
                layer.ln1_gamma,
                layer.ln1_beta,
            )
        )
        f = layer.ffn
        gate = J(_silu(J(x1 @ f.W1 + f.b1))) * J(x1 @ f.W2 + f.b2)
        x = J(_ln(J(J(J(gate) @ f.W3 + f.b3) + x1), layer.ln2_gamma, layer.ln2_beta))
        deds.append(layer_deds)
    return J(x @ p.W_out + p.b_out), deds


def _stack(deds, name: str) -> list[np.ndarray]:
    """Per-layer ``(H, dk, dk)`` stacks of one deductive tensor."""
    return [np.stack([getattr(d, name) for d in layer]) for layer in deds]


# --------------------------------------------------------------------------- parameters
_DEC = ("embedding", "ln_gamma", "ln_beta", "W_out", "b_out")
_MHA = ("Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo")
_LAYER = ("ln1_gamma", "ln1_beta", "ln2_gamma", "ln2_beta")


def map_params(ref: Decoder, dec, head) -> Decoder:
    """``ref`` with ``dec`` applied to every decoder array and ``head`` to every head."""
    p = ref.params

    def on(obj, names, f):
        return dataclasses.replace(obj, **{n: f(getattr(obj, n)) for n in names})

    layers = [
        dataclasses.replace(
            on(layer, _LAYER, dec),
            mha=dataclasses.replace(
                on(layer.mha, _MHA, dec), heads=[head(hp) for hp in layer.mha.heads]
            ),
            ffn=on(layer.ffn, SWIGLU_FIELDS, dec),
        )
        for layer in p.layers
    ]
    return Decoder(dataclasses.replace(on(p, _DEC, dec), layers=layers))


def as_held(impl: Impl, ref: Decoder) -> Decoder:
    """The decoder with the parameters the implementation holds: the kernels round the
    decoder's weights to their dtype and keep head parameters in the compute dtype
    (float32 below float64, ``params_as_used``); float64 holds everything as given."""
    return map_params(ref, impl.round, lambda hp: params_as_used(impl, hp))


def round_compute(impl: Impl, G: list[np.ndarray]) -> list[np.ndarray]:
    """Operators rounded to the compute dtype (what a G-cache holds)."""
    return [impl.hold(g) for g in G]


# --------------------------------------------------------------------------- tolerances
class Jitter:
    """A random rounding of relative size ``u``: one ulp up or down in float64 (where
    ``u`` is float64's), else a factor ``1 + u r`` with ``r`` uniform in [-1, 1]."""

    def __init__(self, rng: np.random.Generator, u: float) -> None:
        self.rng, self.u = rng, u

    def __call__(self, x):
        x = np.asarray(x, dtype=np.float64)
        if self.u <= UNIT_ROUNDOFF["float64"]:
            up = self.rng.random(x.shape) < 0.5
            return np.where(up, np.nextafter(x, np.inf), np.nextafter(x, -np.inf))
        return x * (1.0 + self.u * self.rng.uniform(-1.0, 1.0, x.shape))


def stage_u(impl: Impl) -> float:
    """Round-off of one stage's result: the storage dtype below float32 (every stage's
    result is stored in it), else the compute dtype."""
    return impl.u_io if impl.dtype in ("bfloat16", "float16") else impl.u_compute


def tolerances(impl: Impl, held: Decoder, run, seed: int) -> dict:
    """Per named output of ``run(decoder, jitter)`` (a dict of arrays): ``K`` times the
    largest move over ``N_RUNS`` stochastically rounded runs, at least ``K u max|T|``."""
    base = run(held, _same)
    p = held.params
    n_dec = max(p.d_model, p.layers[0].ffn.W1.shape[1])
    hp0 = p.layers[0].mha.heads[0]
    n_head = max(hp0.dk, *(b.W1.shape[1] for u in hp0.reslayers for b in u.dense), 1)
    u, uc = stage_u(impl), impl.u_compute
    move = {k: 0.0 for k in base}
    for i in range(N_RUNS):
        rng = np.random.default_rng([seed, i])
        jw = Jitter(rng, np.sqrt(n_dec) * uc)  # backward error of a length-n product
        jh = Jitter(rng, np.sqrt(n_head) * uc)

        head = functools.partial(map_head_arrays, fn=jh)
        out = run(map_params(held, jw, head), Jitter(rng, u))
        for k in base:
            move[k] = max(move[k], float(np.max(np.abs(out[k] - base[k]))))
    return base, {k: K_SAFETY * max(move[k], u * float(np.max(np.abs(base[k])))) for k in base}


def check_close(got, want, tol: float, what: str) -> None:
    """``max |got - want| <= tol``, with the worst entry in the message."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    err = np.abs(got - want)
    i = np.unravel_index(np.argmax(err), err.shape)
    assert err[i] <= tol, f"{what}: |{got[i]!r} - {want[i]!r}| = {err[i]:.3g} > tol {tol:.3g}"


def toks_seed(toks) -> int:
    return int(np.sum(np.asarray(toks) * (np.arange(len(toks)) + 7))) % 2**31


@st.composite
def cases(draw):
    return draw(small_decoder()), draw(tokens(16, 2, 7))


NAMES = ("A", "A_LM", "A_P", "G")


# --------------------------------------------------------------------------- uncached
@pytest.mark.theorem("metric_positivity")
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(10)
@given(cases())
def test_uncached_logits_and_deductive_tensors_conform(impl, case):
    """Uncached: logits and A, A_LM, A_P, G of every layer and head against the spec
    oracle, and (kernels) against the reference decoder; A_LM > 0 and A_P > 0 in both."""
    ref, toks = case
    held = as_held(impl, ref)
    model = impl.decoder(held)

    def run(dec, J):
        logits, deds = spec_decoder(dec.params, toks, jitter=J)
        out = {"logits": logits}
        for li, layer in enumerate(deds):
            for h, d in enumerate(layer):
                out.update({(n, li, h): getattr(d, n) for n in NAMES})
        return out

    want, tol = tolerances(impl, held, run, toks_seed(toks))
    got_logits, got_deds = model.forward(toks), model.deductive(toks)
    got = {"logits": got_logits}
    for li, layer in enumerate(got_deds):
        for h, d in enumerate(layer):
            got.update({(n, li, h): getattr(d, n) for n in NAMES})
            assert np.all(d.A_LM > 0) and np.all(d.A_P > 0)
    for key in want:
        check_close(got[key], want[key], tol[key], f"{impl} {key} vs spec")
    if impl.name == "kernels":  # and directly against the reference decoder
        out = held.forward(np.asarray(toks))
        check_close(got_logits, out.logits, tol["logits"], f"{impl} logits vs reference")
        for li, layer in enumerate(out.deductive):
            for h, rd in enumerate(layer):
                for n in NAMES:
                    check_close(
                        got[(n, li, h)],
                        getattr(rd, n),
                        tol[(n, li, h)],
                        f"{impl} {n} layer {li} head {h} vs reference",
                    )


# --------------------------------------------------------------------------- G-cached
@pytest.mark.theorem("collapse_absorption")
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(10)
@given(cases(), st.data())
def test_g_cached_and_collapsed_logits_conform(impl, case, data):
    """A supplied per-layer G (G-cache, and the collapsed SDPA-on-Q G* mode): logits against
    the spec oracle run with that G, and (kernels) against the reference decoder."""
    ref, toks = case
    held = as_held(impl, ref)
    G = round_compute(impl, data.draw(decoder_g(ref)))
    model = impl.decoder(held)

    def run(dec, J):
        return {"logits": spec_decoder(dec.params, toks, G=G, jitter=J)[0]}

    want, tol = tolerances(impl, held, run, toks_seed(toks))
    for mode, got in (
        ("g_cached", model.forward(toks, G=G)),
        ("collapsed", model.collapsed(toks, G)),
    ):
        check_close(got, want["logits"], tol["logits"], f"{impl} {mode} logits vs spec")
        if impl.name == "kernels":
            ref_logits = held.forward(np.asarray(toks), G_cache=G).logits
            check_close(got, ref_logits, tol["logits"], f"{impl} {mode} logits vs reference")


# --------------------------------------------------------------------------- decoding
@pytest.mark.theorem("cache_equivalence")
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(8)
@given(cases(), st.data())
def test_token_by_token_decoding_conforms(impl, case, data):
    """Prompt pass, then one token at a time with the KV-cache and the prompt's G (G-cache)
    or the prompt's A (A-cache, steps 4-6 recomputed): the spec's semantics is the whole
    sequence run with G (resp. A) frozen at the prompt's; against the oracle and (kernels)
    the reference decoder's own decoding."""
    ref, toks = case
    n = data.draw(st.integers(1, len(toks) - 1))
    held = as_held(impl, ref)
    model = impl.decoder(held)

    def run(dec, J):
        _, deds = spec_decoder(dec.params, toks[:n], jitter=J)
        return {
            "G": spec_decoder(dec.params, toks, G=_stack(deds, "G"), jitter=J)[0][n:],
            "A": spec_decoder(dec.params, toks, A=_stack(deds, "A"), jitter=J)[0][n:],
        }

    want, tol = tolerances(impl, held, run, toks_seed(toks) + n)
    ref_model = None if impl.name == "reference" else REFERENCE.decoder(held)
    for key, use_g in (("G", True), ("A", False)):
        got = model.decode(toks[:n], toks[n:], use_g_cache=use_g)
        check_close(got, want[key], tol[key], f"{impl} {key}-cache decoding vs spec")
        if ref_model is not None:
            r = ref_model.decode(toks[:n], toks[n:], use_g_cache=use_g)
            check_close(got, r, tol[key], f"{impl} {key}-cache decoding vs reference")


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
