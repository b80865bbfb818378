"""Steps 1-3 compared sub-stage by sub-stage, each with its proved bound.

The learner is compared at ``D = Q^T Q``, ``A0`` (its first LayerNorm) and after each
residual unit (``A1``, ..., the last one is ``A``). Each implementation's learner is run
again op for op with its intermediates kept (the kernels:
:func:`pyverify.kernels.learner_trace.trace_learner`; the reference: its NumPy
operations, :func:`reference_trace`), checked to give its ``A`` bit for bit; a sub-stage's
bound is that of :mod:`pyverify.fp.learner` on the trace, composed over the sub-stage's
operations (``fp_layernorm`` with its statistics certified per row; ``fp_swiglu``; the
residual sum, ``fp_decoder_step_residual`` or the kernels' fused accumulator), with the
measured difference of the two sides' inputs as its input error, as every stage of the
cross-check (:func:`pyverify.crosscheck.bounds.pipeline_bounds`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise

import numpy as np

from pyverify.fp.exps import LIB_ACCURACY
from pyverify.fp.formulas import EVAL_SLACK, UNDERFLOW
from pyverify.fp.learner import (
    certify_layernorm,
    check_scale_shift,
    density_bound,
    float_up,
    layernorm_bound,
    reference_sigmoid_exp,
    statistics_ratio,
    swiglu_bound,
)
from pyverify.fp.underflow import BoundRefused
from pyverify.kernels.learner_trace import LayerNormStep, LearnerTrace, SwiGLUStep
from pyverify.precision import UNIT_ROUNDOFF
from pyverify.reference import numpy_stages as ns

__all__ = [
    "REFERENCE_ARITH",
    "SUB_IDS",
    "LearnerArith",
    "Sub",
    "from_rows",
    "kernel_arith",
    "learner_bound",
    "reference_trace",
    "refuse_off_cpu",
    "substages",
    "to_rows",
]


@dataclass(frozen=True)
class LearnerArith:
    """How one side computes the learner: its format, and what the bound must check.

    ``divides``: its LayerNorm divides by ``s = sqrt(v + eps)`` (``r^ = 1 / s``, ``t^ =
    fl(c / s)``) rather than multiplying by a returned ``rstd``; ``check``: its LayerNorm
    outputs are checked against the witnesses (:func:`~pyverify.fp.learner.check_scale_shift`;
    not needed where the trace *is* the modelled operations); ``u_exp``: its SiLU's
    exponential; ``hold``: its parameters' rounding from the float64 ones.
    """

    compute: str
    divides: bool
    check: bool
    u_exp: float
    hold: float

    @property
    def u(self) -> float:
        """Unit round-off of the format."""
        return UNIT_ROUNDOFF[self.compute]

    @property
    def eta(self) -> float:
        """Underflow of one product in the format."""
        return UNDERFLOW[self.compute]


def kernel_arith(compute: str) -> LearnerArith:
    """The kernels' learner on the CPU in ``compute`` (float32, or float64)."""
    return LearnerArith(
        compute,
        False,
        True,
        LIB_ACCURACY[compute],
        0.0 if compute == "float64" else UNIT_ROUNDOFF[compute],
    )


#: The float64 reference: its sigmoid's exponential as ``fp_swiglu_sigmoid`` models it
#: (:func:`~pyverify.fp.learner.reference_sigmoid_exp`), rounded up.
REFERENCE_ARITH = LearnerArith(
    "float64", True, False,
    float_up(reference_sigmoid_exp(Fraction(LIB_ACCURACY["float64"]))), 0.0,
)  # fmt: skip


def to_rows(X: np.ndarray) -> np.ndarray:
    """(B, H, dk, n) -> (H, dk * B, n), the kernels' row layout; (B, H, dk) -> (H, dk * B)."""
    if X.ndim == 3:
        B, H, dk = X.shape
        return X.transpose(1, 2, 0).reshape(H, dk * B)
    B, H, dk, n = X.shape
    return X.transpose(1, 2, 0, 3).reshape(H, dk * B, n)


def from_rows(X: np.ndarray, B: int) -> np.ndarray:
    """(H, dk * B, dk) -> (B, H, dk, dk)."""
    H, _, dk = X.shape
    return X.reshape(H, dk, B, dk).transpose(2, 0, 1, 3)


def reference_trace(q: np.ndarray, heads: list, A: np.ndarray) -> LearnerTrace:
    """The float64 reference's steps 1-3 per slice, its operations in its order, as rows.

    Raises
    ------
    ValueError
        If they do not give its ``A`` (``(B, H, dk, dk)``) bit for bit.
    """
    q = np.asarray(q, np.float64)
    B, H = q.shape[:2]
    per: list[list[list]] = []  # [b][h] -> list of step tuples
    for b in range(B):
        per.append([])
        for h in range(H):
            hp, steps = heads[h], []
            qs = q[b, h]
            D = qs.T @ qs

            def ln(X, gamma, beta, steps=steps, hp=hp):  # type: ignore[no-untyped-def]
                mu = X.mean(axis=-1, keepdims=True)
                xc = X - mu
                s = np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + hp.ln_eps)
                y = xc / s * gamma + beta
                steps.append(("ln", X, y, mu[:, 0], s[:, 0]))
                return y

            X = ln(D, hp.ln0_gamma, hp.ln0_beta)
            for un in hp.reslayers:
                Y = X
                for blk in un.dense:
                    h1, h2 = Y @ blk.W1 + blk.b1, Y @ blk.W2 + blk.b2
                    s1 = ns.silu(h1)
                    g = s1 * h2
                    out = g @ blk.W3 + blk.b3
                    steps.append(("sw", Y, h1, h2, s1, g, out))
                    Y = out
                X = ln(X + Y, un.ln_gamma, un.ln_beta)
            if not np.array_equal(X, A[b, h]):
                raise ValueError("the reference's learner, run again, does not give its A")
            per[b].append([D, *steps])

    def rows(i: int, j: int) -> np.ndarray:
        return to_rows(
            np.stack([np.stack([np.asarray(per[b][h][i][j]) for h in range(H)]) for b in range(B)])
        )

    tr = LearnerTrace(
        to_rows(np.stack([np.stack([per[b][h][0] for h in range(H)]) for b in range(B)]))
    )
    for i, st in enumerate(per[0][0][1:], start=1):
        if st[0] == "ln":
            tr.steps.append(LayerNormStep(*(rows(i, j) for j in range(1, 5))))
        else:
            tr.steps.append(SwiGLUStep(*(rows(i, j) for j in range(1, 7)), None))
    return tr


@dataclass(frozen=True)
class Sub:
    """One compared sub-stage: its name, what it computes, its steps and inputs.

    ``kind``: ``D``; ``ln`` (a LayerNorm); ``f`` (a SwiGLU block but its unit's last);
    ``z`` (the unit's last block and the residual sum); ``double`` (``X + X``, a unit
    without blocks). ``inputs``: indices of the sub-stages whose values it reads (for ``z``:
    the block's input, then the unit's input ``X``). ``step``: the trace step (``z``: the
    last block); ``params``: where its parameters are (``(unit, block)``; unit 0: ``LN0``).
    """

    name: str
    kind: str
    inputs: tuple[int, ...]
    step: int
    params: tuple[int, int]


#: The theorems of each kind of sub-stage.
SUB_IDS: dict[str, tuple[str, ...]] = {
    "D": ("fp_mixed_precision",),
    "ln": ("fp_layernorm",),
    "f": ("fp_swiglu", "fp_mixed_precision"),
    "z": ("fp_swiglu", "fp_mixed_precision", "fp_decoder_step"),
    "double": ("fp_decoder_step",),  # X + X: the residual sum with g = id, exact
}


def refuse_off_cpu(device: str, dtype: str) -> None:
    """Raise :class:`~pyverify.fp.underflow.BoundRefused` for a learner off the CPU."""
    if device != "cpu":
        raise BoundRefused(
            f"{device} {dtype}: the learner's premises (ATen's CPU LayerNorm, SiLU, GEMMs) "
            "are the CPU kernels'"
        )


def substages(tr: LearnerTrace) -> tuple[list[Sub], list[np.ndarray]]:
    """The sub-stages of a trace and their values (row layout), in order.

    ``D``, ``A0``; per unit ``k``: ``Uk.f1`` ... (its blocks but the last), ``Uk.Z`` (the
    residual sum ``X + f(X)``), ``Ak`` (its LayerNorm; the last unit's is ``A``).
    """
    subs, vals = [Sub("D", "D", (), -1, (0, 0))], [tr.D]
    lns = [i for i, st in enumerate(tr.steps) if isinstance(st, LayerNormStep)]
    subs.append(Sub("A0", "ln", (0,), lns[0], (0, 0)))
    vals.append(tr.steps[lns[0]].y)
    for k, (a, b) in enumerate(pairwise(lns), start=1):
        x_idx = prev = len(subs) - 1
        blocks = list(range(a + 1, b))
        for j, i in enumerate(blocks[:-1], start=1):
            subs.append(Sub(f"U{k}.f{j}", "f", (prev,), i, (k, j)))
            vals.append(tr.steps[i].out)
            prev = len(subs) - 1
        if blocks:
            subs.append(Sub(f"U{k}.Z", "z", (prev, x_idx), blocks[-1], (k, len(blocks))))
        else:
            subs.append(Sub(f"U{k}.Z", "double", (x_idx,), -1, (k, 0)))
        vals.append(tr.steps[b].x)
        last = k == len(lns) - 1
        subs.append(Sub("A" if last else f"A{k}", "ln", (len(subs) - 1,), b, (k, 0)))
        vals.append(tr.steps[b].y)
    return subs, vals


def _ln_params(sub: Sub, hp) -> tuple:  # type: ignore[no-untyped-def]
    k = sub.params[0]
    if k == 0:
        return hp.ln0_gamma, hp.ln0_beta
    return hp.reslayers[k - 1].ln_gamma, hp.reslayers[k - 1].ln_beta


def _ln_cert(st: LayerNormStep, h: int, hp, gamma, beta, ar: LearnerArith):  # type: ignore[no-untyped-def]
    """The held ``gamma``, ``beta`` and the call's certificate (its outputs checked)."""
    fmt = np.dtype(ar.compute).type
    g_h, b_h = (np.asarray(t, np.float64).astype(fmt).astype(np.float64) for t in (gamma, beta))
    x, mu, rs = st.x[h], st.mean[h], st.rstd[h]
    c = (x.astype(fmt) - mu.astype(fmt)[:, None]).astype(np.float64)
    if ar.divides:
        r_hat = [1 / Fraction(float(v)) for v in rs]
    else:
        r_hat = [Fraction(float(v)) for v in rs]
    if ar.check:
        t = (c.astype(fmt) * rs.astype(fmt)[:, None]).astype(np.float64)
        check_scale_shift(st.y[h], t, g_h, b_h, ar.u, fmt)
    return g_h, b_h, certify_layernorm(x, mu, r_hat, c, hp.ln_eps)


def _ratios(st: LayerNormStep, h: int, hp, cert, ar: LearnerArith) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """:func:`~pyverify.fp.learner.statistics_ratio` of one head's call.

    The routine's reciprocal square root ``fl(1 / fl(sqrt(w)))``:
    ``u_rs = (1 + u) / (1 - u) - 1``.
    """
    u = Fraction(ar.u)
    u_rs = float((1 + u) / (1 - u) - 1) * (1 + 2.0**-50)
    return statistics_ratio(st.x[h], cert, hp.ln_eps, u=ar.u, eta=ar.eta, u_rs=u_rs)


def _sub_bound(
    tr: LearnerTrace,
    sub: Sub,
    h: int,
    hp,
    d: list[np.ndarray],
    ar: LearnerArith,
    ratios: list | None,
) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Sub-stage ``sub`` of head ``h`` (rows), its inputs off by ``d`` (one per input).

    A LayerNorm's statistics ratios are appended to ``ratios`` (when given), from the same
    certificate as its bound.
    ``[fp_layernorm]``, ``[fp_swiglu]``; a unit without blocks: ``LayerNorm(X + X)``, the
    doubling exact (``2 d``); the residual sum: ``[fp_decoder_step]``'s
    ``fp_decoder_step_residual`` (``|X + Y| <= |Z^| (1 + 2 u) + dX + dY``), or the
    kernels' fused accumulator (``[fp_mixed_precision]``, in :func:`swiglu_bound`).
    """
    u, (k, j) = ar.u, sub.params
    if sub.kind == "ln":
        st = tr.steps[sub.step]
        g_h, b_h, cert = _ln_cert(st, h, hp, *_ln_params(sub, hp), ar)
        if ratios is not None:
            ratios.append(_ratios(st, h, hp, cert, ar))
        return layernorm_bound(
            st.x[h], d[0], g_h, b_h, hp.ln_eps, cert, u=u, eta=ar.eta, u_hold=ar.hold
        )
    if sub.kind == "double":  # X + X: exact
        return 2 * d[0]
    st = tr.steps[sub.step]
    acc = None if st.acc is None else st.acc[h]
    dY = swiglu_bound(st.Y[h], d[0], hp.reslayers[k - 1].dense[j - 1], st.h1[h], st.h2[h],
                      st.s1[h], st.g[h], u=u, eta=ar.eta, u_exp=ar.u_exp, u_hold=ar.hold,
                      acc=acc)  # fmt: skip
    if sub.kind == "f":
        return dY
    dX = d[1]
    if acc is not None:  # the kernels: the residual fused into the last product
        return EVAL_SLACK * (dY + dX)
    # fp_decoder_step_residual: fl(X + Y), |X + Y| <= |Z^| (1 + 2u) + dX + dY
    Z = tr.steps[sub.step + 1].x[h]
    return EVAL_SLACK * ((dX + dY) * (1 + u) + u * (np.abs(Z) * (1 + 2 * u) + dX + dY))


def learner_bound(
    tr: LearnerTrace, heads: list, ar: LearnerArith, q: np.ndarray, sub: Sub,
    d_in: list[np.ndarray], ratios: list | None = None,
) -> np.ndarray:  # fmt: skip
    """Sub-stage ``sub``'s bound (``(B, H, dk, dk)``) on inputs off by ``d_in``.

    ``q``: the exact queries (B, H, S, dk); ``d_in``: one error per input of ``sub``, row
    layout ``(H, dk * B, dk)`` (none for ``D``, whose input is ``q`` itself). ``ratios``:
    for a LayerNorm, each head's ``(mean, rstd)`` statistics over the two-pass routine's
    proved worst case (:func:`~pyverify.fp.learner.statistics_ratio`) is appended, from
    the certificate the bound uses (certified once).
    """
    q = np.asarray(q, np.float64)
    B, H = q.shape[:2]
    if sub.kind == "D":
        return np.stack(
            [np.stack([density_bound(q[b, h], ar.u, ar.eta) for h in range(H)]) for b in range(B)]
        )
    rows = [_sub_bound(tr, sub, h, heads[h], [d[h] for d in d_in], ar, ratios) for h in range(H)]
    return from_rows(np.stack(rows), B)
