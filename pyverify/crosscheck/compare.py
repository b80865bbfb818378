"""The error measure and the comparer every runner is built on."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from pyverify.crosscheck.cases import Case
from pyverify.crosscheck.results import CrosscheckRow

__all__ = ["Comparer", "Proved", "as_numpy", "proved_ratios", "slice_errors"]


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


@dataclass(frozen=True)
class Proved:
    """A proved entrywise bound of ``|got - ref|`` for one stage, or why there is none.

    Attributes
    ----------
    bound : numpy.ndarray or None
        Entrywise bound, broadcastable to the compared arrays (:mod:`pyverify.fp.models`).
    theorems : tuple of str
        The Lean theorem IDs whose statements the bound evaluates.
    note : str
        Why there is no bound (``bound`` None), or what it assumes.
    """

    bound: np.ndarray | None
    theorems: tuple[str, ...] = ()
    note: str = ""


def proved_ratios(x: Any, y: Any, bound: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    """Per slice: the proved bound in the error measure and ``error / bound``; entrywise check.

    The slice's proved bound is ``max(bound) / max|y|`` (the measure of
    :func:`slice_errors` applied to the bound), so ``error / proved`` compares like with
    like; the returned flag says whether ``|x - y| <= bound`` holds at every entry (which
    implies ``error <= proved`` in every slice).
    """
    xa, ya = as_numpy(x), as_numpy(y)
    b = np.broadcast_to(np.asarray(bound, dtype=np.float64), xa.shape)
    diff = np.abs(xa - ya)
    ok = bool(np.all(np.isfinite(diff)) and np.all(diff <= b))
    xa = xa.reshape(-1, *xa.shape[-2:])
    ya = ya.reshape(-1, *ya.shape[-2:])
    b = b.reshape(-1, *b.shape[-2:])
    den = np.abs(ya).max(axis=(-2, -1))
    den = np.where(den > 0, den, 1.0)
    proved = b.max(axis=(-2, -1)) / den
    errs = slice_errors(xa, ya)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(proved > 0, errs / proved, np.where(errs > 0, np.inf, 0.0))
    return proved, ratio, ok


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
        proved: Proved | None,
        theorems: tuple[str, ...] = (),
        *,
        extra_ok: bool = True,
        note: str | None = None,
    ) -> CrosscheckRow:
        """The row of stage ``name``: ``got`` vs ``ref`` per slice, held to its proved bound.

        The row passes only if every entry is within ``proved`` (and ``extra_ok``); its
        tolerance is the bound in the error measure (the largest over the slices; rule
        ``proved: IDs``). A stage without a proved bound (``proved`` None, or its premises
        failed: ``proved.note`` says which) fails: no tolerance without a theorem.
        """
        errs = slice_errors(got, ref)
        if proved is None or proved.bound is None:
            why = proved.note if proved else "none computed"
            return self.row(
                name, errs, 0.0, theorems, extra_ok=False, note=note, rule="no proved bound",
                proved_note=f"no proved bound: {why}",
            )  # fmt: skip
        bound_s, ratio, ok = proved_ratios(got, ref, proved.bound)
        worst = int(np.argmax(ratio)) if ratio.size else 0
        tol = float(np.max(bound_s)) if bound_s.size else 0.0
        rule = f"proved: {', '.join(proved.theorems)}"
        return self.row(
            name, errs, tol, theorems, extra_ok=extra_ok and ok, note=note, rule=rule,
            proved=float(bound_s[worst]) if ratio.size else None,
            proved_ratio=float(ratio[worst]) if ratio.size else None,
            proved_theorems=proved.theorems, proved_note=proved.note,
        )  # fmt: skip

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
        proved: float | None = None,
        proved_ratio: float | None = None,
        proved_theorems: tuple[str, ...] = (),
        proved_note: str = "",
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
            proved=proved,
            proved_ratio=proved_ratio,
            proved_theorems=proved_theorems,
            proved_note=proved_note,
        )
