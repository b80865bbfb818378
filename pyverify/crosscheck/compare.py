"""The error measure and the comparer every runner is built on."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.crosscheck.cases import Case
from pyverify.crosscheck.results import CrosscheckRow

__all__ = ["Comparer", "as_numpy", "sdpa_error", "slice_errors"]


def as_numpy(x: Any) -> np.ndarray:
    """``x`` (tensor or array-like) as a float64 NumPy array on the CPU."""
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def slice_errors(x: Any, y: Any) -> np.ndarray:
    """Norm-wise relative error ``max|x - y| / max|y|`` per slice over the last two axes.

    ``y`` is the more accurate side; where ``max|y| = 0`` the absolute error is
    used; a non-finite error is ``inf``. One error per leading index (flattened).
    """
    xa, ya = as_numpy(x), as_numpy(y)
    if xa.shape != ya.shape:
        raise ValueError(f"shape mismatch: {xa.shape} vs {ya.shape}")
    xa = xa.reshape(-1, *xa.shape[-2:])
    ya = ya.reshape(-1, *ya.shape[-2:])
    num = np.abs(xa - ya).max(axis=(-2, -1))
    den = np.abs(ya).max(axis=(-2, -1))
    with np.errstate(invalid="ignore"):
        err = np.where(den > 0, num / np.where(den > 0, den, 1.0), num)
    return np.where(np.isfinite(err), err, np.inf)


def sdpa_error(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, qg64: torch.Tensor) -> float:
    """Torch SDPA's error at ``q``'s dtype: inputs ``(fl(Q'), K, V)`` vs float64 on exact ``Q'``."""
    low = F.scaled_dot_product_attention(qg64.to(q.dtype), k, v, is_causal=True)
    ref = F.scaled_dot_product_attention(qg64, k.double(), v.double(), is_causal=True)
    return float(slice_errors(low, ref).max())


@dataclass(frozen=True)
class Comparer:
    """Compares one path of one case against one more accurate side, stage by stage."""

    case: Case
    path: str
    against: str
    note: str = ""

    def stage(
        self,
        name: str,
        got: Any,
        ref: Any,
        tol: float,
        theorems: tuple[str, ...] = (),
        *,
        extra_ok: bool = True,
        note: str | None = None,
        rule: str | None = None,
    ) -> CrosscheckRow:
        """The row of stage ``name``: ``got`` vs ``ref`` per slice, held to ``tol``.

        ``rule``: how ``tol`` was measured (:func:`pyverify.tolerance.output_tolerance_rules`), None
        for a constant.
        """
        errs = slice_errors(got, ref)
        return self.row(name, errs, tol, theorems, extra_ok=extra_ok, note=note, rule=rule)

    def row(
        self,
        name: str,
        errs: np.ndarray,
        tol: float,
        theorems: tuple[str, ...] = (),
        *,
        extra_ok: bool = True,
        note: str | None = None,
        rule: str | None = None,
    ) -> CrosscheckRow:
        """The row of stage ``name`` from per-slice errors already measured."""
        mx = float(np.max(errs)) if errs.size else 0.0
        med = float(np.median(errs)) if errs.size else 0.0
        c = self.case
        return CrosscheckRow(
            case=c.case_id,
            kind=c.kind,
            path=self.path,
            against=self.against,
            shape=c.shape,
            device=c.device,
            dtype=c.dtype,
            stage=name,
            max_rel=mx,
            median_rel=med,
            tolerance=float(tol),
            passed=bool(math.isfinite(mx) and mx <= tol and extra_ok),
            theorems=theorems,
            note=self.note if note is None else note,
            tolerance_rule=rule,
        )
