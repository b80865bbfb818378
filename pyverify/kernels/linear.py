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

A product with a few rows (a decode step's B) can run three ways, and which is fastest
depends on the CPU and its BLAS. The bench's weight products alone (``reports/
benchmarks.json``, P3 ``weights_only_ms``, ``(W^T x^T)^T`` at B = 4): on the machine
of the reports up to commit fc8b01e 2.7-3.1 ms at B = 4 against 3.8-4.5 ms at B = 1;
on the Intel Xeon of the reports from cb820e2 on 7.2-9.4 ms at B = 4 against 2.3-3.6
ms at B = 1. :func:`linear_into` therefore times the forms once per shape and row
count on this machine (:func:`few_rows_form`; the choices are listed by
:func:`few_row_forms` and recorded in the bench's JSON).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch

__all__ = [
    "FORMS",
    "SMALL_ROWS",
    "TIMED_BYTES",
    "few_row_forms",
    "few_rows_form",
    "fused",
    "linear",
    "linear_into",
    "output_major",
    "output_major_block",
]

# Up to this many rows, :func:`linear` runs ``x @ W`` as ``(W^T x^T)^T`` on CPU when
# ``W`` is stored output-major (measured with MKL 2024.2 on a 2-core AMD EPYC, fp32,
# the layer sizes of ``pyverify bench`` P3: 2.5-3x faster than ``addmm(b, x, W)`` at
# 2-8 rows, equal at 1 row and at 512), and :func:`linear_into` times its forms.
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

    The form is :func:`few_rows_form`'s. ``scratch``, a contiguous (d_out, n) buffer,
    is where the transposed form ``W^T x^T`` lands before its transpose is copied into
    ``out``; without it that form is not considered.
    """
    form = few_rows_form(x, W, b, scratch is not None)
    if form == "transposed":
        assert scratch is not None
        torch.addmm(b.unsqueeze(1), W.t(), x.t(), out=scratch)
        return out.copy_(scratch.t())
    if form == "rows":
        Wt = W.t()
        for i in range(x.shape[0]):
            torch.addmv(b, Wt, x[i], out=out[i])
        return out
    return torch.addmm(b, x, W, out=out)


#: The form :func:`few_rows_form` chose, per ``(d_in, d_out, rows, dtype, transposed
#: allowed, torch threads)``, in this process.
FORMS: dict[tuple[int, int, int, str, bool, int], str] = {}


def few_rows_form(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, transposed: bool) -> str:
    """The fastest of the forms of ``x W + b`` for this shape here, timed once and kept.

    ``"plain"``: ``addmm(b, x, W)``; ``"transposed"``: ``(W^T x^T)^T`` (only where
    ``transposed``); ``"rows"``: one matrix-vector product per row (up to 8 rows).
    Timed: CPU products of 1 to :data:`SMALL_ROWS` rows with an output-major ``W`` of at
    least :data:`TIMED_BYTES`, each form three times after one call with the caches
    flushed before each (a step streams its weights from memory), the least time kept
    (robust to a shared machine). Smaller ``W``: ``"transposed"`` where allowed and
    ``n > 1``, as :func:`linear` does. Anything else: ``"plain"``. The forms differ
    only in the order of their roundings.
    """
    n = x.shape[0]
    if not 0 < n <= SMALL_ROWS or x.device.type != "cpu" or W.stride(0) != 1:
        return "plain"
    if W.numel() * W.element_size() < TIMED_BYTES:
        return "transposed" if transposed and n > 1 else "plain"
    dt = str(x.dtype).replace("torch.", "")
    key = (W.shape[0], W.shape[1], n, dt, transposed, torch.get_num_threads())
    form = FORMS.get(key)
    if form is None:
        form = FORMS[key] = _fastest(x, W, b, transposed)
    return form


#: Weights below this size are not timed (they stay in cache; the form hardly matters).
TIMED_BYTES = 2**20


def _cache_bytes() -> int:
    """Twice the last-level cache (sysfs), at least 64 MiB: what a flush writes over."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index3/size", encoding="ascii") as f:
            text = f.read().strip()
        size = int(text.rstrip("KMG")) * {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1], 1)
    except (OSError, ValueError):
        size = 0
    return max(2 * size, 2**26)


def _fastest(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, transposed: bool) -> str:
    n, d_out = x.shape[0], W.shape[1]
    flush = torch.empty(_cache_bytes() // 4, dtype=torch.float32)
    out, scratch = x.new_empty(n, d_out), x.new_empty(d_out, n)
    forms = {"plain": lambda: torch.addmm(b, x, W, out=out)}
    if transposed:
        forms["transposed"] = lambda: out.copy_(
            torch.addmm(b.unsqueeze(1), W.t(), x.t(), out=scratch).t()
        )
    if n <= 8:
        forms["rows"] = lambda: [torch.addmv(b, W.t(), x[i], out=out[i]) for i in range(n)]
    best = dict.fromkeys(forms, float("inf"))
    with torch.inference_mode():
        for run in forms.values():
            run()
        for _ in range(3):
            for name, run in forms.items():
                flush.fill_(1.0)
                t0 = time.perf_counter()
                run()
                best[name] = min(best[name], time.perf_counter() - t0)
    return min(best, key=best.__getitem__)


def few_row_forms() -> dict[str, str]:
    """The choices made so far, ``{"d_in x d_out, n rows, dtype, t threads": form}``."""
    return {
        f"{k[0]}x{k[1]}, {k[2]} rows, {k[3]}, {k[5]} threads": v for k, v in sorted(FORMS.items())
    }


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
