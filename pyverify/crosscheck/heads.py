"""The inputs of a case: its rounded ``q, k, v`` and the reference heads or operator it runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from pyverify.crosscheck.cases import Case
from pyverify.crosscheck.compare import as_numpy
from pyverify.precision import TORCH_DTYPES
from pyverify.reference import load_g_lm

__all__ = [
    "A_DFF",
    "N_DENSE",
    "N_RES",
    "case_inputs",
    "dummy_head",
    "random_reference",
    "reference_heads",
    "scores_like_kernel",
    "trained_reference",
]


# Metric-learner sizes of the random heads (as the kernel tests).
A_DFF, N_RES, N_DENSE = 12, 2, 2


def case_inputs(case: Case) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Deterministic ``q, k, v`` (B, H, S, dk), rounded to the case's dtype, on its device."""
    rng = np.random.default_rng(case.seed)
    dt = TORCH_DTYPES[case.dtype]
    return tuple(  # type: ignore[return-value]
        torch.tensor(rng.normal(size=case.shape)).to(device=case.device, dtype=dt) for _ in range(3)
    )


def scores_like_kernel(q: torch.Tensor, k: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """The scores the kernels hand to SDPA, ``(Q G) K^T / sqrt(dk)`` in the compute dtype.

    float64/float32: ``Q G`` in the input dtype; bfloat16/float16: the
    compensated split ``Q G = hi + lo`` (:func:`pyverify.kernels.split_query_product`),
    accumulated in float32 as SDPA does.
    """
    from pyverify.kernels import split_query_product
    from pyverify.kernels.head import rotate_query

    dk = q.shape[-1]
    if q.dtype in (torch.float64, torch.float32):
        return torch.matmul(rotate_query(q, G), k.transpose(-1, -2)) * dk**-0.5
    hi, lo = split_query_product(q, G)
    kf = k.float().transpose(-1, -2)
    return (torch.matmul(hi.float(), kf) + torch.matmul(lo.float(), kf)) * dk**-0.5


def reference_heads(case: Case) -> list:
    """The case's random PLGA heads (float64 reference parameters), one per head."""
    from pyverify.reference import PLGAParams

    dk, H = case.shape[3], case.shape[1]
    return [
        PLGAParams.random(dk, A_DFF, N_RES, N_DENSE, seed=(case.seed + 7919 * h) % 2**32)
        for h in range(H)
    ]


def dummy_head(dk: int) -> Any:
    """A PLGAParams the G-cached path requires but does not use."""
    from pyverify.reference import PLGAParams

    return PLGAParams.random(dk, 1, 0, 0, seed=0)


# --------------------------------------------------------------------------- proved bounds
#: Theorem IDs of each stage's proved bound (``lean/Pldr/Float``; :mod:`pyverify.fp.models`).


def random_reference(case: Case) -> tuple[tuple[torch.Tensor, ...], list, Any]:
    """A ``random`` case's ``(q, k, v)`` (rounded, on its device), heads and float64 result."""
    from pyverify.reference import plga_forward_batched

    heads = reference_heads(case)
    q, k, v = case_inputs(case)
    ref = plga_forward_batched(*(as_numpy(t) for t in (q, k, v)), heads, causal=True)
    return (q, k, v), heads, ref


def trained_reference(case: Case) -> tuple[tuple[torch.Tensor, ...], np.ndarray, Any]:
    """A ``trained`` case's ``(q, k, v)``, its layer's ``G_LM`` (H, dk, dk), float64 result."""
    from pyverify.reference import plga_forward_batched

    _B, H, _S, dk = case.shape
    g_all = load_g_lm("trained")
    layer = int(case.layer or 0)
    if g_all.shape[1] != H or g_all.shape[2] != dk or not 0 <= layer < g_all.shape[0]:
        raise ValueError(
            f"trained G_LM has shape {g_all.shape}; case needs layer {layer}, H={H}, dk={dk}"
        )
    g = g_all[layer]
    q, k, v = case_inputs(case)
    ref = plga_forward_batched(*(as_numpy(t) for t in (q, k, v)), dummy_head(dk), True, G=g)
    return (q, k, v), g, ref
