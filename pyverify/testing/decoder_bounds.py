"""The composed bound of a decoder pass (``[fp_decoder_step]``) for the property tests.

:func:`decoder_bound` evaluates ``Pldr.fp_decoder_step`` along the exact trajectory of a
pass (mpmath at :data:`~pyverify.testing.fp.MP_DPS` digits, the spec written out): the
embedding, per layer the attention residual, LayerNorm, feed-forward residual, LayerNorm,
then the logits; each stage's bound is the statement of :mod:`pyverify.testing.stage_bounds`
on the exact operands and the incoming bound. Two attention sublayers:

* zero keys (``W_k = 0``, ``b_k = 0``, :func:`zero_key_decoder`): every score is 0, the
  head is the causal mean of its values;
* keys and a supplied metric ``G`` per head (:func:`pass_bound`: the pass an
  implementation runs with ``G`` given, a cached decode's included, ``fp_cached_decode``):
  the projections (``fp_decoder_step_affine``), RoPE (the same, with the exact rotation as
  the map, :func:`~pyverify.testing.rope_bounds.rope_bound`), the scores from computed
  queries and keys (``[fp_head_scores]``,
  :func:`~pyverify.fp.models.scores_bound_perturbed`), the output (``[fp_head_output]``,
  :func:`~pyverify.fp.attention.head_output_bound`) plus the values' error through the
  exact weights, the output projection and the residual.

The exact function is that of the parameters *as the implementation holds them*
(:func:`held_decoder`: rounded to its dtype), with the real ``sqrt(d_model)``,
``1/sqrt(dk)``, ``eps`` and RoPE angles ``n base^(-2p/dk)``. What an implementation
computes differently is in the bounds: the held scale ``sqrt(d_model)``
(:func:`embedding_bound`), the ``eps`` it adds (``eta_eps`` of
:func:`~pyverify.testing.stage_bounds.layernorm_bound`) and its RoPE table, read out of its
own ``rope`` and certified entry by entry against mpmath
(:func:`~pyverify.testing.rope_bounds.rotations`). Premises beyond the stage statements':
the decoder's rotations are those of its ``rope`` (the kernels' decode step reads a table
of the same numbers, :class:`pyverify.kernels.rope.RopeTable`), and SDPA runs the backend
the bound models (the tests pin it).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from pyverify.fp import stages
from pyverify.fp.attention import attention_bound, head_output_bound, sdpa_backend
from pyverify.fp.formulas import EVAL_SLACK, fp_elementwise
from pyverify.fp.models import scores_bound_perturbed
from pyverify.precision import TORCH_DTYPES, UNIT_ROUNDOFF
from pyverify.reference import Decoder
from pyverify.reference import mp_stages as mps
from pyverify.reference.params import SWIGLU_FIELDS
from pyverify.reference.rope import ROPE_BASE
from pyverify.testing.rope_bounds import Rotations, rope_bound, rope_mp, rotations
from pyverify.testing.stage_bounds import (
    OutsideModel,
    StageArith,
    affine_local,
    affine_mp,
    eps_error,
    exact_gap,
    f64,
    layernorm_bound,
    mp_context,
    mpf_fraction,
    stage_arith,
    swiglu_bound,
)
from pyverify.testing.strategies import block_diagonal

__all__ = [
    "cached_decode_bound",
    "decoder_bound",
    "embedding_bound",
    "folded_query",
    "held_decoder",
    "pass_bound",
    "zero_key_decoder",
]

#: ``[fp_ieee_rounding]`` float64's unit round-off: an exact value rounded once to float64.
U64 = UNIT_ROUNDOFF["float64"]
#: ``[fp_layernorm]`` The zero-key decoders' LayerNorm ``eps``: a power of two, held
#: exactly in every dtype (no ``eta_eps``).
ZERO_KEY_EPS = 2.0**-20


# --------------------------------------------------------------------------- embedding
def embedding_bound(emb: np.ndarray, d_model: int, sa: StageArith) -> np.ndarray:
    """``[fp_elementwise]`` The computed ``Emb(tokens) sqrt(d_model)`` against the exact one.

    The map ``s -> e s`` (Lipschitz ``|e|``) at the held scale, which is within
    ``((1 + u)(1 + u64) - 1) sqrt(d_model)`` of ``sqrt(d_model)`` (correctly rounded in
    float64, then converted to the compute dtype), the product rounded at ``u``
    (underflowing by ``eta``). A product formed in float64 and rounded once more is within
    the same: ``(1 + u)(1 + u64)^2 <= (1 + u)^2 (1 + u64)``.
    """
    u, eta = float(sa.u), float(sa.eta)
    root = math.sqrt(d_model)
    ds = ((1 + u) * (1 + U64) - 1) * root * EVAL_SLACK
    ea = np.abs(np.asarray(emb, np.float64))
    return EVAL_SLACK * fp_elementwise(ea, ds, u, ea * root, eta)


# --------------------------------------------------------------------------- stages
def _add(X, Y) -> list[list[Any]]:
    return [[a + b for a, b in zip(r, s, strict=True)] for r, s in zip(X, Y, strict=True)]


def _causal_mean(V, ctx) -> list[list[Any]]:
    """Row ``i``: the mean of rows ``0..i`` (uniform causal attention)."""
    out, acc = [], [ctx.zero] * len(V[0])
    for i, row in enumerate(V):
        acc = [a + b for a, b in zip(acc, row, strict=True)]
        out.append([a / (i + 1) for a in acc])
    return out


def _last(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` remembering its last call: a stage's exact map, reused by its propagator."""
    memo: list[Any] = [None, None]

    def g(X: Any) -> Any:
        if memo[0] is not X:
            memo[:] = [X, fn(X)]
        return memo[1]

    return g


def _fracs(X) -> list[list[Fraction]]:
    return [[mpf_fraction(t) for t in row] for row in X]


def _ln_stage(gamma, beta, eps, sa, ctx):
    def f(X):
        return mps.layer_norm_rows(X, gamma, beta, eps, ctx)

    def beta_(X, d):
        return layernorm_bound(
            _fracs(X), d, gamma, beta, eps, sa, ctx, eta_eps=eps_error(eps, sa.ar.compute)
        )

    return f, beta_


def _affine_bound(X, d, W, b, sa, exact=None) -> np.ndarray:
    """``fp_decoder_step_affine``'s bound of the computed ``X W + b`` (``X`` exact, off by ``d``).

    ``exact = (W*, b*)`` (mpf rows): the exact map is ``X W* + b*`` while the kernel holds
    ``W``, ``b``: its distance to the map of its own input grows by ``|x^| dW + db``
    (``|W - W*| <= dW``, ``|b - b*| <= db``, exact, rounded up), and ``|W*| <= |W| + dW``.
    """
    ax = np.abs(f64(X)) + d
    local = affine_local(ax, W, b, sa)
    if exact is None:
        return EVAL_SLACK * stages.fp_decoder_step_affine(local, d, W)
    dW, db = exact_gap(W, exact[0]), exact_gap(np.asarray(b)[None, :], [exact[1]])[0]
    local = local + ax @ dW + db
    return EVAL_SLACK * stages.fp_decoder_step_affine(local, d, np.abs(W) + dW)


def _map(X, W, b, exact, ctx) -> list[list[Any]]:
    """The exact ``X W + b``, or ``X W* + b*`` for ``exact = (W*, b*)``."""
    if exact is None:
        return affine_mp(X, W, b, ctx)
    cols = [list(c) for c in zip(*exact[0], strict=True)]
    return [[ctx.fdot(r, c) + bj for c, bj in zip(cols, exact[1], strict=True)] for r in X]


def _attention_residual_stage(mha, sa, ctx):
    """``x + (causal mean of x W_v + b_v) W_o + b_o``: the attention sublayer with zero keys.

    Every score is ``q G 0 = 0`` exactly, so the exact weights are ``1 / (i + 1)`` and the
    head is the causal mean of its values: ``[fp_head_output]`` (:func:`attention_bound`
    on the computed values, ``|v^| <= |v| + dv``) plus the propagated ``P dv``
    (``fp_decoder_step_affine`` with the weights as the map), between the two projections'
    ``fp_decoder_step_affine``; then ``fp_decoder_step_residual``.
    """
    H = len(mha.heads)
    dk = mha.Wv.shape[1] // H

    @_last
    def exact(X):
        V = affine_mp(X, mha.Wv, mha.bv, ctx)
        heads = _causal_mean(V, ctx)
        return V, heads, _add(X, affine_mp(heads, mha.Wo, mha.bo, ctx))

    def f(X):
        return exact(X)[-1]

    def beta_(X, d):
        V, heads, out = exact(X)
        dV = _affine_bound(X, d, mha.Wv, mha.bv, sa)
        S = len(X)
        P = np.tril(np.ones((S, S))) / np.arange(1, S + 1)[:, None]
        vmag = np.abs(f64(V)) + dV
        mass = EVAL_SLACK * (P @ vmag)
        z = np.zeros((S, dk))
        parts = []
        for h in range(H):
            cols = slice(h * dk, (h + 1) * dk)
            parts.append(attention_bound(sa.ar, z, z, vmag[:, cols], causal=True, path=sa.path,
                                         mass=mass[:, cols]))  # fmt: skip
        B_att = np.concatenate(parts, axis=1)
        dA = EVAL_SLACK * stages.fp_decoder_step_affine(B_att.T, dV.T, P.T).T
        dH = _affine_bound(heads, dA, mha.Wo, mha.bo, sa)
        return EVAL_SLACK * stages.fp_decoder_step_residual(d, dH, np.abs(f64(out)), float(sa.u))

    return f, beta_


def _heads_mp(Q, K, V, G, dk, ctx):
    """Per head the exact causal scores, weights and outputs (outputs concatenated by row).

    Scores ``Q_h G_h K_h^T / sqrt(dk)``, 0 above the diagonal (masked).
    """
    tau = 1 / ctx.sqrt(dk)
    S = len(Q)
    scores, weights, outs = [], [], []
    for h, Gh in enumerate(G):
        cols = slice(h * dk, (h + 1) * dk)
        Gm = mps.to_mat(np.asarray(Gh, np.float64), "G", ctx=ctx)
        qg = [[ctx.fdot(r[cols], c) for c in zip(*Gm, strict=True)] for r in Q]
        E = [[tau * ctx.fdot(qg[i], K[j][cols]) for j in range(i + 1)] for i in range(S)]
        P = []
        for e in E:
            w = [ctx.exp(t - max(e)) for t in e]
            P.append([t / ctx.fsum(w) for t in w])
        scores.append([e + [ctx.zero] * (S - len(e)) for e in E])
        weights.append([p + [ctx.zero] * (S - len(p)) for p in P])
        outs.append([[ctx.fdot(p, [V[j][c] for j in range(len(p))]) for c in range(cols.start,
                      cols.stop)] for p in P])  # fmt: skip
    return scores, weights, [[t for o in outs for t in o[i]] for i in range(S)]


def _append(out: list) -> Callable[[Any, np.ndarray], None]:
    return lambda Q, dQ: out.append((Q, dQ))


def _keyed_attention_stage(mha, G, rot: Rotations, sa, ctx, q_exact=None, on_q=None):
    """``x + MHA(x) W_o + b_o`` with keys and the metric ``G`` (per head, as held).

    ``q``, ``k``, ``v``: ``fp_decoder_step_affine``; RoPE on ``q`` and ``k``:
    :func:`rope_bound`; per head the scores from the computed queries and keys
    (``[fp_head_scores]``), the output against the exact weights times the computed
    values (``[fp_head_output]``, the exact scores rounded to float64 once: within
    ``u64 |x|``) plus the values' error through the exact weights
    (``fp_decoder_step_affine``, the weights as the map); the output projection and
    ``fp_decoder_step_residual``. A head whose ``fp_head_output`` premises fail raises
    :class:`OutsideModel`.
    """
    H = len(mha.heads)
    dk = mha.Wq.shape[1] // H
    backend = sdpa_backend(sa.path, dk, dk)

    @_last
    def exact(X):
        Q0, K0 = _map(X, mha.Wq, mha.bq, q_exact, ctx), affine_mp(X, mha.Wk, mha.bk, ctx)
        Q, K, V = rope_mp(Q0, rot, dk), rope_mp(K0, rot, dk), affine_mp(X, mha.Wv, mha.bv, ctx)
        scores, weights, heads = _heads_mp(Q, K, V, G, dk, ctx)
        out = _add(X, affine_mp(heads, mha.Wo, mha.bo, ctx))
        return Q0, K0, Q, K, V, scores, weights, heads, out

    def f(X):
        return exact(X)[-1]

    def beta_(X, d):
        Q0, K0, Q, K, V, scores, weights, heads, out = exact(X)
        dQ0 = _affine_bound(X, d, mha.Wq, mha.bq, sa, q_exact)
        dQ = rope_bound(np.abs(f64(Q0)), dQ0, rot, dk, sa)
        if on_q is not None:
            on_q(Q, dQ)
        dK = rope_bound(np.abs(f64(K0)), _affine_bound(X, d, mha.Wk, mha.bk, sa), rot, dk, sa)
        dV = _affine_bound(X, d, mha.Wv, mha.bv, sa)
        q, k, v = f64(Q), f64(K), f64(V)
        S = len(X)
        allowed = np.tril(np.ones((S, S), dtype=bool))
        parts = []
        for h, Gh in enumerate(G):
            cols = slice(h * dk, (h + 1) * dk)
            qh, kh, x = q[:, cols], k[:, cols], f64(scores[h])
            delta = scores_bound_perturbed(sa.ar, qh, kh, Gh, dQ[:, cols], dK[:, cols], sa.path)
            try:
                B = head_output_bound(sa.ar, backend, x, U64 * np.abs(x), delta,
                                      np.abs(v[:, cols]) + dV[:, cols], allowed)  # fmt: skip
            except ValueError as exc:
                raise OutsideModel(str(exc)) from None
            P = EVAL_SLACK * np.abs(f64(weights[h]))
            parts.append(EVAL_SLACK * stages.fp_decoder_step_affine(B.T, dV[:, cols].T, P.T).T)
        dH = _affine_bound(heads, np.concatenate(parts, axis=1), mha.Wo, mha.bo, sa)
        return EVAL_SLACK * stages.fp_decoder_step_residual(d, dH, np.abs(f64(out)), float(sa.u))

    return f, beta_


def _ffn_residual_stage(ffn, sa, ctx):
    """``x + SwiGLU(x)``: ``[fp_swiglu]`` then ``fp_decoder_step_residual``."""

    @_last
    def f(X):
        return _add(X, mps.swiglu(X, ffn, ctx))

    def beta_(X, d):
        H1 = affine_mp(X, ffn.W1, ffn.b1, ctx)
        H2 = affine_mp(X, ffn.W2, ffn.b2, ctx)
        S1 = [[mps.silu(t, ctx) for t in row] for row in H1]
        dF = swiglu_bound(f64(H1), f64(H2), f64(S1), np.abs(f64(X)), d, ffn, sa)
        return EVAL_SLACK * stages.fp_decoder_step_residual(d, dF, np.abs(f64(f(X))), float(sa.u))

    return f, beta_


def _logits_stage(W, b, sa, ctx):
    def f(X):
        return affine_mp(X, W, b, ctx)

    def beta_(X, d):
        return _affine_bound(X, d, W, b, sa)

    return f, beta_


# --------------------------------------------------------------------------- the pass
def decoder_bound(
    params: Any, tokens: Sequence[int], sa: StageArith, G: Sequence[Any] | None = None,
    rot: Rotations | None = None, q_exact: Sequence[Any] | None = None,
    queries: list | None = None,
) -> tuple[list, np.ndarray]:  # fmt: skip
    """``[fp_decoder_step]`` The exact logits of a decoder pass and their composed bound.

    Without ``G`` the decoder's keys must be zero (``W_k = 0``, ``b_k = 0`` in every layer:
    the scores are exactly 0, attention is the causal mean of the values); with ``G``
    (per layer ``(H, dk, dk)``, as held) and the implementation's rotations ``rot``, the
    keyed sublayer. Parameters as the implementation holds them (:func:`held_decoder`). The
    chain (``FpStage.decoderStep``): the embedding (:func:`embedding_bound`) and its
    LayerNorm, per layer the attention residual, LayerNorm, feed-forward residual,
    LayerNorm, then the logits; :func:`pyverify.fp.stages.fp_decoder_step` composes the
    stages' bounds along the exact trajectory (mpmath). Rows are token positions; every
    stage but attention acts row by row, and attention is causal: row ``i``'s bound is
    that of any pass over a sequence that begins with ``tokens[: i + 1]``. ``q_exact``
    (per layer ``(W*, b*)``, mpf, or None): the exact pass's query projection, where the
    implementation holds another one (a folded ``W_q G``, :func:`folded_query`). ``queries``
    (keyed): a list to which each layer's exact rotated queries (all heads, mpf rows) and
    their bound are appended (the metric learner's input).

    Returns
    -------
    exact : list of list of mpf
        The exact logits ``(S, vocab)``.
    bound : numpy.ndarray
        Their entrywise bound.
    """
    ctx = mp_context()
    dm = params.d_model
    if G is None:
        for layer in params.layers:
            if np.any(layer.mha.Wk) or np.any(layer.mha.bk):
                raise ValueError("without G the decoder's keys must be zero (W_k = 0, b_k = 0)")
    elif rot is None or len(G) != len(params.layers):
        raise ValueError("a keyed pass needs one G per layer and the implementation's rotations")
    emb = np.asarray(params.embedding, np.float64)[np.asarray(tokens)]
    x0 = [[t * ctx.sqrt(dm) for t in row] for row in mps.to_mat(emb, "x", ctx=ctx)]
    chain: list[tuple[Callable[[Any], Any], Callable[[Any, Any], Any]]] = [
        _ln_stage(params.ln_gamma, params.ln_beta, params.ln_eps, sa, ctx)
    ]
    for li, layer in enumerate(params.layers):
        attention = (
            _attention_residual_stage(layer.mha, sa, ctx) if G is None
            else _keyed_attention_stage(layer.mha, G[li], rot, sa, ctx,
                                        None if q_exact is None else q_exact[li],
                                        None if queries is None else _append(queries))
        )  # fmt: skip
        chain += [
            attention,
            _ln_stage(layer.ln1_gamma, layer.ln1_beta, layer.ln_eps, sa, ctx),
            _ffn_residual_stage(layer.ffn, sa, ctx),
            _ln_stage(layer.ln2_gamma, layer.ln2_beta, layer.ln_eps, sa, ctx),
        ]
    chain.append(_logits_stage(params.W_out, params.b_out, sa, ctx))
    trajectory: list[Any] = []

    def recorded(f):
        def g(X):
            trajectory.append(f(X))
            return trajectory[-1]

        return g

    stages_ = [(recorded(f), b) for f, b in chain]
    bound = stages.fp_decoder_step(x0, embedding_bound(emb, dm, sa), stages_)
    return trajectory[-1], np.asarray(bound, np.float64)


def held_decoder(ref: Decoder, dtype: str, *, zero_keys: bool = False,
                 eps: float | None = None) -> Decoder:  # fmt: skip
    """``ref`` with the pass's parameters rounded to ``dtype``, as an implementation holds them.

    Optionally zero keys and one LayerNorm ``eps``. The learner's parameters are left as
    drawn (a pass with ``G`` supplied, or with zero keys, does not depend on them).
    """

    def rnd(a: Any) -> np.ndarray:
        t = torch.as_tensor(np.asarray(a, np.float64)).to(TORCH_DTYPES[dtype])
        return t.to(torch.float64).numpy()

    p = ref.params
    e = {} if eps is None else {"ln_eps": eps}
    layers = []
    for layer in p.layers:
        m = layer.mha
        Wk, bk = (np.zeros_like(m.Wk), np.zeros_like(m.bk)) if zero_keys else (rnd(m.Wk), rnd(m.bk))
        mha = dataclasses.replace(
            m, Wq=rnd(m.Wq), bq=rnd(m.bq), Wk=Wk, bk=bk, Wv=rnd(m.Wv), bv=rnd(m.bv),
            Wo=rnd(m.Wo), bo=rnd(m.bo),
        )  # fmt: skip
        ffn = dataclasses.replace(
            layer.ffn, **{f: rnd(getattr(layer.ffn, f)) for f in SWIGLU_FIELDS}
        )
        layers.append(dataclasses.replace(
            layer, mha=mha, ffn=ffn, ln1_gamma=rnd(layer.ln1_gamma), ln1_beta=rnd(layer.ln1_beta),
            ln2_gamma=rnd(layer.ln2_gamma), ln2_beta=rnd(layer.ln2_beta), **e,
        ))  # fmt: skip
    return Decoder(dataclasses.replace(
        p, embedding=rnd(p.embedding), ln_gamma=rnd(p.ln_gamma), ln_beta=rnd(p.ln_beta),
        layers=layers, W_out=rnd(p.W_out), b_out=rnd(p.b_out), **e,
    ))  # fmt: skip


def zero_key_decoder(ref: Decoder, dtype: str = "float32", eps: float = ZERO_KEY_EPS) -> Decoder:
    """``ref`` with zero keys, one LayerNorm ``eps`` and the pass's parameters in ``dtype``."""
    return held_decoder(ref, dtype, zero_keys=True, eps=eps)


def pass_bound(impl: Any, ref: Decoder, tokens: Sequence[int], G: Sequence[Any],
               q_exact: Sequence[Any] | None = None,
               queries: list | None = None) -> tuple[list, np.ndarray]:  # fmt: skip
    """``(exact logits, bound)`` of ``impl``'s pass of ``ref`` with ``G`` supplied.

    The exact pass is that of ``impl``'s parameters (``ref``'s rounded to its dtype) and
    ``G`` as it holds it; the bound covers its full pass, a prompt pass on a prefix (row by
    row) and a cached decode with that ``G`` (``fp_cached_decode``: a decoded row goes
    through the same stage kernels on the same exact trajectory, its attention one query
    against the cached rows). ``q_exact``: as in :func:`decoder_bound`. ``queries``: a list
    to which each layer's exact rotated queries (all heads) and their bound are appended
    (the metric learner's input, :func:`decoder_bound`). Raises :class:`OutsideModel`
    where a premise fails.
    """
    sa = stage_arith(impl)
    held = held_decoder(ref, sa.ar.dtype).params
    mha = held.layers[0].mha
    dk = mha.Wq.shape[1] // len(mha.heads)
    if any(layer.mha.rope_base != ROPE_BASE for layer in held.layers):
        raise ValueError(f"the rotations are read out of rope(): RoPE base {ROPE_BASE} only")
    rot = rotations(impl, len(tokens), dk, ROPE_BASE, mp_context())
    Gh = [np.asarray(impl.hold(np.asarray(g, np.float64)), np.float64) for g in G]
    return decoder_bound(held, tokens, sa, Gh, rot, q_exact, queries)


def cached_decode_bound(impl: Any, ref: Decoder, tokens: Sequence[int], G: Sequence[Any]):
    """``[fp_cached_decode]`` ``B_c + B_u`` per row: two computations of ``impl``'s pass.

    A cached decode with ``G`` against the pass with ``G`` supplied (``fp_cached_decode``),
    or against a recomputing pass whose metric is ``G`` on every prefix
    (``fp_cached_decode_invariant``), or two passes: each row within its
    :func:`pass_bound` of the same exact row. SDPA pinned by the caller.
    """
    bound = pass_bound(impl, ref, tokens, G)[1]
    return stages.fp_cached_decode(bound, bound)


def folded_query(impl: Any, ref: Decoder, G: Sequence[Any]) -> list[tuple[list, list]]:
    """Per layer ``(W_q G, b_q G)`` exactly (mpf), ``W_q``, ``b_q``, ``G`` as ``impl`` holds them.

    ``G`` per head, block diagonal: the query projection of the exact pass of a decoder
    whose metric was folded into it (``collapse_absorption``).
    """
    ctx = mp_context()
    held = held_decoder(ref, stage_arith(impl).ar.dtype).params
    out = []
    for layer, Gl in zip(held.layers, G, strict=True):
        block = block_diagonal(np.asarray(impl.hold(np.asarray(Gl, np.float64)), np.float64))
        W = _map(mps.to_mat(layer.mha.Wq, "W", ctx=ctx), block, np.zeros(len(block)), None, ctx)
        b = _map([[ctx.mpf(float(t)) for t in layer.mha.bq]], block, np.zeros(len(block)), None,
                 ctx)  # fmt: skip
        out.append((W, b[0]))
    return out
