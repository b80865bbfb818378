"""The two shipped implementations as plugins of the public protocol.

``pyverify.conformance.shipped:reference`` (the float64 NumPy reference) and
``pyverify.conformance.shipped:kernels`` (the optimised torch kernels, every available
device and dtype) offer every capability group; the property tests reach them through
the same :class:`~pyverify.conformance.subject.Subject` as any user implementation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import pyverify.kernels as kern
from pyverify.conformance.protocol import CAPABILITIES, DTYPES, HeadResult, empty_out
from pyverify.crosscheck import available_devices
from pyverify.kernels.head import rotate_query
from pyverify.kernels.model import from_reference as kernel_decoder_from_reference
from pyverify.precision import TORCH_DTYPES
from pyverify.reference import (
    Decoder,
    KVGCache,
    PLGAParams,
    apply_rope,
    causal_mask,
    g_cache_from,
    masked_softmax,
    plga_forward_batched,
    plga_forward_full,
    rot2,
    rotation_matrix,
)
from pyverify.reference import numpy_head as nh

__all__ = ["KernelsPLGA", "ReferencePLGA", "kernels", "reference"]

_ALL_GROUPS = tuple(CAPABILITIES)


# --------------------------------------------------------------------------- reference
class ReferencePLGA:
    """The float64 NumPy reference (``pyverify.reference``)."""

    name = "reference"
    capabilities = _ALL_GROUPS
    devices = ("cpu",)
    dtypes = ("float64",)
    compute_dtype = "float64"

    def plga(self, q, k, v, params: PLGAParams, *, G=None, A=None, causal=True) -> HeadResult:
        """One head: ``plga_forward_full`` (uncached, ``A=`` or ``G=`` cached)."""
        r = plga_forward_full(q, k, v, params, causal, G=G, A=A)
        d = r.ded
        return HeadResult(r.out, d.A, d.A_LM, d.A_P, d.G, r.weights, r.E)

    def sdpa(self, q, k, v, *, causal=True) -> np.ndarray:
        """Textbook SDPA, written here independently of the head: the oracle for G = I."""
        q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
        E = q @ k.T / np.sqrt(q.shape[1])
        if causal:
            s_q, s_k = E.shape
            allowed = np.arange(s_k)[None, :] <= np.arange(s_q)[:, None] + (s_k - s_q)
            E = np.where(allowed, E, -np.inf)
        w = np.exp(E - E.max(axis=1, keepdims=True))
        return (w / w.sum(axis=1, keepdims=True)) @ v

    def softmax(self, E, *, causal=False) -> np.ndarray:
        """Row-wise (causally masked) softmax: ``masked_softmax``."""
        E = np.asarray(E, dtype=np.float64)
        return masked_softmax(E, causal_mask(*E.shape) if causal else None)

    def scores(self, q, k, G) -> np.ndarray:
        """``Q G K^T / sqrt(dk)``: ``numpy_head.scores``."""
        return nh.scores(q, k, G)

    def density(self, q) -> np.ndarray:
        """``Q^T Q``: ``numpy_head.density``."""
        return nh.density(q)

    def layer_norm_rows(self, X, gamma, beta, eps) -> np.ndarray:
        """``numpy_head.layer_norm_rows``."""
        return nh.layer_norm_rows(X, gamma, beta, eps)

    def rope(self, x, *, offset: int = 0) -> np.ndarray:
        """Rotate rows ``(..., S, dk)`` at positions ``offset ..``."""
        return apply_rope(x, offset=offset)

    def rotation_matrix(self, n, dk: int) -> np.ndarray:
        """Block-diagonal ``R_n``."""
        return rotation_matrix(n, dk)

    def rot2(self, angle: float) -> np.ndarray:
        """The 2 x 2 rotation by ``angle``."""
        return rot2(angle)

    def plga_batched(self, q, k, v, heads: list[PLGAParams], *, G=None) -> list[list[HeadResult]]:
        """(B, H, S, dk) inputs, one parameter set per head: ``[b][h]`` results."""
        r = plga_forward_batched(q, k, v, heads, True, G=G)

        def one(b, h):
            parts = (None if x is None else x[b, h] for x in r.ded)
            return HeadResult(r.out[b, h], *parts, r.weights[b, h], r.E[b, h])

        return [[one(b, h) for h in range(r.out.shape[1])] for b in range(r.out.shape[0])]

    def decoder(self, ref: Decoder) -> ReferenceModel:
        """The decoder adapter."""
        return ReferenceModel(ref)


class ReferenceModel:
    """The reference :class:`~pyverify.reference.Decoder` behind the model interface."""

    def __init__(self, ref: Decoder) -> None:
        self.ref = ref

    def forward(self, tokens, G=None) -> np.ndarray:
        """Logits ``(S, vocab)``; ``G`` (per layer ``(H, dk, dk)``) = constant-G model."""
        return self.ref.forward(np.asarray(tokens), G_cache=G).logits

    def collapsed(self, tokens, G) -> np.ndarray:
        """Generalised SDPA with a constant G: the reference's G-cached forward."""
        return self.forward(tokens, G)

    def deductive(self, tokens) -> list[list[Any]]:
        """``deductive[layer][head]`` of an uncached forward."""
        return self.ref.forward(np.asarray(tokens)).deductive

    def decode(self, prompt, rest, *, G=None, use_g_cache=True) -> np.ndarray:
        """Prompt pass, then one ``decode_step`` per token of ``rest``: ``(len(rest), vocab)``.

        With ``G``: the prompt runs G-cached with it. Without: the prompt runs uncached and
        the steps reuse its G (``use_g_cache``) or its metric-learner output ``A``.
        """
        out = self.ref.forward(np.asarray(prompt), G_cache=G)
        cache = out.cache
        if G is None and use_g_cache:
            cache = KVGCache(layers=cache.layers, G=g_cache_from(out))
        logits = []
        for tok in rest:
            step = self.ref.decode_step(int(tok), cache)
            cache = step.cache
            logits.append(step.logits[0])
        return np.array(logits)


def reference(device: str = "cpu", dtype: str = "float64") -> ReferencePLGA:
    """Factory of the reference plugin (cpu, float64 only)."""
    return ReferencePLGA()


# --------------------------------------------------------------------------- kernels
@dataclass(frozen=True)
class KernelsPLGA:
    """The optimised torch kernels (``pyverify.kernels``) on one device and dtype."""

    device: str = "cpu"
    dtype: str = "float64"
    name = "kernels"
    capabilities = _ALL_GROUPS
    dtypes = DTYPES

    @property
    def devices(self) -> tuple[str, ...]:
        """Every available torch device."""
        return tuple(available_devices())

    @property
    def compute_dtype(self) -> str:
        """float64 for float64, else float32 (statistics, learner and softmax)."""
        return "float64" if self.dtype == "float64" else "float32"

    @property
    def tdtype(self) -> torch.dtype:
        """The torch dtype of inputs and outputs."""
        return TORCH_DTYPES[self.dtype]

    @property
    def cdtype(self) -> torch.dtype:
        """The compute dtype (float64 for float64, else float32)."""
        return torch.float64 if self.dtype == "float64" else torch.float32

    def t(self, x, dtype: torch.dtype | None = None) -> torch.Tensor:
        """A NumPy array as a tensor on the device, rounded to ``dtype`` (default the impl's)."""
        return torch.as_tensor(np.asarray(x, dtype=np.float64)).to(
            device=self.device, dtype=dtype or self.tdtype
        )

    def heads(self, params: PLGAParams | list[PLGAParams]) -> kern.HeadParams:
        """Stacked head parameters in the compute dtype."""
        return kern.from_reference(params, self.device, self.cdtype)

    def _4d(self, x) -> torch.Tensor:
        return self.t(x)[None, None]

    def plga(self, q, k, v, params: PLGAParams | None, *, G=None, A=None, causal=True):
        """One head via ``plga_attention`` (B = H = 1)."""
        Gt = None if G is None else self.t(G, self.cdtype)
        At = None if A is None else self.t(A, self.cdtype)[None, None]
        out, ded = kern.plga_attention(
            self._4d(q), self._4d(k), self._4d(v),
            None if params is None else self.heads(params),
            causal=causal, G=Gt, A=At, return_deductive=True,
        )  # fmt: skip

        def sq(x):
            return None if x is None else x.reshape(x.shape[-2:])

        return HeadResult(out[0, 0], sq(ded.A), sq(ded.A_LM), sq(ded.A_P), sq(ded.G))

    def plga_batched(self, q, k, v, heads: list[PLGAParams], *, G=None) -> HeadResult:
        """One batched multi-head call on (B, H, S, dk) inputs (stacked results)."""
        out, ded = kern.plga_attention(
            self.t(q), self.t(k), self.t(v), self.heads(heads), causal=True,
            G=None if G is None else self.t(G, self.cdtype), return_deductive=True,
        )  # fmt: skip
        return HeadResult(out, ded.A, ded.A_LM, ded.A_P, ded.G)

    def collapsed(self, q, k, v, G, *, causal=True, precision="rounded") -> torch.Tensor:
        """``collapsed_attention``: SDPA on ``Q G`` (the fast path)."""
        out = kern.collapsed_attention(
            self._4d(q), self._4d(k), self._4d(v), self.t(G, self.cdtype),
            causal=causal, precision=precision,
        )  # fmt: skip
        return out[0, 0]

    def sdpa(self, q, k, v, *, causal=True) -> torch.Tensor:
        """``pyverify.kernels.sdpa`` (fused torch SDPA, mask aligned to the key end)."""
        return kern.sdpa(self._4d(q), self._4d(k), self._4d(v), causal=causal)[0, 0]

    def softmax(self, E, *, causal=False) -> torch.Tensor:
        """The attention rows of the fused SDPA path for scores ``E``.

        ``sdpa(Q=E, K=I, V=I, scale=1)``: ``Q K^T = E`` exactly (products with 1 and 0)
        and ``p V = p`` exactly, so this is the kernel's own masked softmax of ``E``.
        """
        E = np.asarray(E, dtype=np.float64)
        eye = self._4d(np.eye(E.shape[1]))
        return kern.sdpa(self._4d(E), eye, eye, causal=causal, scale=1.0)[0, 0]

    def scores(self, q, k, G) -> torch.Tensor:
        """``(Q G) K^T / sqrt(dk)`` with the kernels' ``Q G`` (``rotate_query``)."""
        q4, k4 = self._4d(q), self._4d(k)
        qg = rotate_query(q4, self.t(G, self.cdtype)[None, None])
        E = torch.matmul(qg.to(self.cdtype), k4.to(self.cdtype).transpose(-1, -2))
        return (E * q4.shape[-1] ** -0.5)[0, 0]

    def density(self, q) -> torch.Tensor:
        """``density_operator`` (B = H = 1)."""
        return kern.density_operator(self._4d(q))[0, 0]

    def layer_norm_rows(self, X, gamma, beta, eps) -> torch.Tensor:
        """The metric learner with no residual units: its row LayerNorm alone."""
        dk = np.asarray(X).shape[-1]
        z = torch.zeros(1, dk, dk, dtype=self.cdtype, device=self.device)
        hp = kern.HeadParams(
            ln0_gamma=self.t(gamma, self.cdtype), ln0_beta=self.t(beta, self.cdtype),
            reslayers=[], W=z, b=z, P=z, a=z, b_a=z, ln_eps=float(eps),
        )  # fmt: skip
        return kern.metric_learner(self.t(X, self.cdtype)[None, None], hp)[0, 0]

    def rope(self, x, *, offset: int = 0) -> torch.Tensor:
        """Rotate rows ``(..., S, dk)`` at positions ``offset ..`` (``kernels.apply_rope``)."""
        return kern.apply_rope(self.t(x), offset=offset)

    def rotation_matrix(self, n, dk: int) -> torch.Tensor:
        """``rope_matrix(n, dk)`` in the impl's dtype."""
        return kern.rope_matrix(n, dk, dtype=self.tdtype, device=self.device)

    def rot2(self, angle: float) -> torch.Tensor:
        """The 2 x 2 rotation: ``rope_matrix`` with dk = 2 (theta_0 = 1)."""
        return kern.rope_matrix(angle, 2, dtype=self.tdtype, device=self.device)

    def decoder(self, ref: Decoder) -> KernelsModel:
        """The decoder adapter (``PLGADecoder`` built from the reference's parameters)."""
        return KernelsModel(self, ref)


class KernelsModel:
    """:class:`~pyverify.kernels.model.PLGADecoder` behind the model interface (B = 1)."""

    def __init__(self, impl: KernelsPLGA, ref: Decoder) -> None:
        self.impl = impl
        self.model = kernel_decoder_from_reference(ref, impl.device, impl.tdtype)

    def _tok(self, tokens) -> torch.Tensor:
        return torch.as_tensor(np.asarray(tokens, dtype=np.int64), device=self.impl.device)[None]

    def _G(self, G) -> list[torch.Tensor]:
        return [self.impl.t(g, self.impl.cdtype) for g in G]

    def forward(self, tokens, G=None) -> torch.Tensor:
        """Logits ``(S, vocab)``: mode ``uncached``, or ``g_cached`` with ``G``."""
        if G is None:
            logits, _ = self.model.forward(self._tok(tokens))
        else:
            logits, _ = self.model.forward(self._tok(tokens), mode="g_cached", G=self._G(G))
        return logits[0]

    def collapsed(self, tokens, G) -> torch.Tensor:
        """Mode ``collapsed`` (SDPA on ``Q G*``)."""
        logits, _ = self.model.forward(self._tok(tokens), mode="collapsed", G=self._G(G))
        return logits[0]

    def deductive(self, tokens) -> list[list[HeadResult]]:
        """``deductive[layer][head]`` of an uncached forward."""
        _, deds = self.model.forward(self._tok(tokens))
        return [
            [
                HeadResult(empty_out(), d.A[0, h], d.A_LM[0, h], d.A_P[0, h], d.G[0, h])
                for h in range(d.G.shape[1])
            ]
            for d in deds
        ]

    def decode(self, prompt, rest, *, G=None, use_g_cache=True) -> np.ndarray:
        """``prefill`` then ``decode_step`` per token of ``rest``: ``(len(rest), vocab)``."""
        if G is None:
            _, cache = self.model.prefill(self._tok(prompt))
        else:
            _, cache = self.model.prefill(self._tok(prompt), mode="g_cached", G=self._G(G))
        logits = []
        for tok in rest:
            step, cache = self.model.decode_step(
                torch.tensor([int(tok)], device=self.impl.device), cache, use_g_cache=use_g_cache
            )
            logits.append(step[0].detach().to("cpu", torch.float64).numpy())
        return np.array(logits)


def kernels(device: str = "cpu", dtype: str = "float64") -> KernelsPLGA:
    """Factory of the kernels plugin at one device and dtype."""
    return KernelsPLGA(device, dtype)
