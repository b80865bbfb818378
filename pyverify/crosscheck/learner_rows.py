"""The rows of steps 1-3 (``D``, ``A0``, ``A1``, ..., ``A``) of a ``random`` or ``mpmath`` case."""

from __future__ import annotations

import numpy as np
import torch

from pyverify.crosscheck.bounds import MP_REL, U64, stage_bound
from pyverify.crosscheck.compare import Comparer, as_numpy
from pyverify.crosscheck.learner_bound import (
    REFERENCE_ARITH,
    SUB_IDS,
    from_rows,
    kernel_arith,
    learner_bound,
    reference_trace,
    refuse_off_cpu,
    substages,
    to_rows,
)
from pyverify.crosscheck.results import CrosscheckRow
from pyverify.precision import MPMATH_DPS

__all__ = ["learner_rows_mpmath", "learner_rows_random"]


def learner_rows_random(
    cmp: Comparer, q: torch.Tensor, heads: list, p, A: torch.Tensor, A_ref: np.ndarray
) -> list[CrosscheckRow]:  # type: ignore[no-untyped-def]
    """The kernels' learner (``p``; its ``A``) vs the float64 reference, by sub-stage.

    Each sub-stage's bound: the kernels' on their own input (off by the measured
    difference of the two inputs) plus the reference's on the exact input (its own). A
    LayerNorm row also fails where the kernels' certified statistics are less accurate
    than the two-pass routine's proved worst case (``learner_bound``'s ``ratios``, from
    the certificates its bound uses): the bound takes the statistics as certified, so it
    alone would not see digits lost there.
    """
    from pyverify.kernels.learner_trace import trace_learner

    qn = as_numpy(q)
    B = qn.shape[0]
    tr = trace_learner(q, p)
    if tr.A is None or not torch.equal(tr.A, A):
        raise ValueError("the traced learner does not reproduce the kernels' A bit for bit")
    rtr = reference_trace(qn, heads, A_ref)
    subs, got = substages(tr)
    rsubs, want = substages(rtr)
    if [s.name for s in subs] != [s.name for s in rsubs]:
        raise ValueError("the kernels' and the reference's learners differ in their steps")
    comp = "float64" if q.dtype == torch.float64 else "float32"
    ka = kernel_arith(comp)

    def bound(k: int, ratios: list) -> np.ndarray:
        refuse_off_cpu(q.device.type, comp)
        d = [np.abs(got[i] - want[i]) for i in subs[k].inputs]
        own = learner_bound(tr, heads, ka, qn, subs[k], d, ratios)
        zero = [0 * x for x in d]
        return own + learner_bound(rtr, heads, REFERENCE_ARITH, qn, rsubs[k], zero)

    rows = []
    for k, s in enumerate(subs):
        ratios: list[tuple[float, float]] = []
        proved = stage_bound(s.name, lambda k=k, r=ratios: bound(k, r), SUB_IDS[s.kind])
        ok, note = True, None
        if ratios:  # a LayerNorm certified on the CPU
            rm, ru = (max(r[i] for r in ratios) for i in (0, 1))
            ok = rm <= 1 and ru <= 1
            note = f"statistics at {rm:.2g} (mean), {ru:.2g} (rstd) of the two-pass worst case"
        rows.append(cmp.stage(
            s.name, from_rows(got[k], B), from_rows(want[k], B), proved, extra_ok=ok, note=note,
        ))  # fmt: skip
    return rows


def _mp_values(q: np.ndarray, heads: list) -> list[np.ndarray]:
    """Mpmath's ``D``, ``A0``, ``A1``, ..., ``A`` per slice, rounded to float64."""
    import mpmath

    from pyverify.reference import mp
    from pyverify.reference import mp_stages as mps

    ctx = mpmath.MPContext()
    ctx.dps = MPMATH_DPS
    B, H = q.shape[:2]
    per = []
    for b in range(B):
        row = []
        for h in range(H):
            hp = heads[h]
            D = mps.density(q[b, h], ctx)
            X = mps.layer_norm_rows(D, hp.ln0_gamma, hp.ln0_beta, hp.ln_eps, ctx)
            vals = [D, X]
            for un in hp.reslayers:
                Y = X
                for i, blk in enumerate(un.dense):
                    Y = mps.swiglu(Y, blk, ctx)
                    if i < len(un.dense) - 1:
                        vals.append(Y)
                Z = [
                    [x + y for x, y in zip(rx, ry, strict=True)]
                    for rx, ry in zip(X, Y, strict=True)
                ]
                X = mps.layer_norm_rows(Z, un.ln_gamma, un.ln_beta, hp.ln_eps, ctx)
                vals += [Z, X]
            row.append([np.asarray(mp.to_numpy(v), np.float64) for v in vals])
        per.append(row)
    return [to_rows(np.stack([np.stack([per[b][h][k] for h in range(H)]) for b in range(B)]))
            for k in range(len(per[0][0]))]  # fmt: skip


def learner_rows_mpmath(
    cmp: Comparer, q: np.ndarray, heads: list, A: np.ndarray
) -> list[CrosscheckRow]:
    """The float64 reference's learner against mpmath's (rounded to float64).

    The exact input of a sub-stage is mpmath's previous value, within ``2 u64 |x|`` of its
    rounding; the exact output within ``(u64 + MP_REL)(1 + u64) |x|`` of the rounded one.
    """
    q = np.asarray(q, np.float64)
    B = q.shape[0]
    rtr = reference_trace(q, heads, A)
    subs, got = substages(rtr)
    want = _mp_values(q, heads)

    def bound(k: int) -> np.ndarray:
        """``[fp_elementwise]`` (``L = 1``): the exact input within ``2 u64 |x|`` of mpmath's."""
        d = [np.abs(got[i] - want[i]) + 2 * U64 * np.abs(want[i]) for i in subs[k].inputs]
        own = learner_bound(rtr, heads, REFERENCE_ARITH, q, subs[k], d)
        return own + (U64 + MP_REL) * (1 + U64) * from_rows(np.abs(want[k]), B)

    return [
        cmp.stage(s.name, from_rows(got[k], B), from_rows(want[k], B),
                  stage_bound(s.name, lambda k=k: bound(k), SUB_IDS[s.kind]))
        for k, s in enumerate(subs)
    ]  # fmt: skip
