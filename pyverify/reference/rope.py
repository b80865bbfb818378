"""Rotary position embedding (RoPE) exactly as in the reference model.

Planes are ADJACENT coordinate pairs ``(2p, 2p+1)``, ``p = 0 .. dk/2 - 1``, with
frequency ``theta_p = base^(-2p/dk)`` (``base = 10000``), as torchtune's
``RotaryPositionalEmbeddings``. The row ``x`` at position ``n`` becomes
``x @ R_n.T`` where ``R_n`` is block diagonal with 2 x 2 blocks
``rot(n theta_p) = [[cos, -sin], [sin, cos]]``; per plane::

    y[2p]   = x[2p] cos(n theta_p) - x[2p+1] sin(n theta_p)
    y[2p+1] = x[2p] sin(n theta_p) + x[2p+1] cos(n theta_p)

Positions may be offset (decoding: the new token at position ``S_cache``).
Throughout, ``dk`` is the head dimension (a positive even integer) and ``base``
the RoPE base (default :data:`ROPE_BASE`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pyverify.errors import InputTypeError, InputValueError
from pyverify.reference.validation import as_float_array, check_positive_int

__all__ = [
    "ROPE_BASE",
    "apply_rope",
    "rope_angles",
    "rope_thetas",
    "rot2",
    "rotation_matrix",
]

ROPE_BASE: float = 10000.0
"""RoPE base of the reference model."""

Array = NDArray[np.float64]


def _check_base(base: float) -> float:
    if isinstance(base, bool) or not isinstance(base, int | float | np.floating | np.integer):
        raise InputTypeError(f"base must be a real number; got {type(base).__name__}")
    if not (np.isfinite(base) and base > 0):
        raise InputValueError(f"base must be finite and > 0; got {base}")
    return float(base)


def rope_thetas(dk: int, base: float = ROPE_BASE) -> Array:
    """Plane frequencies ``theta_p = base^(-2p/dk)``, ``p = 0 .. dk/2 - 1``: shape (dk // 2,)."""
    dk = check_positive_int(dk, "dk", even=True)
    base = _check_base(base)
    return base ** (-np.arange(0, dk, 2, dtype=np.float64) / dk)


def _positions(positions: ArrayLike | None, n: int, offset: int) -> Array:
    if positions is None:
        if isinstance(offset, bool) or not isinstance(offset, int | np.integer):
            raise InputTypeError(f"offset must be an int; got {type(offset).__name__}")
        return np.arange(n, dtype=np.float64) + float(offset)
    pos = as_float_array(positions, "positions", ndim=np.ndim(positions))
    if pos.ndim != 1 or pos.shape[0] != n:
        raise InputValueError(f"positions must have shape ({n},); got {pos.shape}")
    return pos


def rope_angles(positions: ArrayLike, dk: int, base: float = ROPE_BASE) -> Array:
    """Angles ``n * theta_p`` (S, dk // 2) for ``positions`` (S,) (any reals) and planes ``p``."""
    pos = as_float_array(np.atleast_1d(positions), "positions", ndim=1)
    return pos[:, None] * rope_thetas(dk, base)[None, :]


def rot2(angle: float) -> Array:
    """The 2 x 2 rotation ``[[cos a, -sin a], [sin a, cos a]]`` by ``angle`` (radians)."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]], dtype=np.float64)


def rotation_matrix(n: float, dk: int, base: float = ROPE_BASE) -> Array:
    """Block-diagonal ``R_n`` (dk, dk) with blocks ``rot(n theta_p)`` on planes ``(2p, 2p+1)``.

    ``n`` is any real position (integers in the model). ``R_n`` is orthogonal with
    ``R_m R_n = R_{m+n}``; the rotated row is ``x @ R_n.T`` (``R_n @ x`` for a column).
    """
    if isinstance(n, bool) or not isinstance(n, int | float | np.integer | np.floating):
        raise InputTypeError(f"n must be a real number; got {type(n).__name__}")
    if not np.isfinite(n):
        raise InputValueError(f"n must be finite; got {n}")
    R = np.zeros((dk, dk), dtype=np.float64)
    for p, theta in enumerate(rope_thetas(dk, base)):
        R[2 * p : 2 * p + 2, 2 * p : 2 * p + 2] = rot2(float(n) * theta)
    return R


def apply_rope(
    x: ArrayLike,
    positions: ArrayLike | None = None,
    *,
    offset: int = 0,
    base: float = ROPE_BASE,
) -> Array:
    """Rotate rows of ``x`` by their positions (adjacent planes).

    Parameters
    ----------
    x : array_like, shape (..., S, dk)
        Rows to rotate; the position axis is ``-2`` (e.g. ``(S, dk)`` or
        ``(heads, S, dk)``), ``dk`` even.
    positions : array_like, shape (S,), optional
        Position of each row; default ``offset + arange(S)``.
    offset : int, default 0
        First position when ``positions`` is not given (decoding).

    Returns
    -------
    numpy.ndarray
        Same shape as ``x``: row ``x[..., n, :]`` becomes ``x[..., n, :] @ R_{pos_n}.T``.

    Raises
    ------
    TypeError, ValueError
        On a bad dtype, fewer than 2 dimensions, odd ``dk``, or bad positions.
    """
    x = as_float_array(x, "x", ndim=np.ndim(x))
    if x.ndim < 2:
        raise InputValueError(f"x must have shape (..., S, dk); got shape {x.shape}")
    S, dk = x.shape[-2], x.shape[-1]
    check_positive_int(dk, "dk (last axis of x)", even=True)
    pos = _positions(positions, S, offset)
    ang = rope_angles(pos, dk, base)  # (S, dk/2)
    c, s = np.cos(ang), np.sin(ang)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out
