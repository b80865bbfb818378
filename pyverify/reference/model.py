"""A small PLGA decoder (float64 NumPy), as the reference model ``pldr_model_v510``.

Layout (post-LayerNorm decoder, ``plga-spec.md``)::

    x  = LayerNorm(Emb(tokens) * sqrt(d_model))
    per layer:
        h  = MHA(x)            # x @ Wq + bq etc., split into heads of size dk,
                               # RoPE on q and k, one PLGA head per head,
                               # concat, @ Wo + bo
        x1 = LayerNorm(h + x)
        x  = LayerNorm(SwiGLU_ffn(x1) + x1)
    logits = x @ W_out + b_out

Metric learner: in ``pldr_model_v510`` the row LayerNorm of ``D`` and the
residual SwiGLU units are SHARED by all heads of a layer (only ``W, b, P, a,
b_a`` are per head). Here every head holds a :class:`PLGAParams`; the shared
form is the one where all heads of a layer carry the same learner arrays
(:attr:`MHAParams.shared_learner`, the default of :meth:`MHAParams.random`), the
per-head form (``shared_learner=False``) is the generalisation. Each head
evaluates its own copy, so both forms compute the same function for equal
weights.

Row-vector convention (``x @ W``); the head split is ``x.reshape(S, H, dk)``
(head ``h`` owns columns ``h*dk .. (h+1)*dk - 1``), as ``view(.., H, dk)``.
Only the causal look-ahead mask is used, as in the reference's training and
generation.

Decoding with caches
--------------------
:meth:`Decoder.forward` on a prompt returns a :class:`KVGCache`;
:meth:`Decoder.decode_step` appends one token. Per layer the cache holds the
rotated keys and the values of every past position (KV-cache) and, per head,
either

* the G-cache (``KVGCache.G``, one ``(H, dk, dk)`` array per layer): steps 1-6
  are skipped and the stored ``G`` is used at every step; or, without it,
* the metric-learner output ``A`` of the prompt pass (``LayerCache.A``), from
  which ``A_LM``, ``A_P`` and ``G`` are recomputed at every step. This is what
  the reference model does: its ``kvcache = [k, v, A]`` stores ``A`` and never
  recomputes the Gram ``Q^T Q`` as tokens are appended.

Constant-G model (every head uses a fixed G, e.g. a G-cache or a loaded
``G_LM``): KV+G-cached decoding reproduces the full recomputation
(``forward`` on the whole sequence with the same G) row for row, up to
float64 rounding (checked to ~1e-12 in the tests): scores, attention rows and
outputs of a causal layer with fixed G depend only on the current and
earlier rows, and this holds layer by layer through the stack.

Recomputed-G model (G computed from the Gram of the call's queries): it is
NOT prefix-consistent. Recomputing on ``tokens[:n+1]`` uses the Gram
``D_{n+1} = D_n + q_n^T q_n``, which grows with the sequence, so ``G`` (and
with it every earlier row's scores and outputs, and in a stack every later
layer's keys and values) changes with each appended token. KV-cached decoding
therefore differs from full recomputation: the reference model keeps ``A``
(hence ``G``) from the prompt pass, so its decoding equals the full
recomputation of the longer sequence *with G frozen at the prompt's G*
(``forward(all_tokens, G_cache=prompt_G)``), not ``forward(all_tokens)``.
Both facts are tested.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pyverify.errors import InputTypeError, InputValueError
from pyverify.reference.deductive import Deductive
from pyverify.reference.model_params import DecoderLayerParams, DecoderParams, MHAParams
from pyverify.reference.numpy_head import layer_norm_rows, plga_forward, swiglu
from pyverify.reference.rope import apply_rope
from pyverify.reference.validation import as_float_array

__all__ = [
    "Decoder",
    "DecoderLayerParams",
    "DecoderOutput",
    "DecoderParams",
    "KVGCache",
    "LayerCache",
    "MHAOutput",
    "MHAParams",
    "decoder_layer_forward",
    "g_cache_from",
    "mha_forward",
]

Array = NDArray[np.float64]


# --------------------------------------------------------------------------- caches
@dataclass
class LayerCache:
    """KV-cache of one layer.

    Attributes
    ----------
    k : numpy.ndarray
        Rotated keys of all past positions, ``(H, S, dk)``.
    v : numpy.ndarray
        Values, ``(H, S, dk)``.
    A : numpy.ndarray or None
        Metric-learner output of the prompt pass per head, ``(H, dk, dk)``;
        ``None`` when the layer ran G-cached.
    """

    k: Array
    v: Array
    A: Array | None

    @property
    def length(self) -> int:
        """Number of cached positions."""
        return int(self.k.shape[1])


@dataclass
class KVGCache:
    """KV-cache (and optional G-cache) of a whole decoder.

    Attributes
    ----------
    layers : list of LayerCache
        One per decoder layer.
    G : list of numpy.ndarray or None
        The G-cache: per layer an ``(H, dk, dk)`` array; ``None`` means decode
        the reference way (recompute ``G`` from the stored ``A``).
    """

    layers: list[LayerCache]
    G: list[Array] | None = field(default=None)

    @property
    def length(self) -> int:
        """Number of cached positions."""
        return self.layers[0].length if self.layers else 0


class MHAOutput(NamedTuple):
    """Result of :func:`mha_forward`.

    Attributes
    ----------
    out : numpy.ndarray
        ``(S_new, d_model)`` after the output projection.
    deductive : list of Deductive
        One per head.
    cache : LayerCache
        Keys/values of all positions so far (and ``A``).
    """

    out: Array
    deductive: list[Deductive]
    cache: LayerCache


class DecoderOutput(NamedTuple):
    """Result of :meth:`Decoder.forward` and :meth:`Decoder.decode_step`.

    Attributes
    ----------
    logits : numpy.ndarray
        ``(S_new, vocab)``.
    hidden : numpy.ndarray
        Final hidden states ``(S_new, d_model)``.
    deductive : list of list of Deductive
        ``deductive[layer][head]``.
    cache : KVGCache
        Cache covering all positions so far.
    """

    logits: Array
    hidden: Array
    deductive: list[list[Deductive]]
    cache: KVGCache


def _as_g_layers(G_cache: ArrayLike | list[ArrayLike] | None, n_layers: int, H: int, dk: int):
    if G_cache is None:
        return None
    if isinstance(G_cache, np.ndarray) and G_cache.ndim == 4:
        G_cache = list(G_cache)
    if not isinstance(G_cache, list | tuple) or len(G_cache) != n_layers:
        raise InputValueError(
            f"G_cache must be a list of {n_layers} arrays of shape ({H}, {dk}, {dk}) "
            f"or one array ({n_layers}, {H}, {dk}, {dk})"
        )
    return [as_float_array(g, f"G_cache[{i}]", shape=(H, dk, dk)) for i, g in enumerate(G_cache)]


def g_cache_from(output: DecoderOutput | list[list[Deductive]]) -> list[Array]:
    """Collect the per-layer G-cache ``(H, dk, dk)`` from a forward pass.

    Parameters
    ----------
    output : DecoderOutput or list of list of Deductive
        A forward pass (its ``deductive[layer][head].G``).

    Returns
    -------
    list of numpy.ndarray
        One ``(H, dk, dk)`` array per layer.
    """
    deds = output.deductive if isinstance(output, DecoderOutput) else output
    return [np.stack([d.G for d in layer]) for layer in deds]


# --------------------------------------------------------------------------- forward
def mha_forward(
    x: ArrayLike,
    params: MHAParams,
    *,
    G: ArrayLike | None = None,
    past: LayerCache | None = None,
) -> MHAOutput:
    """Multi-head PLGA attention on new rows ``x`` (causal).

    Parameters
    ----------
    x : array_like, shape (S_new, d_model)
        Layer input (new positions only when ``past`` is given).
    params : MHAParams
        Parameters.
    G : array_like, shape (H, dk, dk), optional
        Per-head G-cache: skip steps 1-6 in every head.
    past : LayerCache, optional
        KV-cache of earlier positions. New rows are rotated at positions
        ``past.length ..``; keys/values are appended; without ``G`` each head
        reuses ``past.A`` (the reference model's decoding).

    Returns
    -------
    MHAOutput
        Output, per-head deductive tensors, updated cache.
    """
    if not isinstance(params, MHAParams):
        raise InputTypeError(f"params must be an MHAParams; got {type(params).__name__}")
    H, dk, d = params.num_heads, params.dk, params.d_model
    x = as_float_array(x, "x", shape=("S", d))
    S = x.shape[0]
    Gv = as_float_array(G, "G", shape=(H, dk, dk)) if G is not None else None
    offset = 0 if past is None else past.length
    # (S, d) -> (S, H, dk) -> (H, S, dk)
    q = (x @ params.Wq + params.bq).reshape(S, H, dk).transpose(1, 0, 2)
    k = (x @ params.Wk + params.bk).reshape(S, H, dk).transpose(1, 0, 2)
    v = (x @ params.Wv + params.bv).reshape(S, H, dk).transpose(1, 0, 2)
    q = apply_rope(q, offset=offset, base=params.rope_base)
    k = apply_rope(k, offset=offset, base=params.rope_base)
    if past is not None:
        k = np.concatenate([past.k, k], axis=1)
        v = np.concatenate([past.v, v], axis=1)
    if past is not None and Gv is None and past.A is None:
        raise InputValueError("past has no stored A (it was G-cached): pass G as well")
    outs, deds = [], []
    for h in range(H):
        if Gv is not None:
            o, ded = plga_forward(q[h], k[h], v[h], params.heads[h], causal=True, G=Gv[h])
        elif past is not None:
            o, ded = plga_forward(q[h], k[h], v[h], params.heads[h], causal=True, A=past.A[h])
        else:
            o, ded = plga_forward(q[h], k[h], v[h], params.heads[h], causal=True)
        outs.append(o)
        deds.append(ded)
    concat = np.stack(outs, axis=1).reshape(S, d)
    out = concat @ params.Wo + params.bo
    if Gv is not None:
        A = None
    elif past is not None:
        A = past.A
    else:
        A = np.stack([dd.A for dd in deds])
    return MHAOutput(out=out, deductive=deds, cache=LayerCache(k=k, v=v, A=A))


def decoder_layer_forward(
    x: ArrayLike,
    params: DecoderLayerParams,
    *,
    G: ArrayLike | None = None,
    past: LayerCache | None = None,
) -> tuple[Array, list[Deductive], LayerCache]:
    """One decoder layer: ``x1 = LN(MHA(x) + x)``, ``LN(SwiGLU(x1) + x1)``.

    Parameters
    ----------
    x : array_like, shape (S_new, d_model)
        Layer input.
    params : DecoderLayerParams
        Parameters.
    G : array_like, shape (H, dk, dk), optional
        Per-head G-cache.
    past : LayerCache, optional
        KV-cache of earlier positions.

    Returns
    -------
    tuple
        ``(output (S_new, d_model), deductive per head, updated LayerCache)``.
    """
    x = np.asarray(x, dtype=np.float64)
    h, deds, cache = mha_forward(x, params.mha, G=G, past=past)
    x1 = layer_norm_rows(h + x, params.ln1_gamma, params.ln1_beta, params.ln_eps)
    f = swiglu(x1, params.ffn)
    return layer_norm_rows(f + x1, params.ln2_gamma, params.ln2_beta, params.ln_eps), deds, cache


class Decoder:
    """A PLGA decoder stack with KV- and G-cached decoding.

    Parameters
    ----------
    params : DecoderParams
        The model's parameters (validated here).
    """

    def __init__(self, params: DecoderParams) -> None:
        if not isinstance(params, DecoderParams):
            raise InputTypeError(f"params must be a DecoderParams; got {type(params).__name__}")
        as_float_array(params.embedding, "params.embedding", ndim=2)
        d = params.d_model
        for i, layer in enumerate(params.layers):
            if layer.mha.d_model != d:
                raise InputValueError(
                    f"params.layers[{i}].mha has d_model {layer.mha.d_model} != {d}"
                )
            layer.mha.validate()
        as_float_array(params.W_out, "params.W_out", shape=(d, params.vocab))
        self.params = params

    @classmethod
    def random(cls, **kwargs: int | bool | None) -> Decoder:
        """Build a decoder with :meth:`DecoderParams.random` (same keyword arguments).

        Parameters
        ----------
        **kwargs
            Passed to :meth:`DecoderParams.random`.

        Returns
        -------
        Decoder
            The model.
        """
        return cls(DecoderParams.random(**kwargs))  # type: ignore[arg-type]

    @property
    def num_layers(self) -> int:
        """Number of decoder layers."""
        return len(self.params.layers)

    def embed(self, tokens: ArrayLike | None = None, embeddings: ArrayLike | None = None) -> Array:
        """``LayerNorm(Emb(tokens) * sqrt(d_model))``.

        Parameters
        ----------
        tokens : array_like of int, shape (S,), optional
            Token ids in ``[0, vocab)``.
        embeddings : array_like, shape (S, d_model), optional
            Used instead of ``Emb(tokens)`` (then scaled and normalised alike).

        Returns
        -------
        numpy.ndarray, shape (S, d_model)
            The first layer's input.

        Raises
        ------
        TypeError, ValueError
            On bad tokens (dtype, shape, range) or embeddings, or if not
            exactly one of the two is given.
        """
        p = self.params
        if (tokens is None) == (embeddings is None):
            raise InputValueError("give exactly one of tokens and embeddings")
        if tokens is not None:
            t = np.asarray(tokens)
            if t.dtype.kind not in "iu":
                raise InputTypeError(f"tokens must be an integer array; got dtype {t.dtype}")
            if t.ndim != 1 or t.shape[0] == 0:
                raise InputValueError(f"tokens must have shape (S,) with S >= 1; got {t.shape}")
            if np.any(t < 0) or np.any(t >= p.vocab):
                raise InputValueError(
                    f"tokens must lie in [0, {p.vocab}); got {t.min()}..{t.max()}"
                )
            e = p.embedding[t]
        else:
            e = as_float_array(embeddings, "embeddings", shape=("S", p.d_model))
            if e.shape[0] == 0:
                raise InputValueError("embeddings must have at least one row")
        return layer_norm_rows(e * np.sqrt(p.d_model), p.ln_gamma, p.ln_beta, p.ln_eps)

    def _run(self, x: Array, G_layers: list[Array] | None, past: KVGCache | None) -> DecoderOutput:
        p = self.params
        deds, caches = [], []
        for i, layer in enumerate(p.layers):
            g = None if G_layers is None else G_layers[i]
            lp = None if past is None else past.layers[i]
            x, d, c = decoder_layer_forward(x, layer, G=g, past=lp)
            deds.append(d)
            caches.append(c)
        logits = x @ p.W_out + p.b_out
        return DecoderOutput(logits, x, deds, KVGCache(layers=caches, G=G_layers))

    def forward(
        self,
        tokens: ArrayLike | None = None,
        *,
        embeddings: ArrayLike | None = None,
        G_cache: ArrayLike | list[ArrayLike] | None = None,
    ) -> DecoderOutput:
        """Run the whole (causal) decoder on a sequence.

        Parameters
        ----------
        tokens : array_like of int, shape (S,), optional
            Token ids.
        embeddings : array_like, shape (S, d_model), optional
            Instead of tokens (see :meth:`embed`).
        G_cache : list of arrays (H, dk, dk) or array (layers, H, dk, dk), optional
            Fixed per-head operators (a constant-G model, e.g. a loaded ``G_LM``).

        Returns
        -------
        DecoderOutput
            Logits, hidden states, deductive tensors and a cache for
            :meth:`decode_step` (holding ``G_cache`` if given).
        """
        x = self.embed(tokens, embeddings)
        mha0 = self.params.layers[0].mha if self.params.layers else None
        G_layers = _as_g_layers(G_cache, self.num_layers, mha0.num_heads, mha0.dk) if mha0 else None
        return self._run(x, G_layers, None)

    def decode_step(
        self,
        token: int | None,
        cache: KVGCache,
        *,
        embedding: ArrayLike | None = None,
    ) -> DecoderOutput:
        """Append one token using the KV-cache (and the G-cache, if the cache has one).

        Parameters
        ----------
        token : int or None
            The new token id (or ``None`` with ``embedding``).
        cache : KVGCache
            Cache from :meth:`forward` or a previous step.
        embedding : array_like, shape (d_model,), optional
            Instead of ``token``.

        Returns
        -------
        DecoderOutput
            Logits ``(1, vocab)`` for the new position, and the extended cache
            (the input cache is not modified).
        """
        if not isinstance(cache, KVGCache):
            raise InputTypeError(f"cache must be a KVGCache; got {type(cache).__name__}")
        if len(cache.layers) != self.num_layers:
            raise InputValueError(
                f"cache must have {self.num_layers} layers; got {len(cache.layers)}"
            )
        if token is not None:
            x = self.embed(tokens=np.array([token]))
        else:
            if embedding is None:
                raise InputValueError("give token or embedding")
            x = self.embed(embeddings=np.asarray(embedding)[None, :])
        return self._run(x, cache.G, cache)
