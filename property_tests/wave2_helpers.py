"""Helpers shared by the second-wave property tests (kept apart from impls/strategies)."""

from __future__ import annotations

import numpy as np
from impls import Impl, gamma

LOG2E = 1.4426950408889634


def softmax_entry_rel_error(impl: Impl, E: np.ndarray) -> float:
    """Relative error bound ``eps`` of one computed softmax entry (exactly held scores).

    * fused kernels may evaluate ``exp2(x log2e - m log2e)``: each product with log2e is
      rounded, the argument moves by <= 2 u_c M log2e (M = max|E|), exp by that relatively;
    * exp itself, the normaliser (S_k terms) and the division: gamma_{S_k + 4}(u_c);
    * low-precision fused kernels round the row to the input dtype before ``p V`` and the
      result again: 2 u_io (u_io, the output rounding, for float32/float64).
    """
    M = float(np.max(np.abs(E))) if E.size else 0.0
    arg = 2 * impl.u_compute * M * LOG2E
    low = 2 * impl.u_io if impl.dtype in ("bfloat16", "float16") else impl.u_io
    return 2 * arg + gamma(E.shape[1] + 4, impl.u_compute) + low
