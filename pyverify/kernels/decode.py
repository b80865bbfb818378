"""One decoding step of :class:`~pyverify.kernels.model.PLGADecoder`, near the weight floor.

A step on B new rows reads every weight matrix once; at small B that traffic, not the
attention over the cache, bounds it (``pyverify bench`` row P3 times the weight
products alone beside it). So the step does little besides those products. Per layer:

1. ``[q k v] = x [W_q W_k W_v] + [b_q b_k b_v]``: ONE product (the three projections
   are stored side by side, :mod:`pyverify.kernels.linear`) into a row buffer
   preallocated once per cache;
2. RoPE on q and k together: one complex product with the row of position ``L`` of a
   table of rotations (:class:`~pyverify.kernels.rope.RopeTable`), in place;
3. the key and value rows into the cache's buffer: one copy
   (:meth:`~pyverify.kernels.cache.LayerCache.append_pair`);
4. ``q G`` and SDPA over the ``L + 1`` cached rows (no mask: every key is allowed);
5. the output projection, residual and LayerNorm; the SwiGLU's ``[W_1 W_2]`` as one
   product, SiLU and the gate product in place, ``W_3``, residual and LayerNorm.

No loop over heads, no copy of the cache, no tensor that grows with the context: the
rows above live in :attr:`~pyverify.kernels.cache.DecoderCache.scratch`, and what the
step still allocates is a few (B, d) results (the LayerNorms', SDPA's, the checks'
reductions) and the logits it returns.

Checks, the same as a step that checks after every stage: the new q, k and v rows must
be finite ("layer i q"), no score may overflow (``[scores]``, from ``|q G|`` and the
cache's running bound on ``|k_j|``), and the logits must be finite. They are gathered
per layer without a host synchronisation and read ONCE, at the end of the step; only
when one fails are the layers gone through again in order
(:func:`_raise_first_failure`), which raises the error the first failing check names
(or finds that an over-estimated score bound was a false alarm). A failed step leaves
the cache as it was, its key bounds included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

import pyverify.kernels.validation as kval
from pyverify.kernels.cache import DecoderCache
from pyverify.kernels.head import Precision, rotate_query, sdpa_qg
from pyverify.kernels.linear import fused, linear, linear_into
from pyverify.kernels.metric import energy_curvature
from pyverify.kernels.rope import RopeTable

__all__ = ["decode_rows", "layer_blocks"]


Pair = tuple[torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class LayerBlocks:
    """A layer's fused weight blocks (None where the parts are not stored side by side)."""

    qkv: Pair | None
    w12: Pair | None


def _pair(Ws: list[torch.Tensor], bs: list[torch.Tensor]) -> Pair | None:
    W, b = fused(Ws), fused(bs)
    return None if W is None or b is None else (W, b)


def layer_blocks(lp: Any) -> LayerBlocks:
    """The fused ``[W_q W_k W_v]`` and ``[W_1 W_2]`` of a ``LayerParams``, where stored so."""
    f = lp.ffn
    return LayerBlocks(
        qkv=_pair([lp.Wq, lp.Wk, lp.Wv], [lp.bq, lp.bk, lp.bv]),
        w12=_pair([f.W1, f.W2], [f.b1, f.b2]),
    )


@dataclass
class _Plan:
    """What a model's steps share: each layer's weights (fused where stored so), RoPE tables."""

    params: Any
    layers: list[tuple[Any, ...]]
    tables: dict[Any, RopeTable] = field(default_factory=dict)

    def table(self, dk: int, base: float, cdt: torch.dtype, device: torch.device) -> RopeTable:
        key = (dk, base, cdt, device)
        if key not in self.tables:
            self.tables[key] = RopeTable(dk, base, cdt, device)
        return self.tables[key]


def _layer_weights(lp: Any) -> tuple[Any, ...]:
    """``(qkv, Wo, bo, ln1_gamma, ln1_beta, w12, W3, b3, ln2_gamma, ln2_beta)``.

    ``qkv`` and ``w12`` are lists of ``(W, b, first column, last column)``: one entry
    for a fused block, else one per part.
    """
    blk, f = layer_blocks(lp), lp.ffn
    D, dff = lp.Wq.shape[1], f.W1.shape[1]
    qkv = [(*blk.qkv, 0, 3 * D)] if blk.qkv else [
        (W, b, i * D, (i + 1) * D)
        for i, (W, b) in enumerate(((lp.Wq, lp.bq), (lp.Wk, lp.bk), (lp.Wv, lp.bv)))
    ]  # fmt: skip
    w12 = (
        [(*blk.w12, 0, 2 * dff)] if blk.w12 else [(f.W1, f.b1, 0, dff), (f.W2, f.b2, dff, 2 * dff)]
    )
    return (qkv, lp.Wo, lp.bo, lp.ln1_gamma, lp.ln1_beta, w12, f.W3, f.b3,
            lp.ln2_gamma, lp.ln2_beta)  # fmt: skip


def _plan(model: Any) -> _Plan:
    plan = model.__dict__.get("_decode_plan")
    if plan is None or plan.params is not model.params:
        plan = _Plan(model.params, [_layer_weights(lp) for lp in model.params.layers])
        model.__dict__["_decode_plan"] = plan
    return plan


class _Rows:
    """The step's preallocated rows and their views (one set per cache and batch size)."""

    def __init__(self, p: Any, B: int, like: torch.Tensor) -> None:
        D, H, dk, n_layers = p.d_model, p.num_heads, p.dk, len(p.layers)
        dff = p.layers[0].ffn.W3.shape[0]
        self.B = B
        self.inference = torch.is_inference_mode_enabled()
        self.qkv = like.new_empty(n_layers, B, 3 * D)
        self.h = like.new_empty(B, D)
        self.ffn = like.new_empty(B, 2 * dff)
        self.gate, self.up = self.ffn[:, :dff], self.ffn[:, dff:]
        cdt = kval.compute_dtype(like.dtype)
        self.qg = like.new_zeros(n_layers, B, H, 1, dk)  # q G of every layer
        self.k_all = self.qkv[:, :, D : 2 * D].view(n_layers, B, H, dk)  # the new keys
        # the layers' running key bounds, one tensor: LayerCache.k_norm_bound are views
        self.kbound = like.new_zeros(n_layers, B, H, dtype=cdt)
        self.kbound_views = list(self.kbound)
        self.kbound_before = torch.zeros_like(self.kbound)
        self.prod = torch.zeros_like(self.kbound)  # |q G| times the key bound
        complex_ok = like.dtype in (torch.float32, torch.float64)
        self.layers = [
            (
                r,  # (B, 3 D): q, k, v
                torch.view_as_complex(r[:, : 2 * D].view(B, 2 * H, dk // 2, 2))
                if complex_ok else None,  # q and k as complex pairs, for RoPE
                r[:, :D].view(B, H, 1, dk),  # q
                r[:, D : 2 * D].view(B, H, dk),  # the new key rows
                r[:, D:].view(B, 2, H, 1, dk).transpose(0, 1),  # k and v for the cache
            )
            for r in self.qkv
        ]  # fmt: skip
        # (d_out, B) buffers for the transposed form of the products (CPU)
        self.scratch: dict[int, torch.Tensor] | None = {} if like.device.type == "cpu" else None

    def usable(self, B: int) -> bool:
        return self.B == B and (not self.inference or torch.is_inference_mode_enabled())

    def adopt_bounds(self, cache: DecoderCache) -> None:
        """Make every layer's key bound a view of :attr:`kbound`; keep a copy to restore."""
        for lc, view in zip(cache.layers, self.kbound_views, strict=True):
            if lc.k_norm_bound is not view:
                view.copy_(lc.key_norm_bound())
                lc.k_norm_bound = view
        self.kbound_before.copy_(self.kbound)

    def mm(self, x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, out: torch.Tensor):
        """``out = x W + b`` in the form this machine runs fastest (on CPU)."""
        if self.scratch is None:
            return torch.addmm(b, x, W, out=out)
        t = self.scratch.get(W.shape[1])
        if t is None:
            t = self.scratch[W.shape[1]] = out.new_empty(W.shape[1], self.B)
        return linear_into(x, W, b, out, t)


def _rows(cache: DecoderCache, p: Any, B: int, like: torch.Tensor) -> _Rows:
    key = ("decode_rows", like.dtype, like.device)
    rows = cache.scratch.get(key)
    if rows is None or not rows.usable(B):
        rows = cache.scratch[key] = _Rows(p, B, like)
    return rows


def decode_rows(
    model: Any,
    x: torch.Tensor,
    cache: DecoderCache,
    *,
    use_g_cache: bool,
    precision: Precision,
) -> torch.Tensor:
    """Run the layers on the embedded new rows ``x`` (B, 1, d_model); return the logits (B, vocab).

    Appends one position to every layer of ``cache`` (``cache.length`` is left to the
    caller). Raises as described in the module docstring; the cache is then as it was.
    """
    p = model.params
    plan = _plan(model)
    B, D, dk, eps = x.shape[0], p.d_model, p.dk, p.ln_eps
    cdt = kval.compute_dtype(x.dtype)
    rows = _rows(cache, p, B, x)
    rope = plan.table(dk, p.rope_base, cdt, x.device)
    rot = rope.at(cache.length)
    L = cache.length
    rows.adopt_bounds(cache)
    fast = x.dtype in (torch.float32, torch.float64) or precision == "rounded"
    xr = x.view(B, D)
    used: list[torch.Tensor] = []  # the G of each layer, for the checks' second look
    try:
        for li, lc in enumerate(cache.layers):
            qkv_w, Wo, bo, g1, b1, w12, W3, b3, g2, b2 = plan.layers[li]
            qkv, qk_c, q, k_new, kv_new = rows.layers[li]
            for W, b, c0, c1 in qkv_w:
                rows.mm(xr, W, b, qkv[:, c0:c1] if len(qkv_w) > 1 else qkv)
            if qk_c is not None:
                qk_c.mul_(rot)  # RoPE on q and k: one complex product, in place
            else:
                rope.rotate_(qkv[:, : 2 * D].view(B, 2 * p.num_heads, dk), L)
            lc.append_pair(kv_new)
            if use_g_cache:
                G = lc.G
            else:
                assert lc.A is not None
                G = energy_curvature(lc.A.to(cdt), p.layers[li].heads, check_finite=False)[2]
            used.append(G)
            if fast:
                if G.dtype == q.dtype:
                    qg = torch.matmul(q, G, out=rows.qg[li])
                else:  # bfloat16/float16 "rounded", or a cached G of another dtype
                    qg = rows.qg[li].copy_(rotate_query(q, G))
                att = F.scaled_dot_product_attention(qg, lc.k, lc.v)  # one query: no mask
            else:  # bfloat16/float16 "compensated": its own score check, at once
                kn = torch.linalg.vector_norm(k_new, dim=-1, dtype=cdt)
                bound = torch.maximum(rows.kbound[li], kn)
                att = sdpa_qg(q, lc.k, lc.v, G, precision=precision, check_scores=True,
                              key_norm=bound)  # fmt: skip
            h = rows.mm(att.view(B, D), Wo, bo, rows.h).add_(xr)
            x1 = torch.layer_norm(h, (D,), g1, b1, eps)
            for W, b, c0, c1 in w12:
                rows.mm(x1, W, b, rows.ffn[:, c0:c1] if len(w12) > 1 else rows.ffn)
            F.silu(rows.gate, inplace=True).mul_(rows.up)
            y = rows.mm(rows.gate, W3, b3, rows.h).add_(x1)
            xr = torch.layer_norm(y, (D,), g2, b2, eps)
        logits = linear(xr, p.Wf, p.bf)
        # the key bounds of every layer raised by its new row, and |q G| times them
        kn = torch.linalg.vector_norm(rows.k_all, dim=-1, dtype=cdt)
        torch.maximum(rows.kbound, kn, out=rows.kbound)
        if fast:
            qn = torch.linalg.vector_norm(rows.qg, dim=(-2, -1), dtype=cdt)
            torch.mul(qn, rows.kbound, out=rows.prod)
        else:  # the "compensated" step checked its scores at once
            rows.prod.zero_()
        # one host read for the step's checks: a sum is finite only if every term is
        sums = torch.stack((rows.qkv.sum(dtype=cdt), logits.sum(dtype=cdt), rows.prod.amax()))
        s_qkv, s_logits, worst = sums.tolist()
        limit = torch.finfo(cdt).max / 4
        if not (math.isfinite(s_qkv) and math.isfinite(s_logits) and worst <= limit):
            _raise_first_failure(rows, cache, used, logits, limit)
    except Exception:
        rows.kbound.copy_(rows.kbound_before)  # a failed step leaves the cache as it was
        for lc in cache.layers:
            lc.truncate(L)
        raise
    return logits


def _raise_first_failure(
    rows: _Rows, cache: DecoderCache, used: list[torch.Tensor], logits: torch.Tensor, limit: float
) -> None:
    """Go through the step's checks in order and raise the first that fails.

    Returns only when every check passes on a second look: a sum that overflowed
    over finite terms, or a score bound above the limit whose exact scores (formed
    in float64) stay inside it.
    """
    for li, lc in enumerate(cache.layers):
        q, k, v = rows.qkv[li].chunk(3, dim=-1)
        for name, t in (("q", q), ("k", k), ("v", v)):
            kval.check_finite(t, f"layer {li} {name}", power_law=False)
        if not bool((rows.prod[li] <= limit).all()):
            B, H, _, dk = lc.k.shape
            kval.check_score_range(rotate_query(q.reshape(B, H, 1, dk), used[li]), lc.k)
    kval.check_finite(logits, "logits", power_law=False)
