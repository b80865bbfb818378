"""One PLGA head in float64 NumPy: the ground truth of ``plga-spec.md``.

The stages, in order (each a public function so that tests and kernels can
check them one at a time)::

    D    = density(q)                              # Q^T Q, (dk, dk), global over rows
    A0   = layer_norm_rows(D, ln0_gamma, ln0_beta, ln_eps)
    A    = metric_learner(A0, reslayers, ln_eps)   # residual SwiGLU units
    A_LM = metric_tensor(A, W, b, metric_eps)      # iswiglu(W @ A + b) + eps > 0
    A_P  = power_law(A_LM, P)                      # entrywise A_LM ** P
    G    = energy_curvature(A_P, a, b_a)           # a @ A_P + b_a
    E    = scores(q, k, G)                         # q @ G @ k.T / sqrt(dk)
    Wts  = masked_softmax(E, mask)                 # row-wise, stable
    out  = attend(Wts, v)                          # Wts @ v

``pyverify.reference.mp`` holds the same functions (same names, same order)
in mpmath; the two files are meant to be read side by side.

Masking. The reference model adds ``-1e9`` at masked places before the
softmax. Here masked entries are *excluded* (weight exactly 0, not part of
the row maximum or the normaliser). The two agree in float64 whenever the
unmasked scores are moderate (``exp(-1e9 - x)`` underflows to 0 for any
``|x| < 1e8``); exclusion is used because it is exact, and because a row with
nothing to attend then raises ``ValueError`` instead of silently averaging.
The causal mask is bottom-right aligned: with ``S_q`` queries and ``S_k``
keys, query ``i`` sits at position ``S_k - S_q + i`` and attends keys
``j <= S_k - S_q + i`` (for ``S_q == S_k`` this is the usual lower triangle).

Overflow. ``A_LM >= metric_eps = 1e-9``, so ``A_LM ** P`` overflows float64 for
``P`` below about ``-34`` (or for large ``A_LM`` and ``P``). Any non-finite
value in ``A_LM ** P`` or a later stage raises
:class:`~pyverify.reference.validation.PowerLawOverflowError` (a
``ValueError``) naming the stage; a non-finite value in an earlier stage
(e.g. ``Q^T Q`` overflowing) raises its base class
:class:`~pyverify.reference.validation.NonFiniteStageError`. Nothing returns
inf/NaN. (Underflow of ``A_LM ** P`` to 0 for large positive ``P`` is *not*
an error; ``A_P > 0`` then holds only in exact arithmetic.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pyverify.reference.deductive import Deductive, PLGAResult
from pyverify.reference.params import PLGAParams, ResUnit, SwiGLUBlock
from pyverify.reference.validation import (
    as_bool_mask,
    as_float_array,
    check_finite_stage,
)

__all__ = [
    "attend",
    "causal_mask",
    "density",
    "energy_curvature",
    "iswiglu",
    "layer_norm_rows",
    "masked_softmax",
    "metric_learner",
    "metric_tensor",
    "plga_forward",
    "plga_forward_full",
    "power_law",
    "res_unit",
    "scores",
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
        raise ValueError("A_LM must be entrywise > 0 for the power law")
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


# --------------------------------------------------------------------------- steps 7-8
def scores(q: ArrayLike, k: ArrayLike, G: ArrayLike) -> Array:
    """Step 7 (before masking): ``E = Q G K^T / sqrt(dk)``, computed as ``(Q G) K^T``.

    Parameters
    ----------
    q : array_like, shape (S_q, dk)
        Rotated queries.
    k : array_like, shape (S_k, dk)
        Rotated keys.
    G : array_like, shape (dk, dk)
        Energy-curvature operator (``I`` gives SDPA).

    Returns
    -------
    numpy.ndarray, shape (S_q, S_k)
        Scaled scores.

    Raises
    ------
    PowerLawOverflowError
        If the scores overflow.
    """
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    dk = q.shape[-1]
    with np.errstate(over="ignore", invalid="ignore"):
        E = (q @ np.asarray(G, dtype=np.float64)) @ k.T / np.sqrt(dk)
    return check_finite_stage(E, "scores", power_law=True)


def causal_mask(s_q: int, s_k: int | None = None) -> NDArray[np.bool_]:
    """Causal mask, ``True`` where query ``i`` may attend key ``j``.

    Bottom-right aligned: query ``i`` is at position ``s_k - s_q + i``.

    Parameters
    ----------
    s_q : int
        Number of queries.
    s_k : int, optional
        Number of keys (default ``s_q``); must be ``>= s_q``.

    Returns
    -------
    numpy.ndarray of bool, shape (s_q, s_k)
        The mask.

    Raises
    ------
    ValueError
        If ``s_k < s_q``.
    """
    s_k = s_q if s_k is None else s_k
    if s_k < s_q:
        raise ValueError(f"causal mask needs s_k >= s_q; got s_q={s_q}, s_k={s_k}")
    offset = s_k - s_q
    return np.arange(s_k)[None, :] <= (np.arange(s_q)[:, None] + offset)


def masked_softmax(E: ArrayLike, mask: ArrayLike | None = None) -> Array:
    """Row-wise softmax over the entries allowed by ``mask`` (stable).

    Masked entries are excluded: they get weight exactly 0 and take no part in
    the row maximum or the normaliser. Subtracting the row maximum makes it
    safe for arbitrarily large finite scores.

    Parameters
    ----------
    E : array_like, shape (S_q, S_k)
        Finite scores.
    mask : array_like of bool, shape (S_q, S_k), optional
        ``True`` = attend. ``None`` attends everywhere.

    Returns
    -------
    numpy.ndarray, shape (S_q, S_k)
        Rows summing to 1 (over allowed entries).

    Raises
    ------
    ValueError
        If a row of ``mask`` allows nothing (named ``mask``), or ``E`` is not finite.
    TypeError
        If ``mask`` is not boolean.
    """
    E = as_float_array(E, "E", shape=("S_q", "S_k"))
    if mask is None:
        m = np.ones(E.shape, dtype=bool)
    else:
        m = as_bool_mask(mask, "mask", E.shape)
    empty = ~m.any(axis=-1)
    if np.any(empty):
        rows = np.flatnonzero(empty).tolist()
        raise ValueError(f"mask allows no key for query rows {rows}: softmax undefined")
    row_max = np.max(np.where(m, E, -np.inf), axis=-1, keepdims=True)
    with np.errstate(over="ignore", under="ignore"):  # E - max may round to -inf: exp -> 0
        ex = np.where(m, np.exp(np.where(m, E - row_max, 0.0)), 0.0)
    return ex / ex.sum(axis=-1, keepdims=True)


def attend(weights: ArrayLike, v: ArrayLike) -> Array:
    """Step 8: ``H = weights @ V``."""
    return np.asarray(weights, dtype=np.float64) @ np.asarray(v, dtype=np.float64)


# --------------------------------------------------------------------------- the head
def _check_head_inputs(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    params: PLGAParams,
    causal: bool,
    G: ArrayLike | None,
    mask: ArrayLike | None,
    A: ArrayLike | None,
) -> tuple[Array, Array, Array, PLGAParams, Array | None, NDArray[np.bool_], Array | None]:
    """Validate and convert the arguments of :func:`plga_forward` (shared with no math)."""
    if not isinstance(params, PLGAParams):
        raise TypeError(f"params must be a PLGAParams; got {type(params).__name__}")
    if not isinstance(causal, bool | np.bool_):
        raise TypeError(f"causal must be a bool; got {type(causal).__name__}")
    q = as_float_array(q, "q", shape=("S", "dk"))
    s_q, dk = q.shape
    if dk == 0 or s_q == 0:
        raise ValueError(f"q must have shape (S, dk) with S, dk >= 1; got {q.shape}")
    k = as_float_array(k, "k", shape=("S", dk))
    s_k = k.shape[0]
    if s_k < s_q:
        raise ValueError(
            f"k must have at least as many rows as q (S_k >= S_q); got S_q={s_q}, S_k={s_k}"
        )
    if G is None and A is None and s_k != s_q:
        raise ValueError(
            f"k must have shape (S, dk) = ({s_q}, {dk}) like q on the uncached path; got {k.shape}"
        )
    v = as_float_array(v, "v", shape=(s_k, "dv"))
    params = params.validate(dk)
    if G is not None and A is not None:
        raise ValueError("give at most one of G (G-cache) and A (metric-learner cache)")
    Gv = as_float_array(G, "G", shape=(dk, dk)) if G is not None else None
    Av = as_float_array(A, "A", shape=(dk, dk)) if A is not None else None
    m = causal_mask(s_q, s_k) if causal else np.ones((s_q, s_k), dtype=bool)
    if mask is not None:
        m = m & as_bool_mask(mask, "mask", (s_q, s_k))
    empty = ~m.any(axis=-1)
    if np.any(empty):
        rows = np.flatnonzero(empty).tolist()
        raise ValueError(f"mask (with causal={causal}) allows no key for query rows {rows}")
    return q, k, v, params, Gv, m, Av


def plga_forward_full(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    params: PLGAParams,
    causal: bool = True,
    G: ArrayLike | None = None,
    mask: ArrayLike | None = None,
    *,
    A: ArrayLike | None = None,
) -> PLGAResult:
    """Like :func:`plga_forward`, also returning the scores and attention rows.

    Parameters
    ----------
    q, k, v, params, causal, G, mask, A
        As in :func:`plga_forward`.

    Returns
    -------
    PLGAResult
        ``out``, ``weights``, ``E`` and ``ded``.
    """
    q, k, v, params, Gv, m, Av = _check_head_inputs(q, k, v, params, causal, G, mask, A)
    if Gv is not None:
        ded = Deductive(A=None, A_LM=None, A_P=None, G=Gv)
    else:
        if Av is None:
            D = density(q)
            A0 = layer_norm_rows(D, params.ln0_gamma, params.ln0_beta, params.ln_eps)
            Av = metric_learner(A0, params.reslayers, params.ln_eps)
        A_LM = metric_tensor(Av, params.W, params.b, params.metric_eps)
        A_P = power_law(A_LM, params.P)
        Gv = energy_curvature(A_P, params.a, params.b_a)
        ded = Deductive(A=Av, A_LM=A_LM, A_P=A_P, G=Gv)
    E = scores(q, k, ded.G)
    weights = masked_softmax(E, m)
    out = check_finite_stage(attend(weights, v), "attend", power_law=True)
    return PLGAResult(out=out, weights=weights, E=E, ded=ded)


def plga_forward(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    params: PLGAParams,
    causal: bool = True,
    G: ArrayLike | None = None,
    mask: ArrayLike | None = None,
    *,
    A: ArrayLike | None = None,
) -> tuple[Array, Deductive]:
    """One PLGA head in float64 (``plga-spec.md`` steps 1-8).

    Parameters
    ----------
    q : array_like, shape (S, dk)
        Queries, already rotated (RoPE). Real floating or integer; converted
        to float64.
    k : array_like, shape (S, dk)
        Keys, already rotated. On the cached paths (``G`` or ``A`` given) ``k``
        may have ``S_k >= S_q`` rows; the queries are then the last ``S_q``
        positions (decoding).
    v : array_like, shape (S_k, dv)
        Values.
    params : PLGAParams
        The head's parameters.
    causal : bool, default True
        Apply the causal mask (bottom-right aligned, see module docstring).
    G : array_like, shape (dk, dk), optional
        G-cache: skip steps 1-6 and use this operator. ``ded`` then has
        ``A = A_LM = A_P = None`` and ``G`` = this array.
    mask : array_like of bool, shape (S_q, S_k), optional
        Extra mask, ``True`` = attend; combined with the causal mask by AND.
    A : array_like, shape (dk, dk), optional
        Metric-learner cache (keyword only): skip steps 1-3 and use this ``A``
        (the reference model's KV-cache decoding stores ``A``).

    Returns
    -------
    out : numpy.ndarray, shape (S_q, dv)
        ``softmax(mask(Q G K^T / sqrt(dk))) V``.
    ded : Deductive
        ``A``, ``A_LM``, ``A_P``, ``G``, each ``(dk, dk)`` (see ``G``).

    Raises
    ------
    TypeError
        Wrong type or dtype of an argument (named in the message).
    ValueError
        Wrong shape, non-finite input, a query row with nothing to attend.
    PowerLawOverflowError
        Float64 overflow in ``A_LM ** P`` or a later stage.
    NonFiniteStageError
        Float64 overflow in an earlier stage.
    """
    res = plga_forward_full(q, k, v, params, causal, G, mask, A=A)
    return res.out, res.ded
