"""Floating-point facts of the four dtypes: names, torch dtypes, unit round-off, gamma_n.

The one place a dtype is added. The kernels compute statistics, the metric
learner and softmax in float32 for every dtype below float64
(:func:`compute_dtype`), as torch's fused SDPA kernels do.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = [
    "DTYPE_ALIASES",
    "DTYPE_NAMES",
    "MPMATH_DPS",
    "TORCH_DTYPES",
    "UNIT_ROUNDOFF",
    "canonical_dtype",
    "compute_dtype",
    "compute_roundoff",
    "gamma",
]

#: Digits of the cross-check's mpmath oracle (its own error ~1e-40: nothing next to
#: float64's).
MPMATH_DPS = 40

#: The torch dtype of each canonical name, most precise first.
TORCH_DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}

#: Canonical dtype names, most precise first.
DTYPE_NAMES: tuple[str, ...] = tuple(TORCH_DTYPES)

#: Other spellings accepted on the command line.
DTYPE_ALIASES: dict[str, str] = {
    "fp64": "float64",
    "f64": "float64",
    "double": "float64",
    "fp32": "float32",
    "f32": "float32",
    "float": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "f16": "float16",
    "half": "float16",
}

#: Unit round-off ``2^-p`` (p = significand bits): the largest relative error of one
#: rounding to nearest.
UNIT_ROUNDOFF: dict[str, float] = {
    "float64": 2.0**-53,  # 1.1e-16
    "float32": 2.0**-24,  # 6.0e-8
    "bfloat16": 2.0**-8,  # 3.9e-3
    "float16": 2.0**-11,  # 4.9e-4
}


def canonical_dtype(name: object) -> str | None:
    """The canonical name of a dtype spelling (``"bf16"``, ``"torch.half"``), or None."""
    key = str(name).strip().lower().removeprefix("torch.")
    key = DTYPE_ALIASES.get(key, key)
    return key if key in TORCH_DTYPES else None


def compute_dtype(name: str) -> torch.dtype:
    """The dtype the kernels compute in at dtype ``name``: float64, else float32."""
    return torch.float64 if name == "float64" else torch.float32


def compute_roundoff(name: str) -> float:
    """Unit round-off of the arithmetic at dtype ``name`` (see :func:`compute_dtype`)."""
    return UNIT_ROUNDOFF["float64" if name == "float64" else "float32"]


def gamma(n, u: float):  # type: ignore[no-untyped-def]
    """Higham's ``gamma_n = n u / (1 - n u)``: the error of a length-``n`` dot product.

    ``n`` an int or an array of them (then an array back). The Lean statements
    (``Pldr.gam``, ``fp_prod_gamma``) hold only for ``n u < 1``; beyond it the formula is
    negative or infinite, so this refuses with a ``ValueError`` instead.
    """
    nu = np.asarray(n, dtype=np.float64) * u
    if np.any(nu >= 1.0):
        raise ValueError(f"gamma_n({u:g}) is undefined: n u >= 1 (n up to {np.max(n)})")
    g = nu / (1.0 - nu)
    return float(g) if np.ndim(g) == 0 else g
