"""The cross-check sweep of a plugin against the float64 reference, stage by stage.

Deterministic cases (seeded by their id): random heads (uncached: A, A_LM, A_P, G and the
output), the same heads G-cached, and the paper's trained ``G_LM`` operators G-cached
(large scores). The plugin gets inputs rounded to its dtype; the reference runs in float64
on the same rounded inputs. Errors are norm-wise relative (``max|x - y| / max|y|``);
tolerances are the suite's (:mod:`pyverify.tolerance`): float64 ``1e-12`` every stage;
below float64, deductive stages at the float32 tolerance and the output within twice
torch's own SDPA error at that dtype (the control) plus its floor.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np
import torch

from pyverify.conformance.subject import Subject
from pyverify.crosscheck.compare import sdpa_error, slice_errors
from pyverify.output import Progress
from pyverify.precision import TORCH_DTYPES
from pyverify.reference import PLGAParams, plga_forward_full
from pyverify.tolerance import output_tolerances, stage_tolerances

__all__ = ["SweepRow", "run_sweep"]

_RANDOM_FULL = [(1, 2), (8, 4), (9, 8), (17, 16), (33, 8), (64, 16), (96, 32)]
_RANDOM_QUICK = [(9, 8), (33, 16)]
_TRAINED_FULL = [(64, layer, head) for layer in range(5) for head in (0, 7, 13)]
_TRAINED_QUICK = [(64, 0, 0), (64, 4, 13)]


@dataclass(frozen=True)
class SweepRow:
    """One compared stage of one case (``error`` is machine-dependent: not in the verdict)."""

    case: str
    stage: str
    error: float
    tolerance: float

    @property
    def passed(self) -> bool:
        """Whether the error is finite and within the tolerance."""
        return math.isfinite(self.error) and self.error <= self.tolerance


def _rng(case: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(case.encode()))


def _out_tol(sub: Subject, q, k, v, G) -> float:
    """The output tolerance: torch SDPA's own error at the dtype is the control."""
    if sub.dtype == "float64":
        return output_tolerances("float64", 0.0, 0.0)[0]
    t = TORCH_DTYPES[sub.dtype]
    q4, k4, v4 = (torch.as_tensor(x)[None, None].to(t) for x in (q, k, v))
    e_qg = sdpa_error(q4, k4, v4, torch.as_tensor(q @ G)[None, None])
    return output_tolerances(sub.dtype, sdpa_error(q4, k4, v4, q4.double()), e_qg)[0]


def _compare(sub: Subject, case: str, q, k, v, params, G=None) -> list[SweepRow]:
    case = f"{sub} {case}"
    q, k, v = sub.round(q), sub.round(k), sub.round(v)
    dummy = PLGAParams.random(dk=q.shape[1], a_dff=1, num_reslayer=0, num_dense=0, seed=0)
    ref = plga_forward_full(q, k, v, dummy if params is None else params, True, G=G)
    got = sub.plga(q, k, v, params, G=G, causal=True)
    tol_ded, _ = stage_tolerances(sub.dtype)
    rows = []
    if G is None:
        for n in ("A", "A_LM", "A_P", "G"):
            err = float(slice_errors(getattr(got, n), getattr(ref.ded, n)).max())
            rows.append(SweepRow(case, n, err, tol_ded))
    err = float(slice_errors(got.out, ref.out).max())
    rows.append(SweepRow(case, "output", err, _out_tol(sub, q, k, v, ref.ded.G)))
    return rows


def run_sweep(sub: Subject, *, quick: bool, progress: Progress | None = None) -> list[SweepRow]:
    """Every case of the sweep on ``sub`` (which offers ``head``)."""
    from pyverify.reference import load_g_lm

    rows: list[SweepRow] = []
    for S, dk in _RANDOM_QUICK if quick else _RANDOM_FULL:
        case = f"random-S{S}dk{dk}"
        rng = _rng(case)
        q, k, v = (rng.standard_normal((S, dk)) for _ in range(3))
        params = PLGAParams.random(dk=dk, a_dff=dk + 4, num_reslayer=2, num_dense=2,
                                   seed=zlib.crc32(case.encode()))  # fmt: skip
        rows += _compare(sub, case, q, k, v, params)
        G = plga_forward_full(sub.round(q), sub.round(q), sub.round(q), params, True).ded.G
        rows += _compare(sub, case + "-gcached", q, k, v, None, G=G)
        if progress:
            progress(f"check: sweep {sub} {case}")
    g_all = load_g_lm("trained")
    for S, layer, head in _TRAINED_QUICK if quick else _TRAINED_FULL:
        case = f"trained-S{S}-L{layer}H{head}"
        rng = _rng(case)
        q, k, v = (rng.standard_normal((S, g_all.shape[-1])) for _ in range(3))
        rows += _compare(sub, case, q, k, v, None, G=np.asarray(g_all[layer, head], np.float64))
        if progress:
            progress(f"check: sweep {sub} {case}")
    return rows
