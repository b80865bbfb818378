"""Records of the cross-check: one row per compared stage, the sweep's result, its summary."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pyverify.crosscheck.cases import STAGES
from pyverify.precision import DTYPE_NAMES

__all__ = ["CrosscheckResult", "CrosscheckRow", "summarize"]


@dataclass(frozen=True)
class CrosscheckRow:
    """One compared stage of one case.

    Attributes
    ----------
    case, kind : str
        :attr:`Case.case_id` and the case's kind.
    path : str
        What was checked: ``kernels.uncached``, ``kernels.g_cached``,
        ``kernels.collapsed`` or ``reference.float64``.
    against : str
        The more accurate side: ``reference.float64``, ``mpmath`` or
        ``torch.sdpa.float64``.
    shape : tuple of int
        ``(B, H, S, dk)``.
    device, dtype, stage : str
        Where, at which precision, which stage (:data:`STAGES`, or ``error``).
    max_rel, median_rel : float
        Max and median over (batch, head) slices of ``max|x - y| / max|y|``.
    tolerance : float
        The bound ``max_rel`` is held to: the proved bound in the error measure, the
        largest over the slices (computed from this machine's operands); 0 where the
        stage has no proved bound or the case crashed (the row then fails).
    passed : bool
        ``max_rel <= tolerance`` (and the extra condition, if any).
    theorems : tuple of str
        Theorem IDs the comparison exercises.
    note : str
        Extra facts (positivity minimum, error message).
    tolerance_rule : str or None
        Where ``tolerance`` comes from: ``"proved: IDs"`` (the stage's proved bound,
        :class:`~pyverify.crosscheck.compare.Comparer`), ``"no proved bound"`` (its
        premises failed: tolerance 0, ``proved_note`` says why), None for an ``error``
        row (a crash: tolerance 0).
    proved : float or None
        The proved bound in the same measure (``max(bound) / max|y|``) of the slice with
        the largest ``error / proved``; None where the stage has no proved bound.
    proved_ratio : float or None
        The largest ``error / proved`` over the slices (``<= 1`` when it holds).
    proved_theorems : tuple of str
        Theorem IDs of the proved bound (``lean/Pldr/Float``).
    proved_note : str
        Why a stage has no proved bound, or what its bound assumes.
    """

    case: str
    kind: str
    path: str
    against: str
    shape: tuple[int, int, int, int]
    device: str
    dtype: str
    stage: str
    max_rel: float
    median_rel: float
    tolerance: float
    passed: bool
    theorems: tuple[str, ...] = ()
    note: str = ""
    tolerance_rule: str | None = None
    proved: float | None = None
    proved_ratio: float | None = None
    proved_theorems: tuple[str, ...] = ()
    proved_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (tuples as lists)."""
        d = asdict(self)
        d["shape"] = list(self.shape)
        d["theorems"] = list(self.theorems)
        d["proved_theorems"] = list(self.proved_theorems)
        return d


@dataclass
class CrosscheckResult:
    """Outcome of :func:`run_crosscheck`.

    Attributes
    ----------
    rows : list of CrosscheckRow
        Every compared stage, in case order.
    cases : list of str
        Ids of the cases run (this shard's).
    devices, dtypes : list of str
        What was swept.
    quick : bool
        The quick sweep.
    shard : tuple of int
        ``(k, n)``.
    left_out : dict of str
        ``"device dtype"`` -> why its cases were not run (a device off the CPU, whose
        kernels the bounds do not model; torch refuses the dtype on this CPU under the
        forced capability, :mod:`pyverify.dispatch`; the CPU flushes subnormal numbers,
        :mod:`pyverify.fp.underflow`); empty when all ran.
    seconds : float
        Wall time (not deterministic: keep out of reproducible outputs).
    """

    rows: list[CrosscheckRow] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    quick: bool = False
    shard: tuple[int, int] = (1, 1)
    left_out: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every row passed."""
        return all(r.passed for r in self.rows)

    @property
    def failures(self) -> list[CrosscheckRow]:
        """Rows that failed."""
        return [r for r in self.rows if not r.passed]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict without timings."""
        return {
            "ok": self.ok,
            "quick": self.quick,
            "shard": list(self.shard),
            "devices": list(self.devices),
            "dtypes": list(self.dtypes),
            "cases": list(self.cases),
            "left_out": dict(sorted(self.left_out.items())),
            "rows": [r.to_dict() for r in self.rows],
        }


def summarize(result: CrosscheckResult) -> list[dict[str, Any]]:
    """Worst errors per (dtype, path, stage) over all cases.

    Returns
    -------
    list of dict
        ``{dtype, path, stage, cases, max_rel, median_rel, tolerance, worst_ratio,
        passed, tolerance_rule, proved, proved_ratio, proved_theorems}`` where
        ``max_rel`` is the largest over the cases,
        ``tolerance`` that case's tolerance (its proved bound: it differs between cases,
        evaluated on each case's operands), ``median_rel`` the median
        of the cases' medians, ``worst_ratio`` the largest error/tolerance over the
        cases, ``passed`` whether all passed and ``tolerance_rule`` the cases' rules
        (:attr:`CrosscheckRow.tolerance_rule`, ``; ``-joined; None when all are None),
        ``proved_ratio`` the largest ``error / proved`` over the cases with ``proved`` its
        bound (None where no case has one), ``proved_cases`` how many cases have one and
        ``proved_theorems`` their IDs; the tightness ``proved / measured`` of each bounded
        case with a non-zero error (per case ``1 / proved_ratio``: the slice where the
        bound comes closest to the error), ``tightness_worst`` (the loosest case),
        ``tightness_median`` and ``tightness_cases`` (how many); sorted by dtype, path,
        stage order.
    """
    groups: dict[tuple[str, str, str], list[CrosscheckRow]] = {}
    for r in result.rows:
        groups.setdefault((r.dtype, r.path, r.stage), []).append(r)
    stage_order = {s: i for i, s in enumerate((*STAGES, "error"))}
    dtype_order = {d: i for i, d in enumerate(DTYPE_NAMES)}
    out = []
    for (dt, path, stage), rows in groups.items():
        biggest = max(rows, key=lambda r: r.max_rel)
        ratios = [r.max_rel / r.tolerance if r.tolerance > 0 else math.inf for r in rows]
        rules = sorted({r.tolerance_rule for r in rows if r.tolerance_rule is not None})
        bounded = [r for r in rows if r.proved_ratio is not None]
        worst_p = max(bounded, key=lambda r: r.proved_ratio or 0.0) if bounded else None
        tight = [1.0 / r.proved_ratio for r in bounded if (r.proved_ratio or 0.0) > 0]
        out.append(
            {
                "dtype": dt,
                "path": path,
                "stage": stage,
                "cases": len(rows),
                "max_rel": biggest.max_rel,
                "median_rel": float(np.median([r.median_rel for r in rows])),
                "tolerance": biggest.tolerance,
                "worst_ratio": max(ratios),
                "passed": all(r.passed for r in rows),
                "tolerance_rule": "; ".join(rules) if rules else None,
                "proved": worst_p.proved if worst_p else None,
                "proved_ratio": worst_p.proved_ratio if worst_p else None,
                "proved_theorems": sorted({t for r in rows for t in r.proved_theorems}),
                "proved_cases": len(bounded),
                "tightness_worst": max(tight) if tight else None,
                "tightness_median": float(np.median(tight)) if tight else None,
                "tightness_cases": len(tight),
            }
        )
    out.sort(
        key=lambda d: (dtype_order.get(d["dtype"], 9), d["path"], stage_order.get(d["stage"], 9))
    )
    return out
