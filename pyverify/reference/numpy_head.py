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

Steps 1-6 live in :mod:`pyverify.reference.numpy_stages` (re-exported here).
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

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pyverify.errors import InputTypeError, InputValueError
from pyverify.reference.deductive import Deductive, PLGAResult
from pyverify.reference.numpy_stages import (
    density,
    energy_curvature,
    iswiglu,
    layer_norm_rows,
    metric_learner,
    metric_tensor,
    power_law,
    res_unit,
    sigmoid,
    silu,
    swiglu,
)
from pyverify.reference.params import PLGAParams
from pyverify.reference.validation import (
    as_bool_mask,
    as_float_array,
    check_finite_stage,
)

# deliberate parallel of mp (imports, names, order): mp is the independent mpmath oracle
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
        raise InputValueError(f"causal mask needs s_k >= s_q; got s_q={s_q}, s_k={s_k}")
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
        raise InputValueError(f"mask allows no key for query rows {rows}: softmax undefined")
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
        raise InputTypeError(f"params must be a PLGAParams; got {type(params).__name__}")
    if not isinstance(causal, bool | np.bool_):
        raise InputTypeError(f"causal must be a bool; got {type(causal).__name__}")
    q = as_float_array(q, "q", shape=("S", "dk"))
    s_q, dk = q.shape
    if dk == 0 or s_q == 0:
        raise InputValueError(f"q must have shape (S, dk) with S, dk >= 1; got {q.shape}")
    k = as_float_array(k, "k", shape=("S", dk))
    s_k = k.shape[0]
    if s_k < s_q:
        raise InputValueError(
            f"k must have at least as many rows as q (S_k >= S_q); got S_q={s_q}, S_k={s_k}"
        )
    if G is None and A is None and s_k != s_q:
        raise InputValueError(
            f"k must have shape (S, dk) = ({s_q}, {dk}) like q on the uncached path; got {k.shape}"
        )
    v = as_float_array(v, "v", shape=(s_k, "dv"))
    params = params.validate(dk)
    if G is not None and A is not None:
        raise InputValueError("give at most one of G (G-cache) and A (metric-learner cache)")
    Gv = as_float_array(G, "G", shape=(dk, dk)) if G is not None else None
    Av = as_float_array(A, "A", shape=(dk, dk)) if A is not None else None
    m = causal_mask(s_q, s_k) if causal else np.ones((s_q, s_k), dtype=bool)
    if mask is not None:
        m = m & as_bool_mask(mask, "mask", (s_q, s_k))
    empty = ~m.any(axis=-1)
    if np.any(empty):
        rows = np.flatnonzero(empty).tolist()
        raise InputValueError(f"mask (with causal={causal}) allows no key for query rows {rows}")
    return q, k, v, params, Gv, m, Av


# signature repeated in plga_forward on purpose: each public entry documents its own
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


# signature of plga_forward_full repeated on purpose: the public entry documents its own
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
