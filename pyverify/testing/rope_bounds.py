"""Proved error bounds of the RoPE rotations, as the ``rope_*`` property tests compose them.

A rotation entry is ``cos`` or ``sin`` of a float64 angle ``fl(n theta_p)`` (or ``a + b``),
computed by the float64 library routine and rounded to a format; a rotated row is the
plane's two products and their sum, rounded to the input format. Each function evaluates
the Lean theorems named in its docstring (:mod:`pyverify.fp.formulas`); the premises are
the declared library accuracies (:data:`~pyverify.fp.exps.TRIG_ACCURACY` for ``cos``/``sin``,
:data:`~pyverify.fp.exps.LIB_ACCURACY` for the ``pow`` of the frequencies), which
:func:`trig_excess` and :func:`theta_excess` check against mpmath on the tests' inputs.

Two exact references: *the implementation's own frequencies* ``theta^_p`` (tests that
compare an implementation with itself: every identity of RoPE holds for any real
``theta``, so only the rounding of ``n theta^_p`` counts, :func:`angle_rounding`), and
*the spec's exact* ``theta_p = base^(-2p/dk)`` (tests against an independent oracle:
:func:`angle_error`, which adds the frequencies' own error, :func:`theta_error`).

A decoder's table (:func:`rotations`): the one an implementation uses, read out of its
``rope`` and certified entry by entry against mpmath, no accuracy declared; its stage
bound :func:`rope_bound` (``[fp_decoder_step]``), for :mod:`pyverify.testing.decoder_bounds`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np
import torch

from pyverify.fp.exps import LIB_ACCURACY, TRIG_ACCURACY
from pyverify.fp.formulas import EVAL_SLACK, UNDERFLOW, fp_dot_product, fp_elementwise
from pyverify.fp.models import Arithmetic
from pyverify.precision import UNIT_ROUNDOFF
from pyverify.reference import ROPE_BASE
from pyverify.testing.fp import MP_REL
from pyverify.testing.stage_bounds import StageArith, exact_gap, mp_context

__all__ = [
    "PLANE",
    "U64",
    "Rotations",
    "angle_error",
    "angle_rounding",
    "entry_error",
    "exact_thetas",
    "plane_blocks",
    "plane_norm1",
    "product_error",
    "rope_bound",
    "rope_mp",
    "rope_row_error",
    "rotated_error",
    "rotations",
    "theta_error",
    "theta_excess",
    "trig_excess",
]

#: ``[fp_ieee_rounding]`` float64's unit round-off: the angles, the oracles' arithmetic.
U64 = UNIT_ROUNDOFF["float64"]
#: ``[fp_dot_product]`` The terms of one entry of a plane rotation: two products (the
#: statement's ``n``), the coordinates of a plane.
PLANE = 2


def exact_thetas(dk: int, base: float = ROPE_BASE) -> list[mpmath.mpf]:
    """The spec's frequencies ``base^(-2p/dk)`` in mpmath (``MP_DPS`` digits)."""
    ctx = mp_context()
    return [ctx.power(ctx.mpf(base), -ctx.mpf(PLANE * p) / dk) for p in range(dk // PLANE)]


def theta_error(dk: int, base: float = ROPE_BASE) -> np.ndarray:
    """``[fp_elementwise]`` ``|theta^_p - theta_p|``: the float64 frequencies of the spec.

    ``theta^_p = pow(base, fl(-2p/dk))`` (NumPy's and torch's alike): the exponent is one
    rounded quotient (``[fp_ieee_rounding]``, ``d = u64 |x|``), ``f = base^x`` moves by at
    most ``ln(base) base^(x + d)`` per unit on the segment (``f'`` increases), and the
    library ``pow`` has relative error ``r = LIB_ACCURACY["float64"]`` (declared; checked
    by :func:`theta_excess`). The Lipschitz constant is evaluated in mpmath, rounded up.
    """
    ctx = mp_context()
    out = []
    for p, theta in enumerate(exact_thetas(dk, base)):
        x = ctx.mpf(PLANE * p) / dk
        d = U64 * x
        lip = float(ctx.log(base) * ctx.power(base, -x + d)) * EVAL_SLACK
        out.append(fp_elementwise(lip, float(d), LIB_ACCURACY["float64"], float(theta)))
    return np.asarray(out, dtype=np.float64) * EVAL_SLACK


def angle_rounding(angle) -> np.ndarray:  # type: ignore[no-untyped-def]
    """``[fp_ieee_rounding]`` The float64 angle against its exact value at the same inputs.

    ``fl(n theta^_p)`` (an integer ``n``, exact in float64, times a float64 frequency) or
    ``fl(a + b)`` (the exact sum of two float64 numbers: no underflow term,
    ``fp_ieee_rounding_add``): one rounding, ``u64 |angle|``; the products are 0 or above
    ``1e-4``, in the normal range. ``angle`` bounds the exact angle's modulus.
    """
    return U64 * np.abs(np.asarray(angle, dtype=np.float64))


def angle_error(n, dk: int, base: float = ROPE_BASE) -> np.ndarray:  # type: ignore[no-untyped-def]
    """``[fp_ieee_rounding]`` ``|fl(n theta^_p) - n theta_p|`` against the spec's exact ``theta_p``.

    ``(dk // 2,)`` (or ``n``'s shape times it): ``|n| dtheta_p`` from the frequency
    (:func:`theta_error`) plus one rounding of ``|n theta^_p| <= |n| (theta_p + dtheta_p)``.
    """
    n = np.abs(np.asarray(n, dtype=np.float64))[..., None]
    dth = theta_error(dk, base)
    th = np.asarray([float(t) for t in exact_thetas(dk, base)]) * EVAL_SLACK
    return (n * dth + angle_rounding(n * (th + dth))) * EVAL_SLACK


def entry_error(angle_err, u_round: float, eta_round: float):  # type: ignore[no-untyped-def]
    """``[fp_elementwise]`` One rotation entry, rounded once to a format, against the exact.

    The library ``cos``/``sin`` of a computed angle against those of the exact angle.
    ``f`` = ``cos`` or ``sin``: ``L = 1`` (``|f'| <= 1``), ``|f| <= 1``; the input is off by
    ``d = angle_err``; the routine is the library function (absolute error
    ``TRIG_ACCURACY``) followed by one rounding (``[fp_ieee_rounding]``:
    ``u_round |y| + eta_round``), so ``r = u_round``,
    ``eta_f = (1 + u_round) TRIG_ACCURACY + eta_round``.
    """
    eta_f = (1 + u_round) * TRIG_ACCURACY + eta_round
    return fp_elementwise(1.0, angle_err, u_round, 1.0, eta_f)


def product_error(abs_a, abs_b, err_a, err_b, n: int = PLANE):  # type: ignore[no-untyped-def]
    """``[fp_dot_product]`` ``fl(A^ B^)`` in float64 against the exact ``A B``.

    ``A^ = A + dA``, ``B^ = B + dB`` with ``|dA| <= err_a``, ``|dB| <= err_b`` entrywise
    (2-D arrays, or 1-D for a dot product); every entry has at most ``n`` non-zero products
    (the others exact zeros, and adding an exact zero is exact: ``[fp_ieee_rounding]``,
    numbers of the format are fixed). The evaluation: ``gamma_n |A^||B^|`` plus the
    products' underflow; the perturbation, exact algebra (``A^B^ - AB = dA B^ + A dB``,
    ``|A| <= |A^| + dA``): ``err_a |B^| + (|A^| + err_a) err_b``.
    """
    abs_a, abs_b = np.asarray(abs_a, np.float64), np.asarray(abs_b, np.float64)
    err_a, err_b = np.asarray(err_a, np.float64), np.asarray(err_b, np.float64)
    fl = fp_dot_product(abs_a @ abs_b, n, U64, n * UNDERFLOW["float64"])
    return (fl + err_a @ abs_b + (abs_a + err_a) @ err_b) * EVAL_SLACK


def plane_blocks(dk: int) -> np.ndarray:
    """``[rope_group]`` ``(dk, dk)``: 1 on the plane blocks of a block-diagonal ``R_n``, else 0.

    The planes ``(2p, 2p+1)``: ``R_n``'s only non-zero entries lie in these blocks.
    """
    return np.kron(np.eye(dk // PLANE), np.ones((PLANE, PLANE)))


def plane_norm1(x) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Each coordinate replaced by its plane's 1-norm ``|x_2p| + |x_2p+1|`` (last axis)."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    return np.repeat(a[..., 0::PLANE] + a[..., 1::PLANE], PLANE, axis=-1) * EVAL_SLACK


def rope_row_error(ar: Arithmetic, rho, angle_err):  # type: ignore[no-untyped-def]
    """``[fp_elementwise]`` ``[fp_dot_product]`` ``[fp_ieee_rounding]``: a rotated coordinate.

    ``x0 cos - x1 sin`` (or ``x0 sin + x1 cos``) as ``apply_rope`` computes it on a held
    row, against the exact rotation of that row: ``cos``/``sin`` within ``e``
    (:func:`entry_error`, rounded to the compute format: ``u_c``, ``eta_c``); the plane's
    two products and their sum at ``u_c`` (``[fp_dot_product]`` on ``|x_i||c^_i| <= (1 + e)
    rho``, ``rho = |x0| + |x1|``, :func:`plane_norm1`, plus the propagated ``e rho``); the
    result rounded to the input format (``u_io (|y| + err) + eta_io``, ``|y| <= rho``).
    The reference (float64 throughout) is covered with ``u_c = u_io = u64``.
    """
    rho = np.asarray(rho, dtype=np.float64)
    e = entry_error(angle_err, ar.u_c, ar.eta_c)
    dot = fp_dot_product((1 + e) * rho, PLANE, ar.u_c, PLANE * ar.eta_c) + e * rho
    return (dot + ar.u_io * (rho + dot) + ar.eta_io) * EVAL_SLACK


def rotated_error(err):  # type: ignore[no-untyped-def]
    """``[rope_group]`` An error within ``err`` per coordinate, through an exact rotation.

    The plane's 2-norm is kept (``R^T R = I``), so each coordinate is within the hypot of
    the plane's two bounds (``err`` per coordinate on the last axis).
    """
    err = np.asarray(err, dtype=np.float64)
    plane = np.hypot(err[..., 0::PLANE], err[..., 1::PLANE])
    return np.repeat(plane, PLANE, axis=-1) * EVAL_SLACK


def trig_excess(angles, device: str = "cpu") -> float:  # type: ignore[no-untyped-def]
    """``[fp_elementwise]`` The premise ``TRIG_ACCURACY`` on float64 ``angles``.

    The largest ``|cos^(a) - cos a|`` and ``|sin^(a) - sin a|`` of NumPy's and torch's
    (on ``device``) float64 routines against mpmath, over ``TRIG_ACCURACY``: at most 1
    where the declared accuracy holds.
    """
    a = np.asarray(angles, dtype=np.float64).ravel()
    ta = torch.as_tensor(a, device=device)
    ctx = mp_context()
    worst = ctx.mpf(0)
    for fn, mfn in ((np.cos, ctx.cos), (np.sin, ctx.sin)):
        got = (fn(a), getattr(torch, fn.__name__)(ta).cpu().numpy())
        for i, x in enumerate(a):
            exact = mfn(ctx.mpf(float(x)))
            room = TRIG_ACCURACY - MP_REL
            for g in got:
                worst = max(worst, abs(ctx.mpf(float(g[i])) - exact) / room)
    return float(worst)


def theta_excess(dk: int, device: str = "cpu", base: float = ROPE_BASE) -> float:
    """``[fp_elementwise]`` :func:`theta_error` on NumPy's and torch's float64 frequencies.

    ``base ** (-(2p)/dk)`` as ``pyverify.reference.rope_thetas`` and the kernels'
    ``rope_angles`` form it, against mpmath, over the bound: at most 1 where it holds.
    """
    p = np.arange(0, dk, PLANE, dtype=np.float64)
    got = (
        base ** (-p / dk),
        (base ** (-torch.as_tensor(p, device=device) / dk)).cpu().numpy(),
    )
    bound = theta_error(dk, base)
    ctx = mp_context()
    worst = ctx.mpf(0)
    for i, exact in enumerate(exact_thetas(dk, base)):
        for g in got:
            worst = max(worst, abs(ctx.mpf(float(g[i])) - exact) / (float(bound[i]) - MP_REL))
    return float(worst)


# --------------------------------------------------------------------------- a decoder's table
@dataclass(frozen=True)
class Rotations:
    """An implementation's RoPE table at positions ``0 .. S-1`` and its certificate.

    ``c``, ``s``: ``(S, dk/2)`` cosines and sines as the implementation holds them;
    ``e_c``, ``e_s``: their distances to the exact ``cos``/``sin`` of ``n theta_p``, rounded
    up; ``cos``, ``sin``: the exact values (mpf rows).
    """

    c: np.ndarray
    s: np.ndarray
    e_c: np.ndarray
    e_s: np.ndarray
    cos: list[list[Any]]
    sin: list[list[Any]]


def rotations(impl: Any, S: int, dk: int, base: float, ctx: Any) -> Rotations:
    """``impl``'s rotations read out of its ``rope``, certified against mpmath.

    Rows ``(1, 0, 1, 0, ...)`` at positions ``0 .. S-1``: the rotated row is
    ``(c^_p, s^_p)`` per plane (products with 1 and 0 and sums with 0 are exact). Each
    entry's distance to ``cos``/``sin(n theta_p)``, ``theta_p = base^(-2p/dk)`` exact, is
    computed in mpmath and rounded up: it takes in the angle's formation, the library's
    ``cos`` and ``sin`` and the rounding to the compute dtype, whatever they are.
    """
    unit = np.zeros((1, S, dk))
    unit[..., 0::PLANE] = 1.0
    out = np.asarray(impl.rope(unit, offset=0), dtype=np.float64)[0]
    c, s = out[:, 0::PLANE], out[:, 1::PLANE]
    theta = exact_thetas(dk, base)
    cos = [[ctx.cos(n * t) for t in theta] for n in range(S)]
    sin = [[ctx.sin(n * t) for t in theta] for n in range(S)]
    return Rotations(c, s, exact_gap(c, cos), exact_gap(s, sin), cos, sin)


def rope_mp(X: list[list[Any]], rot: Rotations, dk: int) -> list[list[Any]]:
    """The exact rotation of every head's ``dk`` columns of the rows ``X``."""
    out = []
    for n, row in enumerate(X):
        y = list(row)
        for j in range(0, len(row), 2):
            p = (j % dk) // 2
            c, s = rot.cos[n][p], rot.sin[n][p]
            y[j], y[j + 1] = c * row[j] - s * row[j + 1], s * row[j] + c * row[j + 1]
        out.append(y)
    return out


def rope_bound(ax: np.ndarray, d: np.ndarray, rot: Rotations, dk: int, sa: StageArith):
    """``[fp_decoder_step]`` RoPE on computed rows: the affine stage, the exact rotation as map.

    ``fp_decoder_step_affine``. ``ax``: the exact rows' magnitudes, ``d``: their error
    (``|x^| <= ax + d``). Per plane the kernel forms ``c^ x0 - s^ x1`` and
    ``s^ x0 + c^ x1``: two products, rounded or fused (``[fp_dot_product]``, ``n = 2``,
    each product underflowing by ``eta``), within the certificate of the exact rotation's
    action (``e_c |x0| + e_s |x1|``): ``B``; the map's entries ``|cos| <= |c^| + e_c``,
    ``|sin| <= |s^| + e_s`` carry ``d``.
    """
    reps = ax.shape[1] // dk
    c, s = np.abs(np.tile(rot.c, reps)), np.abs(np.tile(rot.s, reps))
    e_c, e_s = np.tile(rot.e_c, reps), np.tile(rot.e_s, reps)
    a = ax + d
    a0, a1, d0, d1 = a[:, 0::PLANE], a[:, 1::PLANE], d[:, 0::PLANE], d[:, 1::PLANE]
    u, eta2 = float(sa.u), PLANE * float(sa.eta)
    out = np.empty_like(ax)
    out[:, 0::PLANE] = (fp_dot_product(c * a0 + s * a1, PLANE, u, eta2) + e_c * a0 + e_s * a1
                        + (c + e_c) * d0 + (s + e_s) * d1)  # fmt: skip
    out[:, 1::PLANE] = (fp_dot_product(s * a0 + c * a1, PLANE, u, eta2) + e_s * a0 + e_c * a1
                        + (s + e_s) * d0 + (c + e_c) * d1)  # fmt: skip
    return EVAL_SLACK * out
