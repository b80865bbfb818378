"""The RMS form of the author's pairwise order parameter, in float64 NumPy.

For two same-shape arrays ``x1, x2`` (``audit_lib.order_pair``)::

    num    = sqrt(mean((x1 - x2)^2))
    rms(x) = sqrt(mean(x^2))
    form   = num / (0.5 * (rms(x1) + rms(x2)))      (0 when num == 0)

In exact arithmetic ``num <= rms(x1) + rms(x2)`` (the triangle inequality for the RMS),
so ``0 <= form <= 2``: Lean ``Pldr.order_parameter_rms_bound``. This module is the
suite's independent float64 oracle for the torch measurement
(``pyverify.measure.order.order_pair``); it shares no code with it, and scales its
inputs by a power of two first, so it is finite on every finite input.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from pyverify.errors import InputValueError
from pyverify.reference.validation import as_float_array

__all__ = ["order_parameter_rms"]


def order_parameter_rms(x1: ArrayLike, x2: ArrayLike) -> float:
    """The RMS form ``num / (0.5 (rms x1 + rms x2))`` of two same-shape arrays, float64.

    Parameters
    ----------
    x1, x2 : array_like
        Finite real arrays of one shape with at least one entry.

    Returns
    -------
    float
        The form; ``0.0`` when ``x1 == x2`` entrywise.

    Raises
    ------
    pyverify.errors.InputTypeError
        If an argument is not real numeric data.
    pyverify.errors.InputValueError
        If an argument is empty or non-finite, or the shapes differ.
    """
    a = as_float_array(x1, "x1")
    b = as_float_array(x2, "x2")
    if a.shape != b.shape:
        raise InputValueError(f"x1 and x2 must have one shape; got {a.shape} and {b.shape}")
    if a.size == 0:
        raise InputValueError("x1 and x2 must have at least one entry; got size 0")
    top = max(float(np.max(np.abs(a))), float(np.max(np.abs(b))))
    if top == 0.0:
        return 0.0
    # The form is scale invariant; a power-of-two scale is exact and keeps every square
    # and the difference in range (no overflow for |x| near 1e308).
    shift = -int(np.frexp(top)[1])
    a, b = np.ldexp(a, shift).ravel(), np.ldexp(b, shift).ravel()
    d = a - b
    num = float(np.sqrt(np.dot(d, d) / d.size))
    if num == 0.0:
        return 0.0
    r1 = float(np.sqrt(np.dot(a, a) / a.size))
    r2 = float(np.sqrt(np.dot(b, b) / b.size))
    return num / (0.5 * (r1 + r2))
