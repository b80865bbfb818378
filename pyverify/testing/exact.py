"""Exact rational matrix arithmetic (``fractions.Fraction``) for the small exact checks."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

Mat = list[list[Fraction]]


def mat(rows: Sequence[Sequence[object]]) -> Mat:
    """A matrix of Fractions (floats are converted exactly: every float is dyadic)."""
    return [[Fraction(x) for x in row] for row in rows]


def from_numpy(a: np.ndarray) -> Mat:
    """Exact Fraction copy of a float array (2-D)."""
    return [[Fraction(float(x)) for x in row] for row in np.asarray(a, dtype=np.float64)]


def eye(n: int) -> Mat:
    """The identity."""
    return [[Fraction(int(i == j)) for j in range(n)] for i in range(n)]


def zeros(m: int, n: int) -> Mat:
    """The zero matrix."""
    return [[Fraction(0)] * n for _ in range(m)]


def matmul(A: Mat, B: Mat) -> Mat:
    """The product ``A B``."""
    Bt = list(zip(*B, strict=True))
    return [[sum((a * b for a, b in zip(row, col, strict=True)), Fraction(0)) for col in Bt]
            for row in A]  # fmt: skip


def transpose(A: Mat) -> Mat:
    """The transpose."""
    return [list(col) for col in zip(*A, strict=True)]


def add(A: Mat, B: Mat) -> Mat:
    """Entrywise sum."""
    return [[a + b for a, b in zip(ra, rb, strict=True)] for ra, rb in zip(A, B, strict=True)]


def sub(A: Mat, B: Mat) -> Mat:
    """Entrywise difference."""
    return [[a - b for a, b in zip(ra, rb, strict=True)] for ra, rb in zip(A, B, strict=True)]


def scale(c: Fraction, A: Mat) -> Mat:
    """Scalar multiple."""
    return [[c * a for a in row] for row in A]


def hadamard(A: Mat, B: Mat) -> Mat:
    """Entrywise product."""
    return [[a * b for a, b in zip(ra, rb, strict=True)] for ra, rb in zip(A, B, strict=True)]


def trace(A: Mat) -> Fraction:
    """The trace."""
    return sum((A[i][i] for i in range(len(A))), Fraction(0))


def rot(c: Fraction, s: Fraction) -> Mat:
    """``[[c, -s], [s, c]]``."""
    return [[c, -s], [s, c]]


J: Mat = rot(Fraction(0), Fraction(1))
"""The quarter turn ``rot(pi/2)``."""


def block_diag(blocks: Sequence[Mat]) -> Mat:
    """Block-diagonal matrix of square blocks."""
    n = sum(len(b) for b in blocks)
    out = zeros(n, n)
    o = 0
    for b in blocks:
        for i, row in enumerate(b):
            for j, x in enumerate(row):
                out[o + i][o + j] = x
        o += len(b)
    return out


def ones_col(n: int) -> Mat:
    """The column of ones ``1`` (n x 1)."""
    return [[Fraction(1)] for _ in range(n)]


def exp_trace_truncation(N: Mat, order: int) -> Fraction:
    """``sum_{k=0}^{order} tr(N^k) / k!`` exactly."""
    n = len(N)
    P = eye(n)
    total = Fraction(0)
    fact = 1
    for k in range(order + 1):
        if k > 0:
            P = matmul(P, N)
            fact *= k
        total += trace(P) / fact
    return total
