"""Decoding caches of :class:`pyverify.kernels.model.PLGADecoder` (KV- and G-cache).

Keys and values live in preallocated buffers that grow geometrically: a decode
step writes one row instead of copying the whole cache, and ``LayerCache.k`` /
``LayerCache.v`` are views of the first ``length`` rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
        (B, H, S, dk) rotated keys and (B, H, S, dk) values.
    A : torch.Tensor or None
        (B, H, dk, dk) metric-learner output of the prompt pass (None for the
        g_cached/collapsed modes, which never computed it).
    G : torch.Tensor
        The operator used (4-D, broadcastable to (B, H, dk, dk)).
    """

    k: torch.Tensor
    v: torch.Tensor
    A: torch.Tensor | None
    G: torch.Tensor
    k_buf: torch.Tensor | None = field(default=None, repr=False)
    v_buf: torch.Tensor | None = field(default=None, repr=False)
    k_norm_bound: torch.Tensor | None = field(default=None, repr=False)

    def key_norm_bound(self) -> torch.Tensor:
        """An upper bound of ``max_j |k_j|`` per (batch, head): (B, H).

        In the keys' compute dtype (float64 for float64 keys, float32 otherwise).
        Computed once from the keys, then raised by every :meth:`append` (O(new rows)
        per step); :meth:`truncate` leaves it, which keeps it an upper bound.
        """
        if self.k_norm_bound is None:
            self.k_norm_bound = row_norm_max(self.k)
        return self.k_norm_bound

    def _is_prefix_of_buffer(self) -> bool:
        kb, vb = self.k_buf, self.v_buf
        return (
            kb is not None
            and vb is not None
            and self.k.data_ptr() == kb.data_ptr()
            and self.v.data_ptr() == vb.data_ptr()
            and self.k.stride() == kb.stride()
            and self.v.stride() == vb.stride()
        )

    def append(self, k_new: torch.Tensor, v_new: torch.Tensor) -> None:
        """Append rows (B, H, n, dk) to the keys and values, amortised O(n) per call."""
        L, n = self.k.shape[2], k_new.shape[2]
        stale = (
            not self._is_prefix_of_buffer()
            or self.k_buf.shape[2] < L + n  # type: ignore[union-attr]
            # buffers made under inference_mode cannot be written outside it
            or (self.k_buf.is_inference() and not torch.is_inference_mode_enabled())  # type: ignore[union-attr]
        )
        if stale:
            cap = max(2 * (L + n), 16)
            B, H, _, dk = self.k.shape
            self.k_buf = self.k.new_empty(B, H, cap, dk)
            self.v_buf = self.v.new_empty(B, H, cap, self.v.shape[-1])
            self.k_buf[:, :, :L] = self.k
            self.v_buf[:, :, :L] = self.v
        kb, vb = self.k_buf, self.v_buf
        assert kb is not None and vb is not None
        kb[:, :, L : L + n] = k_new
        vb[:, :, L : L + n] = v_new
        self.k, self.v = kb[:, :, : L + n], vb[:, :, : L + n]
        if self.k_norm_bound is not None:
            self.k_norm_bound = torch.maximum(self.k_norm_bound, row_norm_max(k_new))

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` positions (the buffers are kept for reuse)."""
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
    """

    layers: list[LayerCache] = field(default_factory=list)
    length: int = 0
    mode: str = "uncached"

    def truncate(self, length: int) -> None:
        """Forget every position from ``length`` on (e.g. to re-run a step)."""
        if not 0 <= length <= self.length:
            raise InputValueError(f"length must lie in [0, {self.length}]; got {length}")
        for lc in self.layers:
            lc.truncate(length)
        self.length = length
