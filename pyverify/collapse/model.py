"""The PLDR decoder trained by ``pyverify collapse`` (a ``torch.nn.Module``).

The spec's post-LayerNorm decoder (``plga-spec.md``)::

    x  = LayerNorm(Emb(tokens) * sqrt(d_model))
    per layer:  q, k, v = x Wq + bq, ...; RoPE on q, k (adjacent planes)
                D = Q^T Q;  A0 = LN_rows(D);  A = Phi(A0)        # SHARED by the heads
                A_LM = iSwiGLU(W A + b) + 1e-9;  A_P = A_LM ** P;  G = a A_P + b_a  # per head
                h = softmax(Q G K^T / sqrt(dk) + causal) V;  out = concat(h) Wo + bo
                x1 = LN(out + x);  x = LN(SwiGLU_ffn(x1) + x1)
    logits = x W_out + b_out

As in the reference ``pldr_model_v510``, the row LayerNorm of ``D`` and the
residual SwiGLU units of the metric learner are one set of weights per layer,
applied to the ``(B, H, dk, dk)`` stack; only ``W, b, P, a, b_a`` are per head.
Row-vector convention (``x @ W``), so :func:`pyverify.collapse.convert.to_reference`
copies weights into :class:`pyverify.reference.DecoderParams` without transposes.

Initialisation, drawn from a seeded ``torch.Generator``: the per-head
``W, P, a`` as the author's ``plga_layer`` (``nn.init.xavier_normal_``: for an
``(H, dk, dk)`` tensor fan_in = dk*dk, fan_out = H*dk, so std =
sqrt(2 / (dk^2 + H dk))), ``b`` and ``b_a`` zero. With ``p_init="spread"``
``P ~ U[0.5, 1.5]`` instead (both draws are always taken, so every other
weight is the same in both inits). The rest (projections ``N(0, 1/fan_in)``,
biases ``N(0, 0.02^2)`` or ``N(0, 0.1^2)`` in the learner, LayerNorms at
gamma = 1, beta = 0) is the suite's own; the author's torch defaults differ
there, which does not touch the operator ``G``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import Tensor, nn

from pyverify.errors import InputValueError

__all__ = ["LN_EPS", "METRIC_EPS", "LayerKV", "ModelConfig", "PLDRDecoder"]

LN_EPS = 1e-6
METRIC_EPS = 1e-9
DEDUCTIVE = ("A", "A_LM", "A_P", "G")


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
        """Raise ``ValueError`` naming a bad size."""
        for name, val in asdict(self).items():
            if name != "rope_base" and (not isinstance(val, int) or val < 1):
                raise InputValueError(f"model.{name} must be a positive int; got {val!r}")
        if self.d_model % self.num_heads or self.dk % 2:
            raise InputValueError(
                f"model.d_model ({self.d_model}) / num_heads ({self.num_heads}) must be an even int"
            )
        return self


def _normal(g: torch.Generator, shape: tuple[int, ...], std: float) -> nn.Parameter:
    return nn.Parameter(torch.randn(shape, generator=g) * std)


def _ln_params(n: int) -> tuple[nn.Parameter, nn.Parameter]:
    return nn.Parameter(torch.ones(n)), nn.Parameter(torch.zeros(n))


class SwiGLU(nn.Module):
    """``(silu(x W1 + b1) * (x W2 + b2)) W3 + b3`` on the last axis."""

    def __init__(self, d_in: int, d_hidden: int, g: torch.Generator, bias_std: float) -> None:
        super().__init__()
        self.W1 = _normal(g, (d_in, d_hidden), d_in**-0.5)
        self.b1 = _normal(g, (d_hidden,), bias_std)
        self.W2 = _normal(g, (d_in, d_hidden), d_in**-0.5)
        self.b2 = _normal(g, (d_hidden,), bias_std)
        self.W3 = _normal(g, (d_hidden, d_in), d_hidden**-0.5)
        self.b3 = _normal(g, (d_in,), bias_std)

    def forward(self, x: Tensor) -> Tensor:
        """Apply the block."""
        return (nn.functional.silu(x @ self.W1 + self.b1) * (x @ self.W2 + self.b2)) @ self.W3 + (
            self.b3
        )


class LayerNormRows(nn.Module):
    """LayerNorm over the last axis, eps 1e-6, learned gamma and beta."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.gamma, self.beta = _ln_params(n)

    def forward(self, x: Tensor) -> Tensor:
        """Normalise rows."""
        return nn.functional.layer_norm(x, x.shape[-1:], self.gamma, self.beta, LN_EPS)


class ResUnit(nn.Module):
    """``LN_rows(X + f_k(...f_1(X)))``."""

    def __init__(self, dk: int, a_dff: int, num_dense: int, g: torch.Generator) -> None:
        super().__init__()
        self.dense = nn.ModuleList(SwiGLU(dk, a_dff, g, 0.1) for _ in range(num_dense))
        self.ln = LayerNormRows(dk)

    def forward(self, x: Tensor) -> Tensor:
        """Apply the unit to each row."""
        y = x
        for blk in self.dense:
            y = blk(y)
        return self.ln(x + y)


def rope(x: Tensor, offset: int, base: float) -> Tensor:
    """Rotate rows ``x[..., n, :]`` by position ``offset + n`` (adjacent planes)."""
    S, dk = x.shape[-2], x.shape[-1]
    pos = torch.arange(offset, offset + S, dtype=torch.float64)
    theta = base ** (-torch.arange(0, dk, 2, dtype=torch.float64) / dk)
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
    """Multi-head PLGA with the shared metric learner and per-head ``W, b, P, a, b_a``."""

    def __init__(self, cfg: ModelConfig, g: torch.Generator, p_init: str = "xavier") -> None:
        super().__init__()
        d, H, dk = cfg.d_model, cfg.num_heads, cfg.dk
        self.cfg = cfg
        for n in "qkvo":
            setattr(self, f"W{n}", _normal(g, (d, d), d**-0.5))
            setattr(self, f"b{n}", _normal(g, (d,), 0.02))
        self.ln0 = LayerNormRows(dk)
        self.reslayers = nn.ModuleList(
            ResUnit(dk, cfg.a_dff, cfg.num_dense, g) for _ in range(cfg.num_reslayer)
        )
        xavier = math.sqrt(2.0 / (dk * dk + H * dk))
        self.W = _normal(g, (H, dk, dk), xavier)
        self.b = nn.Parameter(torch.zeros(H, dk, dk))
        p_xavier = torch.randn((H, dk, dk), generator=g) * xavier
        p_spread = torch.rand((H, dk, dk), generator=g) + 0.5
        self.P = nn.Parameter(p_spread if p_init == "spread" else p_xavier)
        self.a = _normal(g, (H, dk, dk), xavier)
        self.b_a = nn.Parameter(torch.zeros(H, dk, dk))

    def metric_parameters(self) -> list[nn.Parameter]:
        """The metric learner and ``W, b, P, a, b_a`` (what run ``frozen`` keeps at init)."""
        return [
            *self.ln0.parameters(),
            *self.reslayers.parameters(),
            self.W,
            self.b,
            self.P,
            self.a,
            self.b_a,
        ]

    def deductive(self, q: Tensor) -> dict[str, Tensor]:
        """Steps 1-6 on rotated queries ``(B, H, S, dk)``: A, A_LM, A_P, G and the Gram ``D``."""
        D = q.transpose(-2, -1) @ q
        out = self.from_a(self.metric_rows(D))
        out["D"] = D
        return out

    def metric_rows(self, D: Tensor) -> Tensor:
        """The metric learner, a map applied to each row of ``D``: ``A = Phi(LN_rows(D))``."""
        A = self.ln0(D)
        for unit in self.reslayers:
            A = unit(A)
        return A

    def from_a(self, A: Tensor) -> dict[str, Tensor]:
        """Steps 4-6 from a metric-learner output ``A``: A, A_LM, A_P, G."""
        z = self.W @ A + self.b
        A_LM = z * nn.functional.silu(z) + METRIC_EPS
        A_P = torch.pow(A_LM, self.P)
        G = self.a @ A_P + self.b_a
        return {"A": A, "A_LM": A_LM, "A_P": A_P, "G": G}

    def forward(
        self,
        x: Tensor,
        G: Tensor | None = None,
        past: LayerKV | None = None,
        A: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Tensor], LayerKV]:
        """Attend over new rows ``x (B, S, d)``; ``G (B|1, H, dk, dk)`` skips steps 1-6.

        ``A`` (without ``G``) skips steps 1-3 only: the reference model's KV-cache
        decoding, which stores the prompt's metric-learner output. Returns the
        output, the deductive tensors (only ``G`` when it was given) and the
        KV-cache of all positions so far.
        """
        B, S, d = x.shape
        H, dk = self.cfg.num_heads, self.cfg.dk
        offset = 0 if past is None else past.k.shape[2]

        def split(t: Tensor) -> Tensor:
            return t.reshape(B, S, H, dk).transpose(1, 2)

        q = rope(split(x @ self.Wq + self.bq), offset, self.cfg.rope_base)
        k = rope(split(x @ self.Wk + self.bk), offset, self.cfg.rope_base)
        v = split(x @ self.Wv + self.bv)
        if past is not None:
            k, v = torch.cat((past.k, k), dim=2), torch.cat((past.v, v), dim=2)
        if G is not None:
            ded = {"G": G}
        else:
            ded = self.deductive(q) if A is None else self.from_a(A)
        E = (q @ ded["G"]) @ k.transpose(-2, -1) / math.sqrt(dk)
        Sk = k.shape[2]
        allowed = torch.ones(S, Sk, dtype=torch.bool).tril(Sk - S)
        E = E.masked_fill(~allowed, float("-inf"))
        h = torch.softmax(E, dim=-1) @ v
        out = h.transpose(1, 2).reshape(B, S, d) @ self.Wo + self.bo
        return out, ded, LayerKV(k, v)


class DecoderLayer(nn.Module):
    """``x1 = LN(MHA(x) + x)``, ``LN(SwiGLU(x1) + x1)``."""

    def __init__(self, cfg: ModelConfig, g: torch.Generator, p_init: str = "xavier") -> None:
        super().__init__()
        self.mha = PLGAttention(cfg, g, p_init)
        self.ln1 = LayerNormRows(cfg.d_model)
        self.ffn = SwiGLU(cfg.d_model, cfg.dff, g, 0.1)
        self.ln2 = LayerNormRows(cfg.d_model)

    def forward(
        self,
        x: Tensor,
        G: Tensor | None = None,
        past: LayerKV | None = None,
        A: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Tensor], LayerKV]:
        """One layer."""
        h, ded, kv = self.mha(x, G, past, A)
        x1 = self.ln1(h + x)
        return self.ln2(self.ffn(x1) + x1), ded, kv


class PLDRDecoder(nn.Module):
    """The whole decoder; :meth:`forward` returns logits, deductive tensors and KV-caches.

    Parameters
    ----------
    cfg : ModelConfig
        Sizes.
    seed : int
        Seed of the initialisation (a private ``torch.Generator``).
    p_init : {"xavier", "spread"}
        Init of ``P``: the author's ``xavier_normal_`` or ``U[0.5, 1.5]``.
    """

    def __init__(self, cfg: ModelConfig, seed: int = 0, p_init: str = "xavier") -> None:
        super().__init__()
        if p_init not in ("xavier", "spread"):
            raise InputValueError(f"p_init must be 'xavier' or 'spread'; got {p_init!r}")
        self.cfg = cfg.validate()
        g = torch.Generator().manual_seed(seed)
        self.embedding = _normal(g, (cfg.vocab, cfg.d_model), 1.0)
        self.ln = LayerNormRows(cfg.d_model)
        self.layers = nn.ModuleList(DecoderLayer(cfg, g, p_init) for _ in range(cfg.num_layers))
        self.W_out = _normal(g, (cfg.d_model, cfg.vocab), cfg.d_model**-0.5)
        self.b_out = _normal(g, (cfg.vocab,), 0.02)

    def forward(
        self,
        tokens: Tensor,
        G: list[Tensor] | None = None,
        past: list[LayerKV] | None = None,
        A: list[Tensor] | None = None,
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

        Returns
        -------
        tuple
            ``(logits (B, S, vocab), deductive tensors per layer, KV-cache per layer)``.
        """
        if tokens.ndim != 2 or tokens.dtype != torch.int64:
            raise InputValueError(
                f"tokens must be an int64 tensor (B, S); got {tokens.dtype} {tuple(tokens.shape)}"
            )
        x = self.embedding[tokens] * math.sqrt(self.cfg.d_model)
        x = self.ln(x)
        deds, kvs = [], []
        for i, layer in enumerate(self.layers):
            x, ded, kv = layer(
                x,
                None if G is None else G[i],
                None if past is None else past[i],
                None if A is None else A[i],
            )
            deds.append(ded)
            kvs.append(kv)
        return x @ self.W_out + self.b_out, deds, kvs
