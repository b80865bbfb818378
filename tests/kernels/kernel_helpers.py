"""Shared helpers for the kernel tests (imported as ``kernel_helpers``)."""

from __future__ import annotations

import numpy as np
import torch

from pyverify.crosscheck import available_devices
from pyverify.kernels import from_reference
from pyverify.reference import PLGAParams
from pyverify.reference import data as reference_data
from pyverify.testing.bounds import rel_err

DEVICES = available_devices()

#: The kernel tests' regression tolerances (norm-wise relative), run on every device (CUDA
#: included, where no proved bound applies): statistical, u times the conditioning
#: actually realised (float64 observed ~1e-15, float32 <= 3e-6). The proved bounds are the
#: property tests' and the cross-check's (``lean/Pldr/Float``, CPU).
TOL = {torch.float64: 1e-12, torch.float32: 1e-5}
#: Below float32: within ``CONTROL`` times torch SDPA's own error on the same rounded inputs
#: (one rounding of the control's plus at most as much of our own), plus ``FLOOR``.
CONTROL, FLOOR = 2.0, 1e-6


def within_control(error: float, control_error: float) -> bool:
    """Whether ``error <= CONTROL * control_error + FLOOR`` (the rule of FlashAttention's
    tests against their reference, and PyTorch's ``fudge_factor``)."""
    return error <= CONTROL * control_error + FLOOR


def make_heads(H: int = 3, dk: int = 8, a_dff: int = 12, seed: int = 0) -> list[PLGAParams]:
    return [PLGAParams.random(dk=dk, a_dff=a_dff, num_reslayer=2, num_dense=2, seed=seed + h)
            for h in range(H)]  # fmt: skip


def make_qkv(B: int, H: int, S: int, dk: int, dv: int | None = None, seed: int = 0):
    rng = np.random.default_rng(seed)
    dv = dk if dv is None else dv
    return (
        rng.normal(size=(B, H, S, dk)),
        rng.normal(size=(B, H, S, dk)),
        rng.normal(size=(B, H, S, dv)),
    )


def load_g_lm() -> np.ndarray:
    """The trained ``G_LM`` (vendored, sha256-checked; ``PYVERIFY_DATA_DIR`` overrides)."""
    return reference_data.load_g_lm("trained")


__all__ = [
    "CONTROL", "DEVICES", "FLOOR", "TOL", "from_reference", "load_g_lm", "make_heads",
    "make_qkv", "rel_err", "within_control",
]  # fmt: skip
