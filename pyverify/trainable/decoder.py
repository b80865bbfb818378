"""The PLDR decoder trained by ``pyverify collapse``, in the author's module layout.

Why a third decoder: ``reference/model.py`` is the oracle (float64 NumPy, the spec
read aloud); ``kernels/model.py`` is fast inference (no autograd, its own parameter
layout, caches); this one trains, so it needs autograd and the author's module tree.

The spec's post-LayerNorm decoder (``plga-spec.md``)::

    x  = LayerNorm(Emb(tokens) * sqrt(d_model))
    per layer:  q, k, v = Linear(x); RoPE on q, k (adjacent planes)
                D = Q^T Q;  A0 = LN_rows(D);  A = Phi(A0)        # SHARED by the heads
                A_LM = iSwiGLU(W A + b) + 1e-9;  A_P = A_LM ** P;  G = a A_P + b_a  # per head
                h = softmax(Q G K^T / sqrt(dk) + causal) V;  out = Linear(concat(h))
                x1 = LN(out + x);  x = LN(SwiGLU_ffn(x1) + x1)
    logits = Linear(x)

The module tree is the author's ``pldr_model_v510.PLDR_Model`` (repository
``burcgokden/PLDR-LLM-with-KVG-cache``, ``src/pldr_model_v510``): the same
submodule names, parameter shapes (``nn.Linear`` weights ``(out, in)``) and
registration order, so ``state_dict()`` IS a v510 state dict (its keys are
listed in :mod:`pyverify.reference.v510`) that ``pyverify.kernels.load_v510``
and the author's ``PLDR_Model`` (``load_state_dict(strict=True)``; their RoPE
buffers are not persistent) both load. The RoPE here has no buffers: angles are
formed in float64 on the fly (the author's torchtune module builds a float32
table); ``sqrt(d_model)`` and ``sqrt(dk)`` are exact float64 (theirs are
rounded to float32); the causal mask is ``-inf`` (theirs adds ``-1e9``, the same
after ``exp`` in float32 and float64).

Initialisation (:func:`init_weights`), drawn from a private seeded
``torch.Generator``, tensor by tensor as the author's constructors draw it:

* ``nn.Linear`` layers passed through their ``weights_init`` (``wq``, ``wk``,
  ``dense``, every ``GLUVariant``'s ``gluw1..3``, ``final_layer``):
  ``xavier_uniform_`` weight (U(+-sqrt(6 / (fan_in + fan_out)))), zero bias;
* ``wv``: their constructor applies ``weights_init`` to ``wk`` twice and never
  to ``wv``, so ``wv`` keeps torch's ``nn.Linear`` default:
  ``kaiming_uniform_(a=sqrt(5))`` weight and bias, both U(+-1 / sqrt(fan_in));
* ``plga_layer``: ``Wlst, pwlst, alst`` (``W, P, a``) ``xavier_normal_`` (for an
  ``(H, dk, dk)`` tensor fan_in = dk*dk, fan_out = H*dk: std sqrt(2 / (dk^2 + H dk))),
  ``blst, balst`` (``b, b_a``) zero;
* ``nn.Embedding``: N(0, 1); every ``nn.LayerNorm``: weight 1, bias 0 (eps 1e-6).

``p_init="spread"`` draws ``P ~ U[0.5, 1.5]`` instead; both draws of ``P`` are
always taken, so every other tensor is identical in the two inits.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TypeVar

import torch
from torch import Tensor, nn
from torch.nn import functional as F  # noqa: N812

from pyverify.errors import InputValueError

__all__ = [
    "DEDUCTIVE",
    "LN_EPS",
    "METRIC_EPS",
    "P_INITS",
    "LayerKV",
    "ModelConfig",
    "PLDRDecoder",
    "init_weights",
]

LN_EPS = 1e-6
METRIC_EPS = 1e-9
DEDUCTIVE = ("A", "A_LM", "A_P", "G")
P_INITS = ("xavier", "spread")


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the decoder (byte vocabulary by default)."""

    vocab: int = 256
    d_model: int = 64
    num_heads: int = 2
    num_layers: int = 2
    dff: int = 128
    a_dff: int = 32
    num_reslayer: int = 2
    num_dense: int = 2
    rope_base: float = 10000.0

    @property
    def dk(self) -> int:
        """Head width."""
        return self.d_model // self.num_heads

    def validate(self) -> ModelConfig:
        """Raise :class:`~pyverify.errors.InputValueError` naming a bad size."""
        for name, val in asdict(self).items():
            if name != "rope_base" and (not isinstance(val, int) or val < 1):
                raise InputValueError(f"model.{name} must be a positive int; got {val!r}")
        if self.d_model % self.num_heads or self.dk % 2:
            raise InputValueError(
                f"model.d_model ({self.d_model}) / num_heads ({self.num_heads}) must be an even int"
            )
        return self


_M = TypeVar("_M", bound=nn.Module)


def _blank(cls: type[_M], *args: object, **kwargs: object) -> _M:
    """A module whose values :func:`init_weights` draws, built without moving torch's RNG.

    Not ``skip_init``: it builds on the meta device, whose first use imports
    ``torch._dynamo``, seconds in every new process (each job, each torchrun rank).
    """
    with torch.random.fork_rng(devices=[]):
        return cls(*args, **kwargs)


def _linear(d_in: int, d_out: int) -> nn.Linear:
    return _blank(nn.Linear, d_in, d_out)


def _layernorm(n: int) -> nn.LayerNorm:
    return _blank(nn.LayerNorm, n, eps=LN_EPS)


class GLUVariant(nn.Module):
    """``gluw3(silu(gluw1(x)) * gluw2(x))`` (SwiGLU) on the last axis."""

    def __init__(self, d_in: int, d_hidden: int, d_out: int) -> None:
        super().__init__()
        self.gluw1 = _linear(d_in, d_hidden)
        self.gluw2 = _linear(d_in, d_hidden)
        self.gluw3 = _linear(d_hidden, d_out)

    def forward(self, x: Tensor) -> Tensor:
        """Apply the block."""
        return self.gluw3(F.silu(self.gluw1(x)) * self.gluw2(x))


class ResLayerA(nn.Module):
    """A residual unit of the metric learner: ``LN_rows(X + f_k(...f_1(X)))``."""

    def __init__(self, dk: int, a_dff: int, num_dense: int) -> None:
        super().__init__()
        self.denseAs = nn.ModuleList(GLUVariant(dk, a_dff, dk) for _ in range(num_dense))
        self.layernormA = _layernorm(dk)

    def forward(self, x: Tensor) -> Tensor:
        """Apply the unit to each row."""
        y = x
        for blk in self.denseAs:
            y = blk(y)
        return self.layernormA(x + y)


class PlgaLayer(nn.Module):
    """The per-head tensors ``W, b, P, a, b_a`` (``Wlst, blst, pwlst, alst, balst``)."""

    def __init__(self, num_heads: int, dk: int) -> None:
        super().__init__()
        for name in ("Wlst", "blst", "pwlst", "alst", "balst"):
            setattr(self, name, nn.Parameter(torch.empty(num_heads, dk, dk)))

    def from_a(self, A: Tensor) -> dict[str, Tensor]:
        """Steps 4-6 from a metric-learner output ``A (B, H, dk, dk)``: A, A_LM, A_P, G."""
        z = self.Wlst @ A + self.blst
        A_LM = z * F.silu(z) + METRIC_EPS
        A_P = torch.pow(A_LM, self.pwlst)
        G = self.alst @ A_P + self.balst
        return {"A": A, "A_LM": A_LM, "A_P": A_P, "G": G}


def rope(x: Tensor, offset: int, base: float) -> Tensor:
    """Rotate rows ``x[..., n, :]`` by position ``offset + n`` (adjacent planes)."""
    S, dk = x.shape[-2], x.shape[-1]
    pos = torch.arange(offset, offset + S, dtype=torch.float64, device=x.device)
    theta = base ** (-torch.arange(0, dk, 2, dtype=torch.float64, device=x.device) / dk)
    ang = pos[:, None] * theta[None, :]
    c, s = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2)


@dataclass
class LayerKV:
    """KV-cache of one layer: rotated keys and values ``(B, H, S, dk)``."""

    k: Tensor
    v: Tensor


class PLGAttention(nn.Module):
    """Multi-head PLGA (``plgMultiHeadAttention``): the shared metric learner, per-head tensors."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d, dk = cfg.d_model, cfg.dk
        self.cfg = cfg
        self.wq = _linear(d, d)
        self.wk = _linear(d, d)
        self.wv = _linear(d, d)
        self.plgatt_layer = PlgaLayer(cfg.num_heads, dk)
        self.dense = _linear(d, d)
        self.reslayerAs = nn.ModuleList(
            ResLayerA(dk, cfg.a_dff, cfg.num_dense) for _ in range(cfg.num_reslayer)
        )
        self.layernorm1 = _layernorm(dk)

    @property
    def P(self) -> nn.Parameter:
        """The per-head power ``P`` (``pwlst``)."""
        return self.plgatt_layer.pwlst

    @property
    def a(self) -> nn.Parameter:
        """The per-head coupling ``a`` (``alst``)."""
        return self.plgatt_layer.alst

    def metric_parameters(self) -> list[nn.Parameter]:
        """The metric learner and ``W, b, P, a, b_a`` (what run ``frozen`` keeps at init)."""
        return [
            *self.layernorm1.parameters(),
            *self.reslayerAs.parameters(),
            *self.plgatt_layer.parameters(),
        ]

    def metric_rows(self, D: Tensor) -> Tensor:
        """The metric learner, a map applied to each row of ``D``: ``A = Phi(LN_rows(D))``."""
        A = self.layernorm1(D)
        for unit in self.reslayerAs:
            A = unit(A)
        return A

    def from_a(self, A: Tensor) -> dict[str, Tensor]:
        """Steps 4-6 from a metric-learner output ``A``: A, A_LM, A_P, G."""
        return self.plgatt_layer.from_a(A)

    # the layer call chain passes the same arguments down (DecoderLayer.forward): not a copy
    def forward(
        self,
        x: Tensor,
        G: Tensor | None = None,
        past: LayerKV | None = None,
        A: Tensor | None = None,
        *,
        a_prefix: int | None = None,
        capture: bool = False,
    ) -> tuple[Tensor, dict[str, Tensor], LayerKV]:
        """Attend over new rows ``x (B, S, d)``; ``G (B|1, H, dk, dk)`` skips steps 1-6.

        ``A`` (without ``G``) skips steps 1-3 only: the author's KV-cache decoding,
        which stores the prompt's metric-learner output. ``a_prefix``: the Gram
        ``D`` is formed from the first ``a_prefix`` rows only (A from a prompt
        prefix). ``capture``: also return the Gram of the unrotated queries
        (``"D0"``, for the rotary twirl). Returns the output, the deductive
        tensors (with the Gram ``"D"``; only ``G`` when it was given) and the
        KV-cache of all positions so far.
        """
        B, S, d = x.shape
        H, dk = self.cfg.num_heads, self.cfg.dk
        offset = 0 if past is None else past.k.shape[2]

        def split(t: Tensor) -> Tensor:
            return t.reshape(B, S, H, dk).transpose(1, 2)

        q0 = split(self.wq(x))
        q = rope(q0, offset, self.cfg.rope_base)
        k = rope(split(self.wk(x)), offset, self.cfg.rope_base)
        v = split(self.wv(x))
        if past is not None:
            k, v = torch.cat((past.k, k), dim=2), torch.cat((past.v, v), dim=2)
        if G is not None:
            ded = {"G": G}
        elif A is not None:
            ded = self.from_a(A)
        else:
            qa = q if a_prefix is None else q[..., :a_prefix, :]
            D = qa.transpose(-2, -1) @ qa
            ded = self.from_a(self.metric_rows(D))
            ded["D"] = D
            if capture:
                q0a = q0 if a_prefix is None else q0[..., :a_prefix, :]
                ded["D0"] = q0a.transpose(-2, -1) @ q0a
        E = (q @ ded["G"]) @ k.transpose(-2, -1) / math.sqrt(dk)
        Sk = k.shape[2]
        allowed = torch.ones(S, Sk, dtype=torch.bool, device=E.device).tril(Sk - S)
        E = E.masked_fill(~allowed, float("-inf"))
        h = torch.softmax(E, dim=-1) @ v
        return self.dense(h.transpose(1, 2).reshape(B, S, d)), ded, LayerKV(k, v)


class DecoderLayer(nn.Module):
    """``PLDR_DecoderLayer``: ``x1 = LN(MHA(x) + x)``, ``LN(SwiGLU(x1) + x1)``."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.mha1 = PLGAttention(cfg)
        self.ffn = GLUVariant(cfg.d_model, cfg.dff, cfg.d_model)
        self.layernorm1 = _layernorm(cfg.d_model)
        self.layernorm2 = _layernorm(cfg.d_model)

    # the arguments of PLGAttention.forward, passed down (the layer call chain): not a copy
    def forward(
        self,
        x: Tensor,
        G: Tensor | None = None,
        past: LayerKV | None = None,
        A: Tensor | None = None,
        **kw: object,
    ) -> tuple[Tensor, dict[str, Tensor], LayerKV]:
        """One layer."""
        h, ded, kv = self.mha1(x, G, past, A, **kw)
        x1 = self.layernorm1(h + x)
        return self.layernorm2(self.ffn(x1) + x1), ded, kv


class Decoder(nn.Module):
    """``PLDR_Decoder``: embedding, layers and the embedding's LayerNorm."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.embedding = _blank(nn.Embedding, cfg.vocab, cfg.d_model)
        self.dec_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.layernorm1 = _layernorm(cfg.d_model)


def _glorot(t: Tensor, g: torch.Generator) -> None:
    nn.init.xavier_uniform_(t, generator=g)


def init_weights(model: PLDRDecoder, seed: int, p_init: str = "xavier") -> None:
    """Draw every tensor of ``model`` as the author's constructors do (module docstring)."""
    if p_init not in P_INITS:
        raise InputValueError(f"p_init must be 'xavier' or 'spread'; got {p_init!r}")
    g = torch.Generator().manual_seed(seed)

    def linear(m: nn.Linear) -> None:  # their weights_init
        _glorot(m.weight, g)
        nn.init.zeros_(m.bias)

    def norm(m: nn.LayerNorm) -> None:
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)

    def glu(m: GLUVariant) -> None:
        for lin in (m.gluw1, m.gluw2, m.gluw3):
            linear(lin)

    with torch.no_grad():
        nn.init.normal_(model.decoder.embedding.weight, generator=g)
        for layer in model.layers:
            mha = layer.mha1
            linear(mha.wq)
            linear(mha.wk)
            bound = 1.0 / math.sqrt(mha.wv.in_features)  # torch's nn.Linear default
            nn.init.kaiming_uniform_(mha.wv.weight, a=math.sqrt(5), generator=g)
            nn.init.uniform_(mha.wv.bias, -bound, bound, generator=g)
            plga = mha.plgatt_layer
            nn.init.xavier_normal_(plga.Wlst, generator=g)
            nn.init.zeros_(plga.blst)
            nn.init.xavier_normal_(plga.pwlst, generator=g)
            spread = torch.rand(plga.pwlst.shape, generator=g) + 0.5
            if p_init == "spread":
                plga.pwlst.copy_(spread)
            nn.init.xavier_normal_(plga.alst, generator=g)
            nn.init.zeros_(plga.balst)
            linear(mha.dense)
            for unit in mha.reslayerAs:
                for blk in unit.denseAs:
                    glu(blk)
                norm(unit.layernormA)
            norm(mha.layernorm1)
            glu(layer.ffn)
            norm(layer.layernorm1)
            norm(layer.layernorm2)
        norm(model.decoder.layernorm1)
        linear(model.final_layer)


class PLDRDecoder(nn.Module):
    """The whole decoder (``PLDR_Model``); :meth:`forward` returns logits, tensors, KV-caches.

    Parameters
    ----------
    cfg : ModelConfig
        Sizes.
    seed : int
        Seed of the initialisation (a private ``torch.Generator``).
    p_init : {"xavier", "spread"}
        Init of ``P``: the author's ``xavier_normal_`` or ``U[0.5, 1.5]``.
    init : bool
        Draw the weights (False: uninitialised memory, for a state dict loaded next).
    """

    def __init__(
        self, cfg: ModelConfig, seed: int = 0, p_init: str = "xavier", *, init: bool = True
    ) -> None:
        super().__init__()
        if p_init not in P_INITS:
            raise InputValueError(f"p_init must be 'xavier' or 'spread'; got {p_init!r}")
        self.cfg = cfg.validate()
        self.decoder = Decoder(cfg)
        self.final_layer = _linear(cfg.d_model, cfg.vocab)
        if init:
            init_weights(self, seed, p_init)

    @property
    def layers(self) -> nn.ModuleList:
        """The decoder layers (``decoder.dec_layers``)."""
        return self.decoder.dec_layers

    def forward(
        self,
        tokens: Tensor,
        G: list[Tensor] | None = None,
        past: list[LayerKV] | None = None,
        A: list[Tensor] | None = None,
        *,
        a_prefix: int | None = None,
        capture: bool = False,
    ) -> tuple[Tensor, list[dict[str, Tensor]], list[LayerKV]]:
        """Causal pass on ``tokens (B, S)`` (new positions after ``past`` if given).

        Parameters
        ----------
        tokens : torch.Tensor of int64, shape (B, S)
            Token ids in ``[0, vocab)``.
        G : list of torch.Tensor (B or 1, H, dk, dk), optional
            Per-layer G-cache: the metric learner is skipped.
        past : list of LayerKV, optional
            KV-cache of earlier positions (decoding).
        A : list of torch.Tensor (B, H, dk, dk), optional
            Per-layer stored metric-learner output (used when ``G`` is not given).
        a_prefix : int, optional
            Form each layer's Gram from the first ``a_prefix`` positions only.
        capture : bool
            Also return each layer's unrotated query Gram (``"D0"``).

        Returns
        -------
        tuple
            ``(logits (B, S, vocab), deductive tensors per layer, KV-cache per layer)``.
        """
        if tokens.ndim != 2 or tokens.dtype != torch.int64:
            raise InputValueError(
                f"tokens must be an int64 tensor (B, S); got {tokens.dtype} {tuple(tokens.shape)}"
            )
        if a_prefix is not None and not 1 <= a_prefix <= tokens.shape[1]:
            raise InputValueError(f"a_prefix must lie in [1, {tokens.shape[1]}]; got {a_prefix}")
        dec = self.decoder
        x = dec.layernorm1(dec.embedding(tokens) * math.sqrt(self.cfg.d_model))
        deds, kvs = [], []
        for i, layer in enumerate(dec.dec_layers):
            x, ded, kv = layer(
                x,
                None if G is None else G[i],
                None if past is None else past[i],
                None if A is None else A[i],
                a_prefix=a_prefix,
                capture=capture,
            )
            deds.append(ded)
            kvs.append(kv)
        return self.final_layer(x), deds, kvs
