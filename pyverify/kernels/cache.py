"""Decoding caches of :class:`pyverify.kernels.model.PLGADecoder` (KV- and G-cache).

Keys and values live in ONE preallocated buffer per layer, ``kv_buf`` of shape
(2, B, H, capacity, d), that grows geometrically: a decode step writes its key and
value rows into it with one copy (:meth:`LayerCache.append_pair`) instead of copying
the whole cache, and ``LayerCache.k`` / ``LayerCache.v`` are views of the first
``length`` rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from pyverify.errors import InputValueError
from pyverify.kernels.validation import row_norm_max

__all__ = ["DecoderCache", "LayerCache"]


@dataclass
class LayerCache:
    """Per-layer decoding cache.

    Attributes
    ----------
    k, v : torch.Tensor
        (B, H, S, dk) rotated keys and (B, H, S, dv) values.
    A : torch.Tensor or None
        (B, H, dk, dk) metric-learner output of the prompt pass (None for the
        g_cached/collapsed modes, which never computed it).
    G : torch.Tensor
        The operator used (4-D, broadcastable to (B, H, dk, dk)).
    kv_buf : torch.Tensor or None
        (2, B, H, capacity, max(dk, dv)): keys at index 0, values at index 1; ``k``
        and ``v`` are views of it once a row was appended.
    """

    k: torch.Tensor
    v: torch.Tensor
    A: torch.Tensor | None
    G: torch.Tensor
    kv_buf: torch.Tensor | None = field(default=None, repr=False)
    k_norm_bound: torch.Tensor | None = field(default=None, repr=False)

    @property
    def k_buf(self) -> torch.Tensor | None:
        """The keys' part of :attr:`kv_buf` (None before the first append)."""
        return None if self.kv_buf is None else self.kv_buf[0, ..., : self.k.shape[-1]]

    @property
    def v_buf(self) -> torch.Tensor | None:
        """The values' part of :attr:`kv_buf` (None before the first append)."""
        return None if self.kv_buf is None else self.kv_buf[1, ..., : self.v.shape[-1]]

    def key_norm_bound(self) -> torch.Tensor:
        """An upper bound of ``max_j |k_j|`` per (batch, head): (B, H).

        In the keys' compute dtype (float64 for float64 keys, float32 otherwise).
        Computed once from the keys, then raised by every append (O(new rows) per
        step); :meth:`truncate` leaves it, which keeps it an upper bound.
        """
        if self.k_norm_bound is None:
            self.k_norm_bound = row_norm_max(self.k)
        return self.k_norm_bound

    def _room(self, n: int) -> torch.Tensor:
        """The buffer, with room for ``n`` more rows after the current ``length`` rows."""
        L, buf = self.k.shape[2], self.kv_buf
        stale = (
            buf is None
            or buf.shape[3] < L + n
            or self.k.data_ptr() != buf[0].data_ptr()
            or self.v.data_ptr() != buf[1].data_ptr()
            or self.k.stride() != buf[0].stride()
            or self.v.stride() != buf[1].stride()
            # buffers made under inference_mode cannot be written outside it
            or (buf.is_inference() and not torch.is_inference_mode_enabled())
        )
        if stale:
            B, H, _, dk = self.k.shape
            dv = self.v.shape[-1]
            new = self.k.new_empty(2, B, H, max(2 * (L + n), 16), max(dk, dv))
            new[0, :, :, :L, :dk] = self.k
            new[1, :, :, :L, :dv] = self.v
            self.kv_buf = buf = new
        return buf

    def append_pair(self, kv_new: torch.Tensor) -> None:
        """Append key and value rows given together, (2, B, H, n, d), with one copy.

        Keys and values must have the same width ``d``; the key-norm bound is left to
        the caller (the decode step raises it itself).
        """
        L, n = self.k.shape[2], kv_new.shape[3]
        buf = self._room(n)
        buf[:, :, :, L : L + n].copy_(kv_new)
        self.k, self.v = buf[0, :, :, : L + n], buf[1, :, :, : L + n]

    def append(self, k_new: torch.Tensor, v_new: torch.Tensor) -> None:
        """Append rows (B, H, n, dk) and (B, H, n, dv), amortised O(n) per call."""
        L, n = self.k.shape[2], k_new.shape[2]
        buf = self._room(n)
        dk, dv = k_new.shape[-1], v_new.shape[-1]
        buf[0, :, :, L : L + n, :dk] = k_new
        buf[1, :, :, L : L + n, :dv] = v_new
        self.k, self.v = buf[0, :, :, : L + n, :dk], buf[1, :, :, : L + n, :dv]
        if self.k_norm_bound is not None:
            self.k_norm_bound = torch.maximum(self.k_norm_bound, row_norm_max(k_new))

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` positions (the buffer is kept for reuse)."""
        self.k, self.v = self.k[:, :, :length], self.v[:, :, :length]


@dataclass
class DecoderCache:
    """KV- and G-cache of all layers.

    Attributes
    ----------
    layers : list of LayerCache
        One entry per layer.
    length : int
        Number of cached positions (the next token's RoPE position).
    mode : str
        The mode of the prompt pass.
    scratch : dict
        What the decode step keeps between steps (its preallocated rows); private.
    """

    layers: list[LayerCache] = field(default_factory=list)
    length: int = 0
    mode: str = "uncached"
    scratch: dict[Any, Any] = field(default_factory=dict, repr=False)

    def truncate(self, length: int) -> None:
        """Forget every position from ``length`` on (e.g. to re-run a step)."""
        if not 0 <= length <= self.length:
            raise InputValueError(f"length must lie in [0, {self.length}]; got {length}")
        for lc in self.layers:
            lc.truncate(length)
        self.length = length
