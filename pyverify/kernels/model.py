"""Multi-head PLGA layer and post-LayerNorm decoder stack, with KV- and G-cache.

Layout (``docs/plga-spec.md``, "The reference model around the head"):

* ``x = LayerNorm(Emb(tokens) * sqrt(d_model))``;
* each layer: ``q, k, v = x W_q + b_q, x W_k + b_k, x W_v + b_v`` split into H heads
  of size dk, RoPE on q and k (adjacent planes, base 10000), one PLGA head per
  head (metric learner shared by the layer's heads, as in ``pldr_model_v510``,
  or per head), concatenation, ``h = concat W_o + b_o``;
  ``x1 = LayerNorm(h + x)``; ``x = LayerNorm(SwiGLU_ffn(x1) + x1)``;
* logits ``x W_f + b_f``. LayerNorm eps 1e-6; row-vector convention ``x @ W``,
  each ``W`` (d_in, d_out) stored output-major as ``nn.Linear`` stores it, so that
  the few-row products of decoding run as ``(W^T x^T)^T``
  (:func:`pyverify.kernels.linear.linear`); ``W_q, W_k, W_v`` side by side in one
  buffer, and ``W_1, W_2`` of the SwiGLU in another, so that a decode step runs each
  group as one product (:mod:`pyverify.kernels.decode`).

Modes of :meth:`PLGADecoder.forward`:

``"uncached"``
    every head recomputes ``G`` from its Gram matrix (steps 1-6);
``"g_cached"``
    a stored ``G`` per layer is reused (steps 1-6 skipped);
``"collapsed"``
    a constant ``G*`` per layer and head: SDPA on ``Q_rot G*`` (fast path,
    bf16/fp16 use the "rounded" precision of
    :func:`~pyverify.kernels.collapsed.collapsed_attention`).

Decoding (:meth:`PLGADecoder.prefill`, :meth:`PLGADecoder.decode_step`): the
prompt pass stores, per layer, the rotated keys, the values, the
metric-learner output ``A`` and ``G``. A step with the G-cache reuses ``G``
(steps 1-6 skipped); without it, it recomputes steps 4-6 from the stored ``A``
(the reference's KV-cache semantics). Either way the Gram matrix is NOT
recomputed as tokens are appended. Keys and values live in preallocated
buffers that grow geometrically, so a step writes one row instead of copying
the whole cache (``LayerCache.k``/``v`` are views of the first ``length`` rows).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

import pyverify.kernels.validation as kval
from pyverify.errors import InputTypeError, InputValueError
from pyverify.kernels.cache import DecoderCache, LayerCache
from pyverify.kernels.collapsed import collapsed_attention
from pyverify.kernels.decode import decode_rows
from pyverify.kernels.head import Deductive, Precision, plga_attention
from pyverify.kernels.linear import linear as _linear
from pyverify.kernels.linear import output_major_block
from pyverify.kernels.params import FFNParams, HeadParams
from pyverify.kernels.params import from_reference as heads_from_reference
from pyverify.kernels.rope import apply_rope

__all__ = [
    "DecoderCache",
    "DecoderParams",
    "FFNParams",
    "LayerCache",
    "LayerParams",
    "Mode",
    "PLGADecoder",
    "from_reference",
]

Mode = Literal["uncached", "g_cached", "collapsed"]
_MODES = ("uncached", "g_cached", "collapsed")


@dataclass(frozen=True)
class LayerParams:
    """One decoder layer (row-vector convention, heads from consecutive columns).

    Attributes
    ----------
    Wq, Wk, Wv, Wo : torch.Tensor
        (d_model, d_model) projections; ``bq``, ``bk``, ``bv``, ``bo`` (d_model,).
    heads : HeadParams
        Metric-learner parameters of the H heads.
    ln1_gamma, ln1_beta, ln2_gamma, ln2_beta : torch.Tensor
        (d_model,) LayerNorms after attention and after the FFN.
    ffn : FFNParams
        The feed-forward SwiGLU.
    """

    Wq: torch.Tensor
    bq: torch.Tensor
    Wk: torch.Tensor
    bk: torch.Tensor
    Wv: torch.Tensor
    bv: torch.Tensor
    Wo: torch.Tensor
    bo: torch.Tensor
    heads: HeadParams
    ln1_gamma: torch.Tensor
    ln1_beta: torch.Tensor
    ffn: FFNParams
    ln2_gamma: torch.Tensor
    ln2_beta: torch.Tensor


@dataclass(frozen=True)
class DecoderParams:
    """The whole decoder.

    Attributes
    ----------
    emb : torch.Tensor
        (vocab, d_model) embedding.
    ln0_gamma, ln0_beta : torch.Tensor
        (d_model,) LayerNorm after the scaled embedding.
    layers : list of LayerParams
        The decoder layers.
    Wf, bf : torch.Tensor
        (d_model, vocab) and (vocab,) output layer.
    num_heads : int
        H.
    ln_eps : float
        LayerNorm epsilon (1e-6).
    rope_base : float
        RoPE base (10000).
    """

    emb: torch.Tensor
    ln0_gamma: torch.Tensor
    ln0_beta: torch.Tensor
    layers: list[LayerParams]
    Wf: torch.Tensor
    bf: torch.Tensor
    num_heads: int
    ln_eps: float = 1e-6
    rope_base: float = 10000.0

    @property
    def d_model(self) -> int:
        """Model width."""
        return int(self.emb.shape[1])

    @property
    def dk(self) -> int:
        """Head dimension."""
        return self.d_model // self.num_heads


def _ln(x: torch.Tensor, g: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), g, b, eps)


def _np(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


class PLGADecoder:
    """Decoder stack of multi-head PLGA layers (inference only).

    Parameters
    ----------
    params : DecoderParams
        Parameters (their device/dtype is the model's).
    """

    def __init__(self, params: DecoderParams) -> None:
        self.params = params

    # ------------------------------------------------------------------ helpers
    @property
    def device(self) -> torch.device:
        """Device of the parameters."""
        return self.params.emb.device

    @property
    def dtype(self) -> torch.dtype:
        """Dtype of the parameters (and of the activations)."""
        return self.params.emb.dtype

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Return ``LayerNorm(Emb(tokens) * sqrt(d_model))``, (B, S, d_model)."""
        p = self.params
        if not isinstance(tokens, torch.Tensor) or tokens.dtype not in (torch.int64, torch.int32):
            raise InputTypeError("tokens must be an integer torch.Tensor of shape (B, S)")
        if tokens.dim() != 2:
            raise InputValueError(f"tokens must have shape (B, S); got shape {tuple(tokens.shape)}")
        tokens, vocab = tokens.to(self.device), p.emb.shape[0]
        if self.device.type == "cpu":
            try:  # torch checks the range itself on a CPU: no extra pass, no host read
                x = F.embedding(tokens, p.emb) * math.sqrt(p.d_model)
            except IndexError:
                raise InputValueError(f"tokens must lie in [0, {vocab})") from None
        else:
            if tokens.numel():
                lo, hi = torch.stack(torch.aminmax(tokens)).tolist()  # one host read
                if lo < 0 or hi >= vocab:
                    raise InputValueError(f"tokens must lie in [0, {vocab})")
            x = p.emb[tokens] * math.sqrt(p.d_model)
        return _ln(x, p.ln0_gamma, p.ln0_beta, p.ln_eps)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        B, S, _ = x.shape
        return x.view(B, S, self.params.num_heads, self.params.dk).transpose(1, 2)

    def _qkv(self, lp: LayerParams, x: torch.Tensor, offset: int):
        base = self.params.rope_base
        q = apply_rope(self._split(_linear(x, lp.Wq, lp.bq)), offset=offset, base=base)
        k = apply_rope(self._split(_linear(x, lp.Wk, lp.bk)), offset=offset, base=base)
        v = self._split(_linear(x, lp.Wv, lp.bv))
        return q, k, v

    def _finish(self, lp: LayerParams, x: torch.Tensor, heads_out: torch.Tensor) -> torch.Tensor:
        eps = self.params.ln_eps
        B, _, S, _ = heads_out.shape
        h = _linear(heads_out.transpose(1, 2).reshape(B, S, -1), lp.Wo, lp.bo)
        x1 = _ln(h + x, lp.ln1_gamma, lp.ln1_beta, eps)
        ffn = lp.ffn
        f = F.silu(_linear(x1, ffn.W1, ffn.b1)) * _linear(x1, ffn.W2, ffn.b2)
        return _ln(_linear(f, ffn.W3, ffn.b3) + x1, lp.ln2_gamma, lp.ln2_beta, eps)

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        return _linear(x, self.params.Wf, self.params.bf)

    def _check_G(self, G: Sequence[torch.Tensor] | None, mode: str) -> None:
        if mode not in _MODES:
            raise InputValueError(f"mode must be one of {_MODES}; got {mode!r}")
        if mode != "uncached":
            if G is None or len(G) != len(self.params.layers):
                raise InputValueError(
                    f"mode={mode!r} needs G: a sequence of {len(self.params.layers)} per-layer "
                    "operators ((H, dk, dk) or (B, H, dk, dk))"
                )

    def _layer_attention(self, li, lp, q, k, v, mode, G, precision):
        if mode == "uncached":
            out, ded = plga_attention(q, k, v, lp.heads, return_deductive=True, precision=precision)
            return out, ded
        Gl = G[li]
        if mode == "g_cached":
            out, ded = plga_attention(
                q, k, v, None, G=Gl, return_deductive=True, precision=precision
            )
            return out, ded
        out = collapsed_attention(q, k, v, Gl, precision=precision)
        return out, Deductive(None, None, None, Gl)

    # ------------------------------------------------------------------ public
    def forward(
        self,
        tokens: torch.Tensor,
        *,
        mode: Mode = "uncached",
        G: Sequence[torch.Tensor] | None = None,
        return_cache: bool = False,
        precision: Precision | None = None,
    ) -> tuple[torch.Tensor, list[Deductive]] | tuple[torch.Tensor, list[Deductive], DecoderCache]:
        """Run the decoder on a full token sequence.

        Parameters
        ----------
        tokens : torch.Tensor
            (B, S) integer token ids.
        mode : {"uncached", "g_cached", "collapsed"}, default "uncached"
            How each head obtains ``G`` (see module docstring).
        G : sequence of torch.Tensor, optional
            Per-layer operators, (H, dk, dk) or (B, H, dk, dk); required unless
            ``mode="uncached"``.
        return_cache : bool, default False
            Also return a :class:`DecoderCache` for :meth:`decode_step`.
        precision : {"compensated", "rounded"}, optional
            bfloat16/float16 only; default "compensated" for uncached/g_cached
            and "rounded" for collapsed.

        Returns
        -------
        logits : torch.Tensor
            (B, S, vocab).
        deductive : list of Deductive
            Per layer, (B, H, dk, dk) tensors (only ``G`` for cached modes).
        cache : DecoderCache
            Only if ``return_cache``.
        """
        self._check_G(G, mode)
        x = self.embed(tokens)
        ded_all, cache = [], DecoderCache(length=tokens.shape[1], mode=mode)
        prec = precision or ("rounded" if mode == "collapsed" else "compensated")
        for li, lp in enumerate(self.params.layers):
            q, k, v = self._qkv(lp, x, 0)
            out, ded = self._layer_attention(li, lp, q, k, v, mode, G, prec)
            ded_all.append(ded)
            if return_cache:
                cache.layers.append(LayerCache(k=k, v=v, A=ded.A, G=ded.G))
            x = self._finish(lp, x, out)
        logits = self._logits(x)
        return (logits, ded_all, cache) if return_cache else (logits, ded_all)

    __call__ = forward

    def prefill(
        self,
        tokens: torch.Tensor,
        *,
        mode: Mode = "uncached",
        G: Sequence[torch.Tensor] | None = None,
        precision: Precision | None = None,
    ) -> tuple[torch.Tensor, DecoderCache]:
        """Run the prompt and build the KV- and G-cache.

        Parameters
        ----------
        tokens : torch.Tensor
            (B, S) prompt.
        mode, G, precision
            As in :meth:`forward`.

        Returns
        -------
        logits : torch.Tensor
            (B, S, vocab).
        cache : DecoderCache
            Rotated keys, values, ``A`` and ``G`` per layer.
        """
        logits, _, cache = self.forward(
            tokens, mode=mode, G=G, return_cache=True, precision=precision
        )
        return logits, cache

    def decode_step(
        self,
        token: torch.Tensor,
        cache: DecoderCache,
        *,
        use_g_cache: bool = True,
        precision: Precision | None = None,
    ) -> tuple[torch.Tensor, DecoderCache]:
        """Decode one token per batch row using the KV- (and G-) cache.

        Parameters
        ----------
        token : torch.Tensor
            (B,) or (B, 1) token ids at position ``cache.length``.
        cache : DecoderCache
            From :meth:`prefill` or a previous step; updated in place and returned.
        use_g_cache : bool, default True
            Reuse the cached ``G`` (steps 1-6 skipped). If False, recompute
            steps 4-6 from the cached ``A`` (needs an uncached prompt pass).
        precision : {"compensated", "rounded"}, optional
            bfloat16/float16 only (default as in :meth:`forward`).

        Returns
        -------
        logits : torch.Tensor
            (B, vocab) next-token logits.
        cache : DecoderCache
            The updated cache (length + 1).
        """
        if not isinstance(cache, DecoderCache) or len(cache.layers) != len(self.params.layers):
            raise InputValueError("cache must be the DecoderCache returned by prefill/decode_step")
        kval.check_type(token, torch.Tensor, "token", "an integer torch.Tensor (B,)")
        kval.check_bool(use_g_cache, "use_g_cache")
        tok = token.view(-1, 1) if token.dim() == 1 else token
        if tok.dim() != 2 or tok.shape[1] != 1:
            raise InputValueError(f"token must have shape (B,) or (B, 1); got {tuple(token.shape)}")
        if tok.shape[0] != cache.layers[0].k.shape[0]:
            raise InputValueError(
                f"token has {tok.shape[0]} rows; the cache holds {cache.layers[0].k.shape[0]}"
            )
        x = self.embed(tok)
        prec = precision or ("rounded" if cache.mode == "collapsed" else "compensated")
        if not use_g_cache and any(lc.A is None for lc in cache.layers):
            raise InputValueError("use_g_cache=False needs A in the cache (uncached prefill)")
        # The step itself (fused products, rows written in place, the checks read once
        # at its end, the cache restored on failure) is pyverify.kernels.decode's.
        logits = decode_rows(self, x, cache, use_g_cache=use_g_cache, precision=prec)
        cache.length += 1
        return logits, cache


def from_reference(
    ref: Any,
    device: torch.device | str | None = "cpu",
    dtype: torch.dtype = torch.float64,
    *,
    shared: bool | None = None,
) -> PLGADecoder:
    """Build a :class:`PLGADecoder` from the reference model's parameters.

    Parameters
    ----------
    ref : pyverify.reference.model.DecoderParams or Decoder
        The float64 reference decoder (or its parameters); same layout: head
        ``h`` owns columns ``h*dk .. (h+1)*dk - 1`` of ``Wq``/``Wk``/``Wv``.
    device : torch.device or str, default "cpu"
        Target device.
    dtype : torch.dtype, default torch.float64
        Parameter and activation dtype. For bfloat16/float16 the metric
        learners still run in float32 (their parameters are converted on use).
    shared : bool, optional
        Learner form per layer, as in :func:`pyverify.kernels.from_reference`
        (default: shared when the layer's heads carry equal learners).

    Returns
    -------
    PLGADecoder
        The model.
    """
    rp = getattr(ref, "params", ref)
    kval.check_device_dtype(device, dtype)
    kval.validate_reference_decoder(rp)  # shapes, types, finiteness, naming the field

    def t(x: Any) -> torch.Tensor:
        return torch.as_tensor(_np(x)).to(device=device, dtype=dtype)

    def w(*xs: Any) -> list[torch.Tensor]:
        # projection weights, output-major (see pyverify.kernels.linear); those read
        # from the same input side by side in one buffer, so a step fuses their products
        return output_major_block([_np(x) for x in xs], device, dtype)

    head_dtype = dtype if dtype == torch.float64 else torch.float32
    layers = []
    for layer in rp.layers:
        m, f = layer.mha, layer.ffn
        (Wq, Wk, Wv), (bq, bk, bv) = w(m.Wq, m.Wk, m.Wv), w(m.bq, m.bk, m.bv)
        (W1, W2), (b1, b2) = w(f.W1, f.W2), w(f.b1, f.b2)
        layers.append(
            LayerParams(
                Wq=Wq, bq=bq, Wk=Wk, bk=bk, Wv=Wv, bv=bv, Wo=w(m.Wo)[0], bo=t(m.bo),
                heads=heads_from_reference(list(m.heads), device, head_dtype, shared=shared),
                ln1_gamma=t(layer.ln1_gamma), ln1_beta=t(layer.ln1_beta),
                ffn=FFNParams(W1, b1, W2, b2, w(f.W3)[0], t(f.b3)),
                ln2_gamma=t(layer.ln2_gamma), ln2_beta=t(layer.ln2_beta),
            )
        )  # fmt: skip
    m0 = rp.layers[0].mha
    params = DecoderParams(
        emb=t(rp.embedding),
        ln0_gamma=t(rp.ln_gamma),
        ln0_beta=t(rp.ln_beta),
        layers=layers,
        Wf=w(rp.W_out)[0],
        bf=t(rp.b_out),
        num_heads=len(m0.heads),
        ln_eps=float(getattr(rp, "ln_eps", 1e-6)),
        rope_base=float(getattr(m0, "rope_base", 10000.0)),
    )
    return PLGADecoder(params)
