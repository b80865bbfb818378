"""Products with weight matrices: the layout the decoder stores them in, and fused blocks.

Row-vector convention ``y = x @ W + b`` with ``W`` of shape (d_in, d_out). The decoder
stores every projection **output-major** (``W.t()`` contiguous, as ``nn.Linear``
stores its weight), so that the few-row products of decoding can run as
``(W^T x^T)^T`` (:func:`linear`). Projections read from the same input are stored
**side by side** in one buffer (:func:`output_major_block`): ``W_q, W_k, W_v`` of a
layer, and ``W_1, W_2`` of its SwiGLU. Each stays a view of that buffer, so an
in-place change to one (as the tests make to provoke an overflow) is seen by the fused
product too; :func:`fused` returns the whole block when its parts are still laid out
that way, and ``None`` otherwise (then the parts are multiplied one by one).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

__all__ = [
    "SMALL_ROWS",
    "fused",
    "linear",
    "linear_into",
    "output_major",
    "output_major_block",
]

# Up to this many rows, ``x @ W`` runs as ``(W^T x^T)^T`` on CPU when ``W`` is
# stored output-major. Measured with MKL 2024.2 on a 2-core AMD EPYC (fp32, the layer
# sizes of ``pyverify bench`` P3): 2.5-3x faster than ``addmm(b, x, W)`` at 2-8
# rows, equal at 1 row and at 512; decode steps have B rows.
SMALL_ROWS = 64


def _small_rows(n: int, x: torch.Tensor, W: torch.Tensor) -> bool:
    return 1 < n <= SMALL_ROWS and x.device.type == "cpu" and W.stride(0) == 1


def linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``x @ W + b`` for ``x`` of shape (..., d_in) and ``W`` (d_in, d_out)."""
    x2 = x.reshape(-1, x.shape[-1])
    n = x2.shape[0]
    if _small_rows(n, x2, W):
        y = torch.addmm(b.unsqueeze(1), W.t(), x2.t()).t().contiguous()
    else:
        y = torch.addmm(b, x2, W)
    return y.view(*x.shape[:-1], W.shape[1])


def linear_into(
    x: torch.Tensor,
    W: torch.Tensor,
    b: torch.Tensor,
    out: torch.Tensor,
    scratch: torch.Tensor | None = None,
) -> torch.Tensor:
    """``out = x @ W + b`` written into ``out`` (n, d_out); ``x`` is (n, d_in).

    ``scratch``, a contiguous (d_out, n) buffer, is where the small-row form
    ``W^T x^T`` lands before its transpose is copied into ``out``; without it the
    plain product is used.
    """
    if scratch is not None and _small_rows(x.shape[0], x, W):
        torch.addmm(b.unsqueeze(1), W.t(), x.t(), out=scratch)
        return out.copy_(scratch.t())
    return torch.addmm(b, x, W, out=out)


def output_major(W: torch.Tensor) -> torch.Tensor:
    """``W`` (d_in, d_out) with the same values, stored output-major (``W.t()`` contiguous)."""
    return W.t().contiguous().t()


def output_major_block(
    mats: Sequence[np.ndarray], device: torch.device | str | None, dtype: torch.dtype
) -> list[torch.Tensor]:
    """Store matrices (d_in, d_i), or vectors (d_i,), side by side in one buffer.

    Parameters
    ----------
    mats : sequence of array_like
        All matrices with the same ``d_in`` (or all vectors).
    device, dtype
        Where and how the buffer is stored.

    Returns
    -------
    list of torch.Tensor
        One view per input with its shape and values: matrices output-major
        (``view.t()`` contiguous), consecutive in the buffer, so that :func:`fused`
        finds the block.
    """
    arrs = [np.asarray(m, dtype=np.float64) for m in mats]
    rows = [a.T if a.ndim == 2 else a for a in arrs]
    buf = torch.as_tensor(np.ascontiguousarray(np.concatenate(rows, axis=0)))
    buf = buf.to(device=device, dtype=dtype).contiguous()
    views, start = [], 0
    for a in arrs:
        n = a.shape[-1]
        part = buf[start : start + n]
        views.append(part.t() if a.ndim == 2 else part)
        start += n
    return views


def fused(parts: Sequence[torch.Tensor]) -> torch.Tensor | None:
    """The one tensor that ``parts``, placed side by side along their last axis, are views of.

    Parameters
    ----------
    parts : sequence of torch.Tensor
        Tensors with equal shapes but for the last axis, equal strides, each starting
        where the previous one's last axis ends (as :func:`output_major_block` makes
        them).

    Returns
    -------
    torch.Tensor or None
        The view ``(..., sum of the last axes)`` over the same memory, or ``None`` when
        the parts do not lie so (then multiply them one by one).
    """
    first = parts[0]
    step = first.stride(-1) * first.element_size()
    ptr, storage = first.data_ptr(), first.untyped_storage().data_ptr()
    for p in parts:
        same = (
            p.dtype == first.dtype
            and p.device == first.device
            and p.shape[:-1] == first.shape[:-1]
            and p.stride() == first.stride()
        )
        if not same or p.data_ptr() != ptr or p.untyped_storage().data_ptr() != storage:
            return None
        ptr += p.shape[-1] * step
    total = sum(p.shape[-1] for p in parts)
    return first.as_strided((*first.shape[:-1], total), first.stride())
