"""Steps 1-6 of one PLGA head in float64 NumPy: activations, metric learner, metric tensor, ``G``.

Part of :mod:`pyverify.reference.numpy_head` (which re-exports every function
here; read its docstring for the pipeline, masking and overflow rules).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pyverify.errors import InputValueError
from pyverify.reference.params import ResUnit, SwiGLUBlock
from pyverify.reference.validation import as_float_array, check_finite_stage

# deliberate parallel of mp_stages' names and order: mp_stages is the independent oracle
__all__ = [
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
]

Array = NDArray[np.float64]


# --------------------------------------------------------------------------- activations
def sigmoid(x: ArrayLike) -> Array:
    """Logistic ``1 / (1 + exp(-x))`` in float64, stable (no overflow) for large ``|x|``."""
    x = np.asarray(x, dtype=np.float64)
    z = np.exp(-np.abs(x))  # in (0, 1]: never overflows
    return np.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))


def silu(x: ArrayLike) -> Array:
    """SiLU (swish) ``x * sigmoid(x)``."""
    x = np.asarray(x, dtype=np.float64)
    return x * sigmoid(x)


def iswiglu(x: ArrayLike) -> Array:
    """``iSwiGLU(x) = x * silu(x) = x^2 sigmoid(x) >= 0`` (entrywise)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        return x * silu(x)


# --------------------------------------------------------------------------- steps 1-3
def density(q: ArrayLike) -> Array:
    """Step 1: density operator ``D = Q^T Q`` over all rows of ``q``.

    Parameters
    ----------
    q : array_like, shape (S, dk)
        Rotated queries.

    Returns
    -------
    numpy.ndarray, shape (dk, dk)
        The uncentred second moment (symmetric, positive semidefinite).

    Raises
    ------
    NonFiniteStageError
        If the product overflows.
    """
    q = as_float_array(q, "q", shape=("S", "dk"))
    with np.errstate(over="ignore", invalid="ignore"):
        return check_finite_stage(q.T @ q, "density")


def layer_norm_rows(X: ArrayLike, gamma: ArrayLike, beta: ArrayLike, eps: float) -> Array:
    """LayerNorm over the last axis (biased variance, as ``torch.nn.LayerNorm``).

    ``(x - mean(x)) / sqrt(var(x) + eps) * gamma + beta`` for each row ``x``.

    Parameters
    ----------
    X : array_like, shape (..., n)
        Rows to normalise.
    gamma, beta : array_like, shape (n,)
        Scale and shift.
    eps : float
        Variance epsilon (1e-6 in the reference).

    Returns
    -------
    numpy.ndarray
        Same shape as ``X``.
    """
    X = as_float_array(X, "X", ndim=np.ndim(X))
    n = X.shape[-1]
    gamma = as_float_array(gamma, "gamma", shape=(n,))
    beta = as_float_array(beta, "beta", shape=(n,))
    mu = X.mean(axis=-1, keepdims=True)
    xc = X - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    return xc / np.sqrt(var + eps) * gamma + beta


def swiglu(X: ArrayLike, block: SwiGLUBlock) -> Array:
    """One SwiGLU block on rows: ``(silu(X @ W1 + b1) * (X @ W2 + b2)) @ W3 + b3``.

    Parameters
    ----------
    X : array_like, shape (..., d_in)
        Rows.
    block : SwiGLUBlock
        Weights.

    Returns
    -------
    numpy.ndarray, shape (..., d_out)
        The block's output.
    """
    X = np.asarray(X, dtype=np.float64)
    h1 = X @ block.W1 + block.b1
    h2 = X @ block.W2 + block.b2
    return (silu(h1) * h2) @ block.W3 + block.b3


def res_unit(X: ArrayLike, unit: ResUnit, eps: float) -> Array:
    """One residual unit ``LayerNorm_rows(X + f_k(...f_1(X)))``.

    Parameters
    ----------
    X : array_like, shape (dk, dk)
        Input matrix (rows are mapped independently).
    unit : ResUnit
        The unit's SwiGLU blocks and LayerNorm.
    eps : float
        LayerNorm epsilon.

    Returns
    -------
    numpy.ndarray, shape (dk, dk)
        The unit's output.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = X
    for block in unit.dense:
        Y = swiglu(Y, block)
    return layer_norm_rows(X + Y, unit.ln_gamma, unit.ln_beta, eps)


def metric_learner(A0: ArrayLike, reslayers: Sequence[ResUnit], eps: float) -> Array:
    """Step 3: ``A = Phi(A0)``, the residual units applied in order.

    Parameters
    ----------
    A0 : array_like, shape (dk, dk)
        Row-normalised density operator.
    reslayers : sequence of ResUnit
        The metric learner (may be empty: then ``A = A0``).
    eps : float
        LayerNorm epsilon.

    Returns
    -------
    numpy.ndarray, shape (dk, dk)
        The metric-learner output ``A``.
    """
    A = np.asarray(A0, dtype=np.float64)
    for unit in reslayers:
        A = res_unit(A, unit, eps)
    return check_finite_stage(A, "metric_learner")


# --------------------------------------------------------------------------- steps 4-6
def metric_tensor(A: ArrayLike, W: ArrayLike, b: ArrayLike, eps: float) -> Array:
    """Step 4: ``A_LM = iSwiGLU(W @ A + b) + eps`` (matrix product, ``W`` left).

    Parameters
    ----------
    A : array_like, shape (dk, dk)
        Metric-learner output.
    W, b : array_like, shape (dk, dk)
        Learned weight and bias.
    eps : float
        Positive epsilon (1e-9), making every entry strictly positive.

    Returns
    -------
    numpy.ndarray, shape (dk, dk)
        ``A_LM`` (entrywise ``>= eps``).

    Raises
    ------
    NonFiniteStageError
        If ``W @ A + b`` is so large that its square overflows.
    """
    A = np.asarray(A, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return check_finite_stage(iswiglu(np.asarray(W) @ A + b) + eps, "metric_tensor")


def power_law(A_LM: ArrayLike, P: ArrayLike) -> Array:
    """Step 5: potential tensor ``A_P = A_LM ** P`` (entrywise).

    Parameters
    ----------
    A_LM : array_like, shape (dk, dk)
        Metric tensor (entrywise > 0).
    P : array_like, shape (dk, dk)
        Learned powers.

    Returns
    -------
    numpy.ndarray, shape (dk, dk)
        ``A_LM ** P`` (entrywise > 0 unless it underflows to 0).

    Raises
    ------
    PowerLawOverflowError
        If any entry overflows float64 (e.g. ``A_LM = 1e-9``, ``P < -34.3``).
    ValueError
        If ``A_LM`` has an entry ``<= 0`` (the power is then undefined).
    """
    A_LM = np.asarray(A_LM, dtype=np.float64)
    if np.any(A_LM <= 0):
        raise InputValueError("A_LM must be entrywise > 0 for the power law")
    with np.errstate(over="ignore", invalid="ignore"):
        return check_finite_stage(np.power(A_LM, P), "power_law", power_law=True)


def energy_curvature(A_P: ArrayLike, a: ArrayLike, b_a: ArrayLike) -> Array:
    """Step 6: energy-curvature operator ``G = a @ A_P + b_a``.

    Parameters
    ----------
    A_P : array_like, shape (dk, dk)
        Potential tensor.
    a, b_a : array_like, shape (dk, dk)
        Learned coupling coefficients and bias.

    Returns
    -------
    numpy.ndarray, shape (dk, dk)
        ``G``.

    Raises
    ------
    PowerLawOverflowError
        If the product overflows.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        G = np.asarray(a) @ np.asarray(A_P, dtype=np.float64) + b_a
    return check_finite_stage(G, "energy_curvature", power_law=True)
