"""The benchmark rows against the paper author's formulation (``pyverify bench``).

Each function appends rows (see :func:`pyverify.bench._row`) and prints them:

* ``P2 ours/author``: uncached PLGA layer, ours
  (:func:`pyverify.kernels.plga_attention`, shared learner) / a faithful
  re-creation of ``pldr_model_v510``'s layer
  (:func:`pyverify.kernels.baseline.plga_attention_author`); target 0.9 at
  S <= 512, 0.5 at S >= 1024; peak extra memory of one call beside the time;
* ``L learner/GEMM``: the shared metric learner alone (steps 2-3 on B*H*dk
  rows) / the bare GEMMs of the same sizes; its FLOP rate is printed beside the
  GEMM rate; target: rate >= 60 % of the GEMM rate, i.e. time ratio <= 1/0.6;
* ``P3 decode ours/author``: one G-cached decoding step of the whole model,
  ours (KV written into preallocated buffers) / the author-style step (KV
  extended with ``torch.cat``); target 0.7. Beside it, the floor: the step's
  products with every weight matrix alone / the author's step (no step that
  reads every weight once can go below it); and ``P3 decode KV+G/full``: the
  same step / the full forward pass over the context plus the token (target 1/3);
* ``Gc G-cached/SDPA``: the G-cached layer (SDPA on ``Q G``) / plain causal
  SDPA; target ``1 + 1.5 dk / S`` (the ``Q G`` product is intrinsic).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.bench.memory import peak_extra_bytes
from pyverify.bench.rows import A_DFF, DK, N_DENSE, N_RES, H, row_line
from pyverify.output import Progress

__all__ = [
    "bench_gcached",
    "bench_learner",
    "bench_p2_author",
    "bench_p3_author",
    "shared_params",
]


RowFn = Callable[..., dict[str, Any]]


def shared_params(device: torch.device, dtype: torch.dtype, seed: int = 0):
    """Head parameters of one layer in the shared-learner form (v51 sizes)."""
    import dataclasses

    from pyverify.kernels.params import from_reference
    from pyverify.reference import PLGAParams

    heads = [PLGAParams.random(DK, A_DFF, N_RES, N_DENSE, seed=seed + h) for h in range(H)]
    h0 = heads[0]
    heads = [
        dataclasses.replace(h, ln0_gamma=h0.ln0_gamma, ln0_beta=h0.ln0_beta, reslayers=h0.reslayers)
        for h in heads
    ]
    return from_reference(heads, device, dtype, shared=True)


def _mib(n: int) -> float:
    return round(n / 2**20, 3)


def bench_p2_author(device, dtype, shapes, reps, say: Progress, rows, row: RowFn, timer) -> None:
    """P2: uncached layer, ours / the author's formulation; peak memory beside."""
    from pyverify.kernels.baseline import look_ahead_mask, plga_attention_author
    from pyverify.kernels.head import plga_attention

    params = shared_params(device, dtype)
    g = torch.Generator(device="cpu").manual_seed(2)
    for B, S in shapes:
        q, k, v = (
            (torch.randn(B, H, S, DK, generator=g) / DK**0.5).to(device, dtype) for _ in "qkv"
        )
        mask = look_ahead_mask(S, dtype, device)

        def ours(q=q, k=k, v=v):
            return plga_attention(q, k, v, params)

        def author(q=q, k=k, v=v, mask=mask):
            return plga_attention_author(q, k, v, params, mask)

        o, b = timer(ours, author, device, reps=reps, max_seconds=30)
        r = row("P2 ours/author", [B, H, S, DK], dtype, device, o, b, 0.9 if S <= 512 else 0.5)
        r["ours_peak_mib"] = _mib(peak_extra_bytes(ours, device))
        r["baseline_peak_mib"] = _mib(peak_extra_bytes(author, device))
        rows.append(r)
        say(row_line(r))


def _learner_gemms(N: int, device, dtype):
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


def bench_learner(device, dtype, batches, reps, say: Progress, rows, row: RowFn, timer) -> None:
    """L: shared learner alone vs the bare GEMMs of the same sizes (FLOP rates)."""
    from pyverify.kernels.metric import metric_learner_rows as _metric_learner_rows

    params = shared_params(device, dtype)
    g = torch.Generator(device="cpu").manual_seed(4)
    for B in batches:
        N = B * H * DK
        X = torch.randn(H, B * DK, DK, generator=g).to(device, dtype)
        gemms = _learner_gemms(N, device, dtype)
        o, b = timer(lambda X=X: _metric_learner_rows(X, params), gemms, device, reps=reps)
        flops = 6.0 * N * DK * A_DFF * N_RES * N_DENSE
        r = row("L learner/GEMM", [N, DK, A_DFF], dtype, device, o, b, 1 / 0.6)
        r["learner_gflops"] = round(flops / o / 1e6, 3)
        r["gemm_gflops"] = round(flops / b / 1e6, 3)
        r["rate_fraction"] = round(b / o, 4)
        rows.append(r)
        say(row_line(r))


def bench_p3_author(device, dtype, configs, reps, say: Progress, rows, row: RowFn, timer) -> None:
    """P3: one G-cached decode step, ours / the author-style step (KV by torch.cat)."""
    from pyverify.kernels.baseline import author_decode_step, author_prefill_cache
    from pyverify.kernels.model import from_reference
    from pyverify.reference.model import DecoderParams

    for B, ctx, layers in configs:
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

        def ours(cache=cache, model=model, toks=toks, ctx=ctx):
            cache.truncate(ctx)
            return model.decode_step(toks[:, ctx], cache)

        def author(model=model, toks=toks, ctx=ctx, acache=acache):
            return author_decode_step(model, toks[:, ctx], acache)

        o, b = timer(ours, author, device, reps=reps, max_seconds=30)
        shape = {"B": B, "context": ctx, "layers": layers, "H": H, "dk": DK}
        r = row("P3 decode ours/author", shape, dtype, device, o, b, 0.7)
        w, b2 = timer(_weight_products(model, B), author, device, reps=reps, max_seconds=30)
        r["weights_only_ms"] = round(w, 4)
        r["floor_ratio"] = round(w / b2, 4)
        rows.append(r)
        say(row_line(r))
        o, b = timer(ours, lambda m=model, t=toks: m.forward(t), device, reps=reps, max_seconds=30)
        rows.append(row("P3 decode KV+G/full", shape, dtype, device, o, b, 1 / 3))
        say(row_line(rows[-1]))


def _weight_products(model, B: int) -> Callable[[], Any]:
    """The step's products with every weight matrix, nothing else: a floor for any step.

    A decode step must read each weight once; at small B that traffic, not the
    attention over the cache, bounds the step (both ours and the author's).
    """
    from pyverify.kernels.model import _linear

    p = model.params
    x = torch.randn(B, 1, p.d_model, device=p.emb.device, dtype=p.emb.dtype)
    xf = torch.randn(B, 1, p.layers[0].ffn.W3.shape[0], device=x.device, dtype=x.dtype)

    def products() -> torch.Tensor:
        for lp in p.layers:
            for W, bias in ((lp.Wq, lp.bq), (lp.Wk, lp.bk), (lp.Wv, lp.bv), (lp.Wo, lp.bo)):
                _linear(x, W, bias)
            _linear(x, lp.ffn.W1, lp.ffn.b1)
            _linear(x, lp.ffn.W2, lp.ffn.b2)
            _linear(xf, lp.ffn.W3, lp.ffn.b3)
        return _linear(x, p.Wf, p.bf)

    return products


def bench_gcached(device, dtype, shapes, reps, say: Progress, rows, row: RowFn, timer) -> None:
    """Gc: G-cached layer / plain causal SDPA, target 1 + 1.5 dk / S."""
    from pyverify.kernels.head import plga_attention

    g = torch.Generator(device="cpu").manual_seed(5)
    G = (torch.eye(DK) + 0.1 * torch.randn(H, DK, DK, generator=g)).to(device, dtype)
    for B, S in shapes:
        q, k, v = (torch.randn(B, H, S, DK, generator=g).to(device, dtype) for _ in "qkv")
        o, b = timer(
            lambda q=q, k=k, v=v: plga_attention(q, k, v, None, G=G),
            lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            device,
            reps=reps,
            max_seconds=20,
        )
        r = row("Gc G-cached/SDPA", [B, H, S, DK], dtype, device, o, b, 1 + 1.5 * DK / S)
        rows.append(r)
        say(row_line(r))
