"""Peak extra memory of one call (``pyverify bench``'s memory column).

CUDA: the allocator's peak (``torch.cuda.max_memory_allocated``) above what was
allocated before the call. CPU (PyTorch keeps no allocator statistics there):
every tensor an aten operator creates during the call is counted from its
creation until its last tracked tensor dies (a ``TorchDispatchMode``); outputs
that alias an input (views, in-place results) add nothing. Scratch space
inside a fused kernel (e.g. SDPA's tiles) is not visible and not counted, so
the CPU figure is a lower bound that is exact for compositions of plain ops.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = ["peak_extra_bytes"]


class _Tracker(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, list[int]] = {}  # storage ptr -> [nbytes, tracked tensors]
        self.objs: set[int] = set()
        self.cur = 0
        self.peak = 0

    def _release(self, oid: int, key: int) -> None:
        self.objs.discard(oid)
        ent = self.live.get(key)
        if ent is None:
            return
        ent[1] -= 1
        if ent[1] == 0:
            self.cur -= ent[0]
            del self.live[key]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        aliasing = any(r.alias_info is not None for r in func._schema.returns)
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor) or id(t) in self.objs:
                continue
            st = t.untyped_storage()
            key = st.data_ptr()
            if key == 0:
                continue
            ent = self.live.get(key)
            if ent is None:
                if aliasing:
                    continue  # a view of / write into memory that existed before
                ent = self.live[key] = [st.nbytes(), 0]
                self.cur += ent[0]
                self.peak = max(self.peak, self.cur)
            ent[1] += 1
            self.objs.add(id(t))
            weakref.finalize(t, self._release, id(t), key)
        return out


def peak_extra_bytes(fn: Callable[[], Any], device: torch.device) -> int:
    """Return the peak memory (bytes) that ``fn()`` allocates above what existed before.

    Parameters
    ----------
    fn : callable
        Zero-argument function (its result is dropped before returning).
    device : torch.device
        Where ``fn`` computes ("cpu" or "cuda").

    Returns
    -------
    int
        Peak extra bytes during the call (results included while alive).
    """
    with torch.inference_mode():
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            base = torch.cuda.memory_allocated(device)
            torch.cuda.reset_peak_memory_stats(device)
            res = fn()
            torch.cuda.synchronize(device)
            peak = torch.cuda.max_memory_allocated(device) - base
            del res
            return int(peak)
        tracker = _Tracker()
        with tracker:
            res = fn()
        del res
        return int(tracker.peak)
