"""One PLGA head in mpmath at any precision: the arbitrary-precision oracle.

Written independently of :mod:`pyverify.reference.numpy_head` (its own
LayerNorm, sigmoid, silu, softmax, power and matrix products; nothing here
calls NumPy arithmetic), with the same function names in the same order so
that the two files can be diffed stage by stage::

    D    = density(q)                              # Q^T Q
    A0   = layer_norm_rows(D, ln0_gamma, ln0_beta, ln_eps)
    A    = metric_learner(A0, reslayers, ln_eps)
    A_LM = metric_tensor(A, W, b, metric_eps)      # iswiglu(W @ A + b) + eps
    A_P  = power_law(A_LM, P)                      # entrywise mp.power
    G    = energy_curvature(A_P, a, b_a)           # a @ A_P + b_a
    E    = scores(q, k, G)                         # (q @ G) @ k^T / sqrt(dk)
    Wts  = masked_softmax(E, mask)
    out  = attend(Wts, v)

Conversions and steps 1-6 live in :mod:`pyverify.reference.mp_stages`
(re-exported here).

Precision. :func:`plga_forward` runs in a private ``mpmath.MPContext`` with
``dps`` decimal digits (default 50), so it never changes the global
``mpmath.mp`` precision. Float64 inputs and parameters are converted to
``mpf`` exactly (every float64 is a dyadic rational), including the epsilons:
``ln_eps`` is the float64 number nearest ``1e-6``, the same number the float64
head uses. Inputs may also be nested sequences of ``int``, ``float``,
``fractions.Fraction``, ``str`` or ``mpf`` (e.g. exact rationals for tests),
or ``mpmath.matrix``.

Representation. Stage functions take and return matrices as lists of rows
of ``mpf`` (``Mat``) and accept a ``ctx`` keyword (an ``mpmath`` context;
default the global ``mpmath.mp``). :func:`plga_forward` returns
``mpmath.matrix`` objects (``out`` and every field of ``Deductive``);
:func:`to_numpy` converts those (or a ``Deductive``/``PLGAResult``) to
float64 NumPy arrays for comparison.

Masking and the causal alignment are as in the float64 head (masked entries
excluded; bottom-right aligned causal mask). mpmath's exponent range is
unbounded, so the power law never overflows here; the float64 head raises
``PowerLawOverflowError`` where this one still returns a (huge) value.

Cost. Products are ordered to keep ``mpf`` work at ``O(S dk^2 + S^2 dk)``
(``Q G`` first, then ``(Q G) K^T``) and use ``ctx.fdot`` for inner products.
"""

from __future__ import annotations

from typing import Any

import mpmath
import numpy as np

from pyverify.errors import InputTypeError, InputValueError
from pyverify.reference.deductive import Deductive, PLGAResult
from pyverify.reference.mp_stages import (
    Mat,
    _ctx,
    _mat,
    _matmul,
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
    to_mat,
    to_numpy,
)
from pyverify.reference.params import PLGAParams
from pyverify.reference.validation import as_bool_mask

# deliberate parallel of numpy_head (imports, names, order): the independent mpmath oracle
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
    "to_mat",
    "to_numpy",
]


# --------------------------------------------------------------------------- steps 7-8
def scores(q: Any, k: Any, G: Any, ctx: Any = None) -> Mat:
    """Step 7 (before masking): ``E = (Q G) K^T / sqrt(dk)``.

    Parameters
    ----------
    q : matrix-like, shape (S_q, dk)
        Rotated queries.
    k : matrix-like, shape (S_k, dk)
        Rotated keys.
    G : matrix-like, shape (dk, dk)
        Energy-curvature operator.
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    list of list of mpf, shape (S_q, S_k)
        Scaled scores.
    """
    ctx = _ctx(ctx)
    Q = _mat(q, ctx)
    K = _mat(k, ctx)
    QG = _matmul(Q, _mat(G, ctx), ctx)
    inv_sqrt_dk = 1 / ctx.sqrt(len(Q[0]))
    return [[ctx.fdot(qg, kr) * inv_sqrt_dk for kr in K] for qg in QG]


def causal_mask(s_q: int, s_k: int | None = None) -> list[list[bool]]:
    """Causal mask (bottom-right aligned), ``True`` = may attend.

    Parameters
    ----------
    s_q : int
        Number of queries.
    s_k : int, optional
        Number of keys (default ``s_q``), ``>= s_q``.

    Returns
    -------
    list of list of bool, shape (s_q, s_k)
        ``mask[i][j] = j <= s_k - s_q + i``.

    Raises
    ------
    ValueError
        If ``s_k < s_q``.
    """
    s_k = s_q if s_k is None else s_k
    if s_k < s_q:
        raise InputValueError(f"causal mask needs s_k >= s_q; got s_q={s_q}, s_k={s_k}")
    return [[j <= s_k - s_q + i for j in range(s_k)] for i in range(s_q)]


def masked_softmax(E: Any, mask: Any = None, ctx: Any = None) -> Mat:
    """Row-wise softmax over the allowed entries (masked ones excluded, weight 0).

    Parameters
    ----------
    E : matrix-like, shape (S_q, S_k)
        Scores.
    mask : nested sequence or array of bool, shape (S_q, S_k), optional
        ``True`` = attend; ``None`` attends everywhere.
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    list of list of mpf, shape (S_q, S_k)
        Attention rows.

    Raises
    ------
    ValueError
        If a row allows nothing.
    """
    ctx = _ctx(ctx)
    E = _mat(E, ctx)
    out = []
    for i, row in enumerate(E):
        allowed = [True] * len(row) if mask is None else [bool(m) for m in mask[i]]
        if not any(allowed):
            raise InputValueError(f"mask allows no key for query row {i}: softmax undefined")
        top = max(e for e, m in zip(row, allowed, strict=True) if m)
        ex = [ctx.exp(e - top) if m else ctx.zero for e, m in zip(row, allowed, strict=True)]
        total = ctx.fsum(ex)
        out.append([x / total for x in ex])
    return out


def attend(weights: Any, v: Any, ctx: Any = None) -> Mat:
    """Step 8: ``H = weights @ V``."""
    ctx = _ctx(ctx)
    return _matmul(_mat(weights, ctx), _mat(v, ctx), ctx)


# --------------------------------------------------------------------------- the head
# signature repeated in plga_forward on purpose: each public entry documents its own
def plga_forward_full(
    q: Any,
    k: Any,
    v: Any,
    params: PLGAParams,
    causal: bool = True,
    G: Any = None,
    mask: Any = None,
    *,
    A: Any = None,
    dps: int = 50,
) -> PLGAResult:
    """Like :func:`plga_forward`, also returning scores and attention rows.

    Parameters
    ----------
    q, k, v, params, causal, G, mask, A, dps
        As in :func:`plga_forward`.

    Returns
    -------
    PLGAResult
        ``out``, ``weights``, ``E`` (``mpmath.matrix``) and ``ded``.
    """
    if not isinstance(params, PLGAParams):
        raise InputTypeError(f"params must be a PLGAParams; got {type(params).__name__}")
    if isinstance(dps, bool) or not isinstance(dps, int) or dps < 15:
        raise InputValueError(f"dps must be an int >= 15; got {dps!r}")
    if not isinstance(causal, bool | np.bool_):
        raise InputTypeError(f"causal must be a bool; got {type(causal).__name__}")
    ctx = mpmath.MPContext()
    ctx.dps = dps
    Q = to_mat(q, "q", ("S", "dk"), ctx)
    s_q, dk = len(Q), len(Q[0]) if Q else 0
    if s_q == 0 or dk == 0:
        raise InputValueError(f"q must have shape (S, dk) with S, dk >= 1; got ({s_q}, {dk})")
    K = to_mat(k, "k", ("S", dk), ctx)
    s_k = len(K)
    if s_k < s_q:
        raise InputValueError(f"k must have S_k >= S_q rows; got S_q={s_q}, S_k={s_k}")
    if G is None and A is None and s_k != s_q:
        raise InputValueError(f"k must have shape ({s_q}, {dk}) like q on the uncached path")
    V = to_mat(v, "v", (s_k, "dv"), ctx)
    params = params.validate(dk)
    if G is not None and A is not None:
        raise InputValueError("give at most one of G (G-cache) and A (metric-learner cache)")
    m = causal_mask(s_q, s_k) if causal else [[True] * s_k for _ in range(s_q)]
    if mask is not None:
        extra = as_bool_mask(mask, "mask", (s_q, s_k)).tolist()
        m = [
            [x and y for x, y in zip(r1, r2, strict=True)] for r1, r2 in zip(m, extra, strict=True)
        ]
    for i, row in enumerate(m):
        if not any(row):
            raise InputValueError(f"mask (with causal={causal}) allows no key for query rows [{i}]")

    if G is not None:
        Gm = to_mat(G, "G", (dk, dk), ctx)
        ded_lists: tuple[Any, Any, Any, Mat] = (None, None, None, Gm)
    else:
        if A is None:
            D = density(Q, ctx)
            A0 = layer_norm_rows(D, params.ln0_gamma, params.ln0_beta, params.ln_eps, ctx)
            Am = metric_learner(A0, params.reslayers, params.ln_eps, ctx)
        else:
            Am = to_mat(A, "A", (dk, dk), ctx)
        A_LM = metric_tensor(Am, params.W, params.b, params.metric_eps, ctx)
        A_P = power_law(A_LM, params.P, ctx)
        Gm = energy_curvature(A_P, params.a, params.b_a, ctx)
        ded_lists = (Am, A_LM, A_P, Gm)
    E = scores(Q, K, Gm, ctx)
    weights = masked_softmax(E, m, ctx)
    out = attend(weights, V, ctx)

    def mat(x: Mat | None) -> Any:
        return None if x is None else ctx.matrix(x)

    ded = Deductive(*(mat(x) for x in ded_lists))
    return PLGAResult(out=mat(out), weights=mat(weights), E=mat(E), ded=ded)


# signature of plga_forward_full repeated on purpose: the public entry documents its own
def plga_forward(
    q: Any,
    k: Any,
    v: Any,
    params: PLGAParams,
    causal: bool = True,
    G: Any = None,
    mask: Any = None,
    *,
    A: Any = None,
    dps: int = 50,
) -> tuple[Any, Deductive]:
    """One PLGA head in mpmath with ``dps`` decimal digits.

    Same arguments and semantics as :func:`pyverify.reference.plga_forward`
    (float64), plus ``dps``.

    Parameters
    ----------
    q : array_like or matrix-like, shape (S, dk)
        Rotated queries (float64 arrays are converted exactly).
    k : array_like or matrix-like, shape (S, dk)
        Rotated keys (``S_k >= S_q`` rows allowed on the cached paths).
    v : array_like or matrix-like, shape (S_k, dv)
        Values.
    params : PLGAParams
        The head's parameters (float64, converted exactly).
    causal : bool, default True
        Apply the (bottom-right aligned) causal mask.
    G : matrix-like, shape (dk, dk), optional
        G-cache: skip steps 1-6; ``ded`` then has ``A = A_LM = A_P = None``.
    mask : array_like of bool, shape (S_q, S_k), optional
        Extra mask (``True`` = attend), ANDed with the causal mask.
    A : matrix-like, shape (dk, dk), optional
        Metric-learner cache: skip steps 1-3.
    dps : int, default 50
        Working precision in decimal digits (``>= 15``).

    Returns
    -------
    out : mpmath.matrix, shape (S_q, dv)
        The head output.
    ded : Deductive
        ``A``, ``A_LM``, ``A_P``, ``G`` as ``mpmath.matrix`` (or ``None``, see ``G``).

    Raises
    ------
    TypeError, ValueError
        On bad input, naming the argument.
    """
    res = plga_forward_full(q, k, v, params, causal, G, mask, A=A, dps=dps)
    return res.out, res.ded
