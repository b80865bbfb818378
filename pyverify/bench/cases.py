"""What each benchmark row times: its callables, built once per shape.

The rows (:mod:`~pyverify.bench.run`, :mod:`~pyverify.bench.author_rows`) time these
pairs interleaved, and :mod:`~pyverify.bench.breakdown` profiles the very same
callables, so that a profile always explains a row's figure. Every builder returns a
dict of zero-argument callables; ``"ours"`` is the project's side, the other keys the
baselines the row divides by.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.bench.rows import A_DFF, DK, N_DENSE, N_RES, H

__all__ = [
    "Fns",
    "collapsed_case",
    "decode_case",
    "gcached_case",
    "learner_case",
    "shared_params",
    "uncached_case",
    "weight_products",
]

Fns = dict[str, Callable[[], Any]]


def shared_params(device: torch.device, dtype: torch.dtype, seed: int = 0):
    """Head parameters of one layer in the shared-learner form (v51 sizes)."""
    from pyverify.kernels.params import from_reference
    from pyverify.reference import PLGAParams

    heads = [PLGAParams.random(DK, A_DFF, N_RES, N_DENSE, seed=seed + h) for h in range(H)]
    h0 = heads[0]
    heads = [
        dataclasses.replace(h, ln0_gamma=h0.ln0_gamma, ln0_beta=h0.ln0_beta, reslayers=h0.reslayers)
        for h in heads
    ]
    return from_reference(heads, device, dtype, shared=True)


def _qkv(B: int, S: int, device, dtype, seed: int, scale: float = 1.0) -> list[torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(seed)
    return [(torch.randn(B, H, S, DK, generator=g) * scale).to(device, dtype) for _ in "qkv"]


def _operator(seed: int, device, dtype) -> torch.Tensor:
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.eye(DK) + 0.1 * torch.randn(H, DK, DK, generator=g)).to(device, dtype)


def collapsed_case(device, dtype, B: int, S: int) -> Fns:
    """P1: the collapsed head (SDPA on ``Q G``) and plain causal SDPA."""
    from pyverify.kernels.collapsed import collapsed_attention

    G = _operator(1, device, dtype)
    q, k, v = _qkv(B, S, device, dtype, 11)
    return {
        "ours": lambda: collapsed_attention(q, k, v, G),
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    }


def gcached_case(device, dtype, B: int, S: int) -> Fns:
    """Gc: the G-cached head (``plga_attention(..., G=G)``) and plain causal SDPA."""
    from pyverify.kernels.head import plga_attention

    G = _operator(5, device, dtype)
    q, k, v = _qkv(B, S, device, dtype, 15)
    return {
        "ours": lambda: plga_attention(q, k, v, None, G=G),
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    }


def uncached_case(device, dtype, B: int, S: int) -> Fns:
    """P2: the uncached layer, ours and the re-creation of the author's."""
    from pyverify.kernels.baseline import look_ahead_mask, plga_attention_author
    from pyverify.kernels.head import plga_attention

    params = shared_params(device, dtype)
    q, k, v = _qkv(B, S, device, dtype, 2, scale=DK**-0.5)
    mask = look_ahead_mask(S, dtype, device)
    return {
        "ours": lambda: plga_attention(q, k, v, params),
        "author": lambda: plga_attention_author(q, k, v, params, mask),
    }


def _learner_gemms(N: int, device, dtype) -> Callable[[], torch.Tensor]:
    a = torch.randn(N, DK, device=device, dtype=dtype)
    w1 = torch.randn(DK, A_DFF, device=device, dtype=dtype)
    h = torch.randn(N, A_DFF, device=device, dtype=dtype)
    w3 = torch.randn(A_DFF, DK, device=device, dtype=dtype)

    def gemms() -> torch.Tensor:
        out = a
        for _ in range(N_RES * N_DENSE):
            torch.mm(a, w1)
            torch.mm(a, w1)
            out = torch.mm(h, w3)
        return out

    return gemms


def learner_case(device, dtype, B: int) -> Fns:
    """L: the shared metric learner on B*H*dk rows and the bare GEMMs of its sizes."""
    from pyverify.kernels.metric import metric_learner_rows

    params = shared_params(device, dtype)
    g = torch.Generator(device="cpu").manual_seed(4)
    X = torch.randn(H, B * DK, DK, generator=g).to(device, dtype)
    return {
        "ours": lambda: metric_learner_rows(X, params),
        "gemms": _learner_gemms(B * H * DK, device, dtype),
    }


def decode_case(device, dtype, B: int, ctx: int, layers: int) -> Fns:
    """P3: one G-cached decode step, ours and the author-style one; the weights alone; full.

    ``"weights"`` is :func:`weight_products`; ``"full"`` the forward pass over the
    context and the token.
    """
    from pyverify.kernels.baseline import author_decode_step, author_prefill_cache
    from pyverify.kernels.model import from_reference
    from pyverify.reference.model import DecoderParams

    ref = DecoderParams.random(
        vocab=1000, d_model=H * DK, num_heads=H, num_layers=layers, dff=2048,
        a_dff=A_DFF, num_reslayer=N_RES, num_dense=N_DENSE, seed=3,
    )  # fmt: skip
    model = from_reference(ref, device, dtype)
    toks = torch.as_tensor(np.random.default_rng(3).integers(0, 1000, (B, ctx + 1)))
    toks = toks.to(device)
    with torch.inference_mode():
        _, cache = model.prefill(toks[:, :ctx])
        acache = author_prefill_cache(cache)
        model.decode_step(toks[:, ctx], cache)  # allocates the KV buffers once

    def ours():
        cache.truncate(ctx)
        return model.decode_step(toks[:, ctx], cache)

    return {
        "ours": ours,
        "author": lambda: author_decode_step(model, toks[:, ctx], acache),
        "weights": weight_products(model, B),
        "full": lambda: model.forward(toks),
    }


def weight_products(model: Any, B: int) -> Callable[[], Any]:
    """The step's products with every weight matrix, nothing else: a floor for any step.

    A decode step must read each weight once; at small B that traffic, not the
    attention over the cache, bounds the step (both ours and the author's). Each
    matrix is multiplied on its own, as the author's step does, in the form this
    machine runs fastest (:func:`pyverify.kernels.linear.few_rows_form`, as the step).
    """
    from pyverify.kernels.linear import linear_into

    p = model.params
    dev, dt = p.emb.device, p.emb.dtype
    x = torch.randn(B, p.d_model, device=dev, dtype=dt)
    xf = torch.randn(B, p.layers[0].ffn.W3.shape[0], device=dev, dtype=dt)
    work = []
    for lp in p.layers:
        f = lp.ffn
        for W, bias, inp in (
            (lp.Wq, lp.bq, x), (lp.Wk, lp.bk, x), (lp.Wv, lp.bv, x), (lp.Wo, lp.bo, x),
            (f.W1, f.b1, x), (f.W2, f.b2, x), (f.W3, f.b3, xf),
        ):  # fmt: skip
            work.append((inp, W, bias))
    work.append((x, p.Wf, p.bf))
    outs = [x.new_empty(B, W.shape[1]) for _, W, _ in work]
    scratch = [x.new_empty(W.shape[1], B) for _, W, _ in work]

    def products() -> torch.Tensor:
        for (inp, W, bias), out, t in zip(work, outs, scratch, strict=True):
            linear_into(inp, W, bias, out, t)
        return outs[-1]

    return products
