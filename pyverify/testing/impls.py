"""The implementations under test, behind one adapter interface.

Every property test takes an ``impl`` parameter: an object with ``name`` ("reference" or
"kernels"), ``device`` and ``dtype`` (strings) and the methods below, so that one test body
checks one statement on the float64 NumPy reference and on the optimised torch kernels
(every available device and dtype). Inputs are NumPy float64 arrays; the kernels round
them to their dtype on entry, and every result comes back as a NumPy float64 array.

Tolerances are derived from the unit round-off of the dtype that does the arithmetic
(``impl.u_compute``: float64 for float64, else float32, as the kernels compute statistics,
the metric learner and softmax in float32) and of the dtype results are rounded to
(``impl.u_io``), times the conditioning of the computation; see :func:`attention_bound`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import pyverify.kernels as kern
from pyverify.crosscheck import available_devices
from pyverify.kernels.head import rotate_query
from pyverify.kernels.model import from_reference as kernel_decoder_from_reference
from pyverify.precision import TORCH_DTYPES, UNIT_ROUNDOFF, compute_roundoff, gamma
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
from pyverify.reference.params import SWIGLU_FIELDS


@dataclass(frozen=True)
class Impl:
    """Common part of the adapters: identity, round-off, rounding of inputs."""

    name: str
    device: str
    dtype: str

    def __str__(self) -> str:
        return f"{self.name}-{self.device}-{self.dtype}"

    @property
    def u_io(self) -> float:
        """Unit round-off of the input/output dtype."""
        return UNIT_ROUNDOFF[self.dtype]

    @property
    def u_compute(self) -> float:
        """Unit round-off of the arithmetic (float64 for float64, else float32)."""
        return compute_roundoff(self.dtype)

    def round(self, x: Any) -> np.ndarray:
        """``x`` rounded to the implementation's dtype (returned as float64)."""
        t = torch.as_tensor(np.asarray(x, dtype=np.float64)).to(TORCH_DTYPES[self.dtype])
        return t.to(torch.float64).numpy()

    def hold(self, x: Any) -> Any:
        """``x`` as the implementation holds it in its compute dtype (float64: as given)."""
        x64 = np.asarray(x, dtype=np.float64)
        if self.u_compute != UNIT_ROUNDOFF["float64"]:
            x64 = x64.astype(np.float32).astype(np.float64)
        return float(x64) if x64.ndim == 0 else x64


def map_head_arrays(params: PLGAParams, fn: Any) -> PLGAParams:
    """``params`` with ``fn`` applied to every array (the learner's, ``W, b, P, a, b_a``)."""
    units = [
        dataclasses.replace(
            un,
            dense=[
                dataclasses.replace(b, **{f: fn(getattr(b, f)) for f in SWIGLU_FIELDS})
                for b in un.dense
            ],
            ln_gamma=fn(un.ln_gamma),
            ln_beta=fn(un.ln_beta),
        )
        for un in params.reslayers
    ]
    head = ("ln0_gamma", "ln0_beta", "W", "b", "P", "a", "b_a")
    return dataclasses.replace(params, reslayers=units, **{f: fn(getattr(params, f)) for f in head})


def params_as_used(impl: Impl, params: PLGAParams) -> PLGAParams:
    """The head parameters as the kernels hold them (:meth:`Impl.hold`, epsilons too)."""
    held = map_head_arrays(params, impl.hold)
    return dataclasses.replace(
        held, ln_eps=impl.hold(params.ln_eps), metric_eps=impl.hold(params.metric_eps)
    )


def attention_bound(impl: Impl, q, G, k, v) -> float:
    """Absolute forward-error bound of one evaluation of ``softmax(Q G K^T / sqrt(dk)) V``.

    For inputs already representable in ``impl.dtype`` (``impl.round``), first order:

    * scores ``E = (Q G) K^T / sqrt(dk)`` are two chained dot products of length dk, so
      ``|dE| <= gamma_{2dk+1}(u_c) (|Q| |G| |K|^T)/sqrt(dk)`` entrywise (u_c = compute
      round-off; bf16/fp16 ``Q G`` enters SDPA split into hi + lo parts, exact to
      ``u_io^2 <= u_c``; the +1 is the scale);
    * softmax rows move by ``||dp||_1 <= 2 max|dE|`` (its Jacobian ``diag(p) - p p^T``
      has induced inf->1 norm <= 2), so ``|d(pV)| <= 2 max|dE| max|V|``;
    * exp, the normaliser and ``p V`` (length S_k sums) add ``gamma_{S_k+4}(u_c) max|V|``;
    * rounding ``p`` to the input dtype for the ``p V`` product (fused low-precision
      kernels) and the output to ``impl.dtype`` add ``2 u_io max|V|``.

    Parameters
    ----------
    impl : Impl
        The implementation (gives the round-offs).
    q, G, k, v : array_like
        The (rounded) operands; ``G`` may be None for the identity.

    Returns
    -------
    float
        The bound on ``max |computed - exact|``.
    """
    q, k, v = (np.abs(np.asarray(x, dtype=np.float64)) for x in (q, k, v))
    dk = q.shape[-1]
    Ga = np.eye(dk) if G is None else np.abs(np.asarray(G, dtype=np.float64))
    m_scores = float(np.max(q @ Ga @ k.T) / np.sqrt(dk)) if q.size and k.size else 0.0
    vmax = float(np.max(v)) if v.size else 0.0
    uc = impl.u_compute
    s_k = k.shape[0]
    low = 2 * impl.u_io if impl.dtype in ("bfloat16", "float16") else 0.0
    return (
        2 * gamma(2 * dk + 1, uc) * m_scores * vmax
        + (gamma(s_k + 4, uc) + low) * vmax
        + (impl.u_io * vmax)
    )


def model_tolerance(impl: Impl, ref: Decoder, n_tokens: int, G=None) -> float:
    """Relative bound (of ``max|logits|``) between two evaluations of one decoder.

    Per layer a row passes through about 8 dependent backward-stable stages (Q/K/V
    projections, Q G K^T, softmax, p V, W_o, LayerNorm, two FFN products, LayerNorm), each
    an inner product of length <= n = max(d_model, dff, S, dk) with relative error
    gamma_n(u_c); the weights are N(0, 1/fan_in) (norm preserving on average) and every
    stage ends in a LayerNorm of unit-variance rows, so errors add rather than compound:
    8 (L + 1) gamma_n(u_c) per evaluation (the +1 is the embedding LayerNorm and the logit
    projection), doubled for the two evaluations compared. The score error is relative to
    ``|q| |G| |k|``: an operator G (list of per-layer ``(H, dk, dk)``) of 2-norm above 1
    scales the bound by its largest 2-norm.
    """
    p = ref.params
    mha = p.layers[0].mha
    n = max(p.d_model, p.layers[0].ffn.W1.shape[1], n_tokens, mha.dk)
    g_norm = 1.0
    if G is not None:
        g_norm = max(1.0, *(float(np.linalg.norm(g, ord=2, axis=(-2, -1)).max()) for g in G))
    return 2 * 8 * (len(p.layers) + 1) * gamma(n, impl.u_compute) * g_norm


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class HeadOut:
    """One head's results as NumPy float64 (``weights``/``E`` only where observable)."""

    out: np.ndarray
    A: np.ndarray | None
    A_LM: np.ndarray | None
    A_P: np.ndarray | None
    G: np.ndarray
    weights: np.ndarray | None = None
    E: np.ndarray | None = None


def _np(x: Any) -> np.ndarray | None:
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


# --------------------------------------------------------------------------- reference
@dataclass(frozen=True)
class ReferenceImpl(Impl):
    """The float64 NumPy reference (``pyverify.reference``)."""

    def plga(self, q, k, v, params: PLGAParams, *, G=None, A=None, causal=True) -> HeadOut:
        """One head: ``plga_forward_full`` (uncached, ``A=`` or ``G=`` cached)."""
        r = plga_forward_full(q, k, v, params, causal, G=G, A=A)
        d = r.ded
        return HeadOut(r.out, d.A, d.A_LM, d.A_P, d.G, r.weights, r.E)

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

    def rope(self, x, *, offset: int = 0) -> np.ndarray:
        """Rotate rows ``(..., S, dk)`` at positions ``offset ..``."""
        return apply_rope(x, offset=offset)

    def rotation_matrix(self, n, dk: int) -> np.ndarray:
        """Block-diagonal ``R_n``."""
        return rotation_matrix(n, dk)

    def rot2(self, angle: float) -> np.ndarray:
        """The 2 x 2 rotation by ``angle``."""
        return rot2(angle)

    def deductive(self, q, params: PLGAParams) -> HeadOut:
        """Steps 1-6 on ``q`` (values and output are a by-product)."""
        q = np.asarray(q, dtype=np.float64)
        return self.plga(q, q, q, params)

    def plga_batched(self, q, k, v, heads: list[PLGAParams], *, G=None) -> list[list[HeadOut]]:
        """(B, H, S, dk) inputs, one parameter set per head: ``[b][h]`` results."""
        r = plga_forward_batched(q, k, v, heads, True, G=G)

        def one(b, h):
            parts = (None if x is None else x[b, h] for x in r.ded)
            return HeadOut(r.out[b, h], *parts, r.weights[b, h], r.E[b, h])

        return [[one(b, h) for h in range(r.out.shape[1])] for b in range(r.out.shape[0])]

    def energy(self, A, params: PLGAParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps 4-6 from the metric-learner output ``A``: ``(A_LM, A_P, G)``."""
        A_LM = nh.metric_tensor(A, params.W, params.b, params.metric_eps)
        A_P = nh.power_law(A_LM, params.P)
        return A_LM, A_P, nh.energy_curvature(A_P, params.a, params.b_a)

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


# --------------------------------------------------------------------------- kernels
@dataclass(frozen=True)
class KernelsImpl(Impl):
    """The optimised torch kernels (``pyverify.kernels``) on one device and dtype."""

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

    def plga(self, q, k, v, params: PLGAParams | None, *, G=None, A=None, causal=True) -> HeadOut:
        """One head via ``plga_attention`` (B = H = 1)."""
        Gt = None if G is None else self.t(G, self.cdtype)
        At = None if A is None else self.t(A, self.cdtype)[None, None]
        out, ded = kern.plga_attention(
            self._4d(q),
            self._4d(k),
            self._4d(v),
            None if params is None else self.heads(params),
            causal=causal,
            G=Gt,
            A=At,
            return_deductive=True,
        )

        def sq(x):
            return None if x is None else _np(x.reshape(x.shape[-2:]))

        return HeadOut(_np(out[0, 0]), sq(ded.A), sq(ded.A_LM), sq(ded.A_P), sq(ded.G))

    def plga_batched(self, q, k, v, heads: list[PLGAParams], *, G=None) -> list[list[HeadOut]]:
        """One batched multi-head call on (B, H, S, dk) inputs: ``[b][h]`` results."""
        out, ded = kern.plga_attention(
            self.t(q), self.t(k), self.t(v), self.heads(heads), causal=True,
            G=None if G is None else self.t(G, self.cdtype), return_deductive=True,
        )  # fmt: skip

        def sl(x, b, h):
            return None if x is None else _np(x.expand(*out.shape[:2], *x.shape[-2:])[b, h])

        def one(b, h):
            parts = (sl(getattr(ded, n), b, h) for n in ("A", "A_LM", "A_P", "G"))
            return HeadOut(_np(out[b, h]), *parts)

        return [[one(b, h) for h in range(out.shape[1])] for b in range(out.shape[0])]

    def collapsed(self, q, k, v, G, *, causal=True, precision="rounded") -> np.ndarray:
        """``collapsed_attention``: SDPA on ``Q G`` (the fast path)."""
        out = kern.collapsed_attention(
            self._4d(q),
            self._4d(k),
            self._4d(v),
            self.t(G, self.cdtype),
            causal=causal,
            precision=precision,
        )
        return _np(out[0, 0])

    def sdpa(self, q, k, v, *, causal=True) -> np.ndarray:
        """``pyverify.kernels.sdpa`` (fused torch SDPA, mask aligned to the key end)."""
        return _np(kern.sdpa(self._4d(q), self._4d(k), self._4d(v), causal=causal)[0, 0])

    def softmax(self, E, *, causal=False) -> np.ndarray:
        """The attention rows of the fused SDPA path for scores ``E``.

        ``sdpa(Q=E, K=I, V=I, scale=1)``: ``Q K^T = E`` exactly (products with 1 and 0)
        and ``p V = p`` exactly, so this is the kernel's own masked softmax of ``E``.
        """
        E = np.asarray(E, dtype=np.float64)
        s_k = E.shape[1]
        eye = self._4d(np.eye(s_k))
        return _np(kern.sdpa(self._4d(E), eye, eye, causal=causal, scale=1.0)[0, 0])

    def scores(self, q, k, G) -> np.ndarray:
        """``(Q G) K^T / sqrt(dk)`` with the kernels' ``Q G`` (``rotate_query``)."""
        q4, k4 = self._4d(q), self._4d(k)
        qg = rotate_query(q4, self.t(G, self.cdtype)[None, None])
        E = torch.matmul(qg.to(self.cdtype), k4.to(self.cdtype).transpose(-1, -2))
        return _np((E * q4.shape[-1] ** -0.5)[0, 0])

    def rope(self, x, *, offset: int = 0) -> np.ndarray:
        """Rotate rows ``(..., S, dk)`` at positions ``offset ..`` (``kernels.apply_rope``)."""
        return _np(kern.apply_rope(self.t(x), offset=offset))

    def rotation_matrix(self, n, dk: int) -> np.ndarray:
        """``rope_matrix(n, dk)`` in the impl's dtype."""
        return _np(kern.rope_matrix(n, dk, dtype=self.tdtype, device=self.device))

    def rot2(self, angle: float) -> np.ndarray:
        """The 2 x 2 rotation: ``rope_matrix`` with dk = 2 (theta_0 = 1)."""
        return _np(kern.rope_matrix(angle, 2, dtype=self.tdtype, device=self.device))

    def deductive(self, q, params: PLGAParams) -> HeadOut:
        """Steps 1-6 (``compute_g``) on ``q``."""
        d = kern.compute_g(self._4d(q), self.heads(params))
        return HeadOut(
            np.zeros((0,)), _np(d.A[0, 0]), _np(d.A_LM[0, 0]), _np(d.A_P[0, 0]), _np(d.G[0, 0])
        )

    def energy(self, A, params: PLGAParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps 4-6 (``energy_curvature``) from ``A``: ``(A_LM, A_P, G)``."""
        A_LM, A_P, G = kern.energy_curvature(self.t(A, self.cdtype)[None, None], self.heads(params))
        return _np(A_LM[0, 0]), _np(A_P[0, 0]), _np(G[0, 0])

    def decoder(self, ref: Decoder) -> KernelsModel:
        """The decoder adapter (``PLGADecoder`` built from the reference's parameters)."""
        return KernelsModel(self, ref)


class KernelsModel:
    """:class:`~pyverify.kernels.model.PLGADecoder` behind the model interface (B = 1)."""

    def __init__(self, impl: KernelsImpl, ref: Decoder) -> None:
        self.impl = impl
        self.model = kernel_decoder_from_reference(ref, impl.device, impl.tdtype)

    def _tok(self, tokens) -> torch.Tensor:
        return torch.as_tensor(np.asarray(tokens, dtype=np.int64), device=self.impl.device)[None]

    def _G(self, G) -> list[torch.Tensor]:
        return [self.impl.t(g, self.impl.cdtype) for g in G]

    def forward(self, tokens, G=None) -> np.ndarray:
        """Logits ``(S, vocab)``: mode ``uncached``, or ``g_cached`` with ``G``."""
        if G is None:
            logits, _ = self.model.forward(self._tok(tokens))
        else:
            logits, _ = self.model.forward(self._tok(tokens), mode="g_cached", G=self._G(G))
        return _np(logits[0])

    def collapsed(self, tokens, G) -> np.ndarray:
        """Mode ``collapsed`` (SDPA on ``Q G*``)."""
        logits, _ = self.model.forward(self._tok(tokens), mode="collapsed", G=self._G(G))
        return _np(logits[0])

    def deductive(self, tokens) -> list[list[Any]]:
        """``deductive[layer][head]`` (NumPy ``HeadOut``) of an uncached forward."""
        _, deds = self.model.forward(self._tok(tokens))
        return [
            [
                HeadOut(
                    np.zeros(0), _np(d.A[0, h]), _np(d.A_LM[0, h]), _np(d.A_P[0, h]), _np(d.G[0, h])
                )
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
            logits.append(_np(step[0]))
        return np.array(logits)


# --------------------------------------------------------------------------- the lists
REFERENCE = ReferenceImpl("reference", "cpu", "float64")
DEVICES = available_devices()


def kernels(*dtypes: str) -> list[KernelsImpl]:
    """Kernel adapters for ``dtypes`` (default all four) on every available device."""
    dts = dtypes or ("float64", "float32", "bfloat16", "float16")
    return [KernelsImpl("kernels", dev, dt) for dev in DEVICES for dt in dts]


#: Every implementation and dtype.
ALL: list[Impl] = [REFERENCE, *kernels()]
#: The reference and the kernels in float64/float32 (where a low-precision bound would
#: be too coarse to say anything).
FLOAT: list[Impl] = [REFERENCE, *kernels("float64", "float32")]


def impl_ids(impl: Impl) -> str:
    """Pytest id of an implementation: ``name-device-dtype``."""
    return str(impl)
