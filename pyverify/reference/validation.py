"""Argument checks shared by the public API of the reference.

Every check raises ``TypeError`` (wrong kind of object or dtype) or
``ValueError`` (wrong shape, non-finite values, empty mask rows) with the
argument's name and the expected shape/dtype in the message, so that no bad
input can turn into a silent NaN further down.

Accepted numeric input: real floating arrays (float16/32/64, longdouble) and
integer arrays, converted to float64. Rejected with ``TypeError``: bool,
complex, object, string and other non-numeric dtypes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pyverify.errors import (
    InputTypeError,
    InputValueError,
    NonFiniteStageError,
    PowerLawOverflowError,
)

__all__ = [
    "NonFiniteStageError",
    "PowerLawOverflowError",
    "as_bool_mask",
    "as_float_array",
    "check_finite_stage",
    "check_list",
    "check_positive_int",
    "check_range",
]


def _shape_str(shape: Sequence[int | str]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + (",)" if len(shape) == 1 else ")")


def as_float_array(
    x: ArrayLike,
    name: str,
    *,
    shape: Sequence[int | str | None] | None = None,
    ndim: int | None = None,
) -> NDArray[np.float64]:
    """Convert ``x`` to a finite float64 array, checking dtype and shape.

    Parameters
    ----------
    x : array_like
        Real floating or integer data.
    name : str
        Argument name used in error messages.
    shape : sequence of int, str or None, optional
        Expected shape. An ``int`` entry must match exactly; a ``str`` or
        ``None`` entry is a free dimension (the string is the symbol shown in
        error messages, e.g. ``"S"``).
    ndim : int, optional
        Expected number of dimensions (implied by ``shape`` when given).

    Returns
    -------
    numpy.ndarray
        A float64 array (a copy when conversion was needed).

    Raises
    ------
    TypeError
        If ``x`` has a bool, complex, object, string or other non-real dtype.
    ValueError
        If the shape is wrong or any entry is inf/NaN.
    """
    if isinstance(x, np.ndarray):
        arr = x
    else:
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError) as exc:  # ragged nested lists etc.
            raise InputTypeError(
                f"{name} must be a real numeric array; got {type(x).__name__}"
            ) from exc
    kind = arr.dtype.kind
    if kind == "b":
        raise InputTypeError(
            f"{name} must be a real floating array (float64 expected); got dtype bool"
        )
    if kind == "c":
        raise InputTypeError(
            f"{name} must be a real floating array (float64 expected); "
            f"got complex dtype {arr.dtype}"
        )
    if kind not in "fiu":
        raise InputTypeError(
            f"{name} must be a real floating array (float64 expected); got dtype {arr.dtype}"
        )
    expected_ndim = len(shape) if shape is not None else ndim
    shown = _shape_str([s if s is not None else "?" for s in shape]) if shape is not None else None
    if expected_ndim is not None and arr.ndim != expected_ndim:
        what = f"shape {shown}" if shown else f"{expected_ndim} dimensions"
        raise InputValueError(f"{name} must have {what}; got shape {arr.shape}")
    if shape is not None:
        for axis, (want, got) in enumerate(zip(shape, arr.shape, strict=True)):
            if isinstance(want, int) and want != got:
                raise InputValueError(
                    f"{name} must have shape {shown}; got shape {arr.shape} "
                    f"(axis {axis} is {got}, expected {want})"
                )
    out = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(out)):
        bad = int(np.size(out) - np.count_nonzero(np.isfinite(out)))
        raise InputValueError(f"{name} must be finite; it has {bad} inf/NaN entries")
    return out


def as_bool_mask(mask: ArrayLike, name: str, shape: tuple[int, int]) -> NDArray[np.bool_]:
    """Check a boolean attention mask (``True`` = may attend).

    Parameters
    ----------
    mask : array_like of bool
        Mask of shape ``shape``.
    name : str
        Argument name used in error messages.
    shape : tuple of int
        Expected ``(S_q, S_k)``.

    Returns
    -------
    numpy.ndarray
        The mask as a bool array.

    Raises
    ------
    TypeError
        If the dtype is not bool.
    ValueError
        If the shape differs from ``shape``.
    """
    arr = np.asarray(mask)
    if arr.dtype.kind != "b":
        raise InputTypeError(f"{name} must be a bool array (True = attend); got dtype {arr.dtype}")
    if arr.shape != tuple(shape):
        raise InputValueError(f"{name} must have shape {_shape_str(shape)}; got shape {arr.shape}")
    return arr


def check_positive_int(value: object, name: str, *, even: bool = False) -> int:
    """Check that ``value`` is a positive ``int`` (optionally even).

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        Argument name used in error messages.
    even : bool, default False
        Also require an even value.

    Returns
    -------
    int
        ``value`` as an ``int``.

    Raises
    ------
    TypeError
        If ``value`` is not an integer (bool is rejected).
    ValueError
        If ``value`` is not positive (or not even when required).
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InputTypeError(f"{name} must be an int; got {type(value).__name__}")
    ivalue = int(value)
    if ivalue <= 0:
        raise InputValueError(f"{name} must be positive; got {ivalue}")
    if even and ivalue % 2:
        raise InputValueError(f"{name} must be even (RoPE rotates coordinate pairs); got {ivalue}")
    return ivalue


def check_finite_stage(
    x: NDArray[np.float64], stage: str, *, power_law: bool = False
) -> NDArray[np.float64]:
    """Raise if a stage produced a non-finite value; otherwise return ``x``.

    Parameters
    ----------
    x : numpy.ndarray
        A stage's result.
    stage : str
        The stage's name, reported in the error.
    power_law : bool, default False
        Raise :class:`PowerLawOverflowError` (the power law or a later stage)
        instead of the base :class:`NonFiniteStageError`.

    Returns
    -------
    numpy.ndarray
        ``x`` unchanged.

    Raises
    ------
    NonFiniteStageError
        If any entry is inf/NaN (``PowerLawOverflowError`` if ``power_law``).
    """
    if not np.all(np.isfinite(x)):
        bad = int(np.size(x) - np.count_nonzero(np.isfinite(x)))
        cls = PowerLawOverflowError if power_law else NonFiniteStageError
        raise cls(stage, f"{bad} non-finite entries (float64 overflow); inputs too large")
    return x


def check_range(value: object, name: str) -> tuple[float, float]:
    """Check a pair ``(low, high)`` of finite real numbers with ``low <= high``.

    Raises
    ------
    TypeError
        If ``value`` is not a pair of real numbers.
    ValueError
        If an end is inf/NaN or ``low > high``.
    """
    ok = isinstance(value, tuple | list) and len(value) == 2
    if not ok or any(
        isinstance(v, bool) or not isinstance(v, int | float | np.number) for v in value
    ):
        raise InputTypeError(f"{name} must be a pair (low, high) of real numbers; got {value!r}")
    low, high = float(value[0]), float(value[1])
    if not (np.isfinite(low) and np.isfinite(high)):
        raise InputValueError(f"{name} must be finite; got {value!r}")
    if low > high:
        raise InputValueError(f"{name} must have low <= high; got {value!r}")
    return low, high


def check_list(value: object, name: str, what: str) -> list:
    """Check that ``value`` is a list or tuple (of ``what``); return it as a list.

    Raises
    ------
    TypeError
        Naming the field and the type it got (e.g. ``None``).
    """
    if not isinstance(value, list | tuple):
        raise InputTypeError(f"{name} must be a list of {what}; got {type(value).__name__}")
    return list(value)
