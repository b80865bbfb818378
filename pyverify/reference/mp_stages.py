"""Conversions and steps 1-6 of the mpmath head (activations, metric learner, ``G``).

Part of :mod:`pyverify.reference.mp` (which re-exports every public function
here; read its docstring for precision and cost). Independent of the float64
head: nothing here imports it or calls NumPy arithmetic.

Stage functions accept matrices in any form :func:`to_mat` takes, return lists
of rows of ``mpf`` (``Mat``), and take the working mpmath context ``ctx`` last
(default ``mpmath.mp``).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

from pyverify.errors import InputTypeError, InputValueError
from pyverify.reference.deductive import Deductive, PLGAResult
from pyverify.reference.params import ResUnit, SwiGLUBlock
from pyverify.reference.validation import as_float_array

# deliberate parallel of numpy_stages' names and order: the independent mpmath oracle
__all__ = [
    "Mat",
    "Vec",
    "density",
    "energy_curvature",
    "iswiglu",
    "layer_norm_rows",
    "metric_learner",
    "metric_tensor",
    "power_law",
    "res_unit",
    "sigmoid",
    "silu",
    "swiglu",
    "to_mat",
    "to_numpy",
]

Mat = list[list[Any]]
_MPMATRIX = mpmath.matrices.matrices._matrix  # base class of every context's matrix
Vec = list[Any]


# --------------------------------------------------------------------------- conversion
def _ctx(ctx: Any) -> Any:
    return mpmath.mp if ctx is None else ctx


def _scalar(x: Any, name: str, ctx: Any) -> Any:
    if isinstance(x, bool | np.bool_):
        raise InputTypeError(f"{name} must hold real numbers; got bool")
    if isinstance(x, Fraction):
        val = ctx.mpf(x.numerator) / ctx.mpf(x.denominator)
    elif isinstance(x, int | float | str | np.floating | np.integer) or hasattr(x, "_mpf_"):
        val = ctx.mpf(x)
    else:
        raise InputTypeError(f"{name} must hold real numbers; got {type(x).__name__}")
    if not ctx.isfinite(val):
        raise InputValueError(f"{name} must be finite; got {val}")
    return val


def to_mat(
    x: Any, name: str, shape: Sequence[int | str | None] | None = None, ctx: Any = None
) -> Mat:
    """Convert a 2-D input to a list of rows of ``mpf`` (exactly).

    Parameters
    ----------
    x : numpy.ndarray, mpmath.matrix or nested sequence
        Real floating/integer NumPy data (validated like the float64 head),
        an ``mpmath.matrix``, or rows of ``int``/``float``/``Fraction``/``str``/``mpf``.
    name : str
        Argument name used in error messages.
    shape : sequence of int, str or None, optional
        Expected ``(rows, cols)``; ``str``/``None`` entries are free.
    ctx : mpmath context, optional
        Context whose ``mpf`` to produce (default ``mpmath.mp``).

    Returns
    -------
    list of list of mpf
        The matrix.

    Raises
    ------
    TypeError, ValueError
        On a non-real entry, a wrong shape or a non-finite entry.
    """
    ctx = _ctx(ctx)
    if isinstance(x, np.ndarray):
        arr = as_float_array(x, name, shape=shape, ndim=2)
        return [[ctx.mpf(float(e)) for e in row] for row in arr.tolist()]
    if isinstance(x, _MPMATRIX):
        rows = x.tolist()
    elif isinstance(x, Sequence) and not isinstance(x, str):
        rows = [_row(r) for r in x]  # rows may be sequences or 1-D NumPy arrays
        for i, r in enumerate(rows):
            if r is None:
                got = f"{type(x[i]).__name__} of shape {getattr(x[i], 'shape', ())}"
                raise InputValueError(
                    f"{name} must be 2-D (a sequence of rows); row {i} is a {got}"
                )
    else:
        raise InputTypeError(f"{name} must be a 2-D array, mpmath.matrix or list of rows")
    n_cols = {len(r) for r in rows}
    if len(n_cols) > 1:
        raise InputValueError(f"{name} must be rectangular; got row lengths {sorted(n_cols)}")
    got = (len(rows), n_cols.pop() if n_cols else 0)
    if shape is not None:
        for want, g in zip(shape, got, strict=True):
            if isinstance(want, int) and want != g:
                raise InputValueError(f"{name} must have shape {tuple(shape)}; got shape {got}")
    return [[_scalar(e, name, ctx) for e in r] for r in rows]


def _row(r: Any) -> list[Any] | None:
    """A row as a list, or None if it is no 1-D sequence or 1-D array."""
    if isinstance(r, np.ndarray):
        return r.tolist() if r.ndim == 1 else None
    return list(r) if isinstance(r, Sequence) and not isinstance(r, str) else None


def _vec(x: Any, ctx: Any) -> Vec:
    return [ctx.mpf(float(e)) for e in np.asarray(x, dtype=np.float64).ravel().tolist()]


def _mat(x: Any, ctx: Any) -> Mat:
    """Return a list of mpf rows as is; convert anything else via :func:`to_mat`."""
    if isinstance(x, list) and x and isinstance(x[0], list) and hasattr(x[0][0], "_mpf_"):
        return x
    return to_mat(x, "x", ctx=ctx)


def to_numpy(x: Any) -> Any:
    """Convert mpmath results to float64 NumPy (rounding each entry once).

    Parameters
    ----------
    x : mpmath.matrix, list of rows, Deductive, PLGAResult, tuple or None
        Results of this module.

    Returns
    -------
    numpy.ndarray, Deductive, PLGAResult, tuple or None
        The same structure with every matrix as a float64 array.
    """
    if x is None:
        return None
    if isinstance(x, Deductive | PLGAResult):
        return type(x)(*(to_numpy(f) for f in x))
    if isinstance(x, tuple):
        return tuple(to_numpy(f) for f in x)
    if isinstance(x, _MPMATRIX):
        x = x.tolist()
    return np.array([[float(e) for e in row] for row in x], dtype=np.float64)


def _T(X: Mat) -> Mat:
    return [list(col) for col in zip(*X, strict=True)]


def _matmul(X: Mat, Y: Mat, ctx: Any) -> Mat:
    cols = _T(Y)
    return [[ctx.fdot(row, col) for col in cols] for row in X]


# --------------------------------------------------------------------------- activations
def sigmoid(x: Any, ctx: Any = None) -> Any:
    """Logistic function ``1 / (1 + exp(-x))`` of one ``mpf``."""
    ctx = _ctx(ctx)
    return 1 / (1 + ctx.exp(-x))


def silu(x: Any, ctx: Any = None) -> Any:
    """SiLU ``x * sigmoid(x)`` of one ``mpf``."""
    return x * sigmoid(x, ctx)


def iswiglu(x: Any, ctx: Any = None) -> Any:
    """``iSwiGLU(x) = x * silu(x)`` of one ``mpf``."""
    return x * silu(x, ctx)


# --------------------------------------------------------------------------- steps 1-3
def density(q: Any, ctx: Any = None) -> Mat:
    """Step 1: ``D = Q^T Q`` (dk, dk) of the rotated queries ``q`` (S, dk)."""
    ctx = _ctx(ctx)
    cols = _T(_mat(q, ctx))  # dk columns of length S
    dk = len(cols)
    D = [[ctx.zero] * dk for _ in range(dk)]
    for i in range(dk):
        for j in range(i, dk):
            D[i][j] = D[j][i] = ctx.fdot(cols[i], cols[j])
    return D


def _layer_norm_row(x: Vec, gamma: Vec, beta: Vec, eps: Any, ctx: Any) -> Vec:
    n = len(x)
    mu = ctx.fsum(x) / n
    xc = [xi - mu for xi in x]
    var = ctx.fsum(c * c for c in xc) / n
    inv = 1 / ctx.sqrt(var + eps)
    return [c * inv * g + b for c, g, b in zip(xc, gamma, beta, strict=True)]


def layer_norm_rows(X: Any, gamma: Any, beta: Any, eps: Any, ctx: Any = None) -> Mat:
    """LayerNorm of each row (biased variance): ``(x - mean) / sqrt(var + eps) * gamma + beta``.

    Parameters
    ----------
    X : matrix-like, shape (m, n)
        Rows to normalise.
    gamma, beta : array_like, shape (n,)
        Scale and shift (float64 arrays or sequences of mpf).
    eps : float or mpf
        Variance epsilon (converted exactly).
    """
    ctx = _ctx(ctx)
    g = _vec(gamma, ctx) if isinstance(gamma, np.ndarray) else [ctx.mpf(e) for e in gamma]
    b = _vec(beta, ctx) if isinstance(beta, np.ndarray) else [ctx.mpf(e) for e in beta]
    e = ctx.mpf(eps)
    return [_layer_norm_row(row, g, b, e, ctx) for row in _mat(X, ctx)]


def swiglu(X: Any, block: SwiGLUBlock, ctx: Any = None) -> Mat:
    """One SwiGLU block on rows: ``(silu(X @ W1 + b1) * (X @ W2 + b2)) @ W3 + b3`` (m, d_out).

    Parameters
    ----------
    X : matrix-like, shape (m, d_in)
        Rows.
    block : SwiGLUBlock
        Weights (float64, converted exactly).
    """
    ctx = _ctx(ctx)
    X = _mat(X, ctx)
    W1, W2, W3 = (to_mat(w, "W", ctx=ctx) for w in (block.W1, block.W2, block.W3))
    b1, b2, b3 = (_vec(v, ctx) for v in (block.b1, block.b2, block.b3))
    H1 = _matmul(X, W1, ctx)
    H2 = _matmul(X, W2, ctx)
    gated = [
        [silu(h1 + c1, ctx) * (h2 + c2) for h1, h2, c1, c2 in zip(r1, r2, b1, b2, strict=True)]
        for r1, r2 in zip(H1, H2, strict=True)
    ]
    return [[y + c for y, c in zip(row, b3, strict=True)] for row in _matmul(gated, W3, ctx)]


def res_unit(X: Any, unit: ResUnit, eps: Any, ctx: Any = None) -> Mat:
    """One residual unit ``LayerNorm_rows(X + f_k(...f_1(X)))``.

    Parameters
    ----------
    X : matrix-like, shape (dk, dk)
        Input matrix.
    unit : ResUnit
        The unit.
    eps : float or mpf
        LayerNorm epsilon.
    """
    ctx = _ctx(ctx)
    X = _mat(X, ctx)
    Y = X
    for block in unit.dense:
        Y = swiglu(Y, block, ctx)
    S = [[x + y for x, y in zip(rx, ry, strict=True)] for rx, ry in zip(X, Y, strict=True)]
    return layer_norm_rows(S, unit.ln_gamma, unit.ln_beta, eps, ctx)


def metric_learner(A0: Any, reslayers: Sequence[ResUnit], eps: Any, ctx: Any = None) -> Mat:
    """Step 3: ``A = Phi(A0)``.

    Parameters
    ----------
    A0 : matrix-like, shape (dk, dk)
        Row-normalised density operator.
    reslayers : sequence of ResUnit
        The residual units (may be empty).
    eps : float or mpf
        LayerNorm epsilon.
    """
    ctx = _ctx(ctx)
    A = _mat(A0, ctx)
    for unit in reslayers:
        A = res_unit(A, unit, eps, ctx)
    return A


# --------------------------------------------------------------------------- steps 4-6
def metric_tensor(A: Any, W: Any, b: Any, eps: Any, ctx: Any = None) -> Mat:
    """Step 4: ``A_LM = iSwiGLU(W @ A + b) + eps``.

    Parameters
    ----------
    A : matrix-like, shape (dk, dk)
        Metric-learner output.
    W, b : matrix-like, shape (dk, dk)
        Learned weight and bias.
    eps : float or mpf
        Positive epsilon.
    """
    ctx = _ctx(ctx)
    e = ctx.mpf(eps)
    WA = _matmul(_mat(W, ctx), _mat(A, ctx), ctx)
    return [
        [iswiglu(x + c, ctx) + e for x, c in zip(rw, rb, strict=True)]
        for rw, rb in zip(WA, _mat(b, ctx), strict=True)
    ]


def power_law(A_LM: Any, P: Any, ctx: Any = None) -> Mat:
    """Step 5: ``A_P = A_LM ** P`` entrywise (``mp.power``).

    Parameters
    ----------
    A_LM : matrix-like, shape (dk, dk)
        Metric tensor (entrywise > 0).
    P : matrix-like, shape (dk, dk)
        Powers.

    Raises
    ------
    ValueError
        If an entry of ``A_LM`` is ``<= 0``.
    """
    ctx = _ctx(ctx)
    X = _mat(A_LM, ctx)
    if any(x <= 0 for row in X for x in row):
        raise InputValueError("A_LM must be entrywise > 0 for the power law")
    return [
        [ctx.power(x, p) for x, p in zip(rx, rp, strict=True)]
        for rx, rp in zip(X, _mat(P, ctx), strict=True)
    ]


def energy_curvature(A_P: Any, a: Any, b_a: Any, ctx: Any = None) -> Mat:
    """Step 6: ``G = a @ A_P + b_a``.

    Parameters
    ----------
    A_P : matrix-like, shape (dk, dk)
        Potential tensor.
    a, b_a : matrix-like, shape (dk, dk)
        Coupling coefficients and bias.
    """
    ctx = _ctx(ctx)
    aA = _matmul(_mat(a, ctx), _mat(A_P, ctx), ctx)
    return [
        [x + c for x, c in zip(rx, rb, strict=True)]
        for rx, rb in zip(aA, _mat(b_a, ctx), strict=True)
    ]
