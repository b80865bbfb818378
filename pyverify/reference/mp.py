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

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

from pyverify.reference.deductive import Deductive, PLGAResult
from pyverify.reference.params import PLGAParams, ResUnit, SwiGLUBlock
from pyverify.reference.validation import as_bool_mask, as_float_array

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

Mat = list[list[Any]]
_MPMATRIX = mpmath.matrices.matrices._matrix  # base class of every context's matrix
Vec = list[Any]


# --------------------------------------------------------------------------- conversion
def _ctx(ctx: Any) -> Any:
    return mpmath.mp if ctx is None else ctx


def _scalar(x: Any, name: str, ctx: Any) -> Any:
    if isinstance(x, bool | np.bool_):
        raise TypeError(f"{name} must hold real numbers; got bool")
    if isinstance(x, Fraction):
        val = ctx.mpf(x.numerator) / ctx.mpf(x.denominator)
    elif isinstance(x, int | float | str | np.floating | np.integer) or hasattr(x, "_mpf_"):
        val = ctx.mpf(x)
    else:
        raise TypeError(f"{name} must hold real numbers; got {type(x).__name__}")
    if not ctx.isfinite(val):
        raise ValueError(f"{name} must be finite; got {val}")
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
                raise ValueError(f"{name} must be 2-D (a sequence of rows); row {i} is a {got}")
    else:
        raise TypeError(f"{name} must be a 2-D array, mpmath.matrix or list of rows")
    n_cols = {len(r) for r in rows}
    if len(n_cols) > 1:
        raise ValueError(f"{name} must be rectangular; got row lengths {sorted(n_cols)}")
    got = (len(rows), n_cols.pop() if n_cols else 0)
    if shape is not None:
        for want, g in zip(shape, got, strict=True):
            if isinstance(want, int) and want != g:
                raise ValueError(f"{name} must have shape {tuple(shape)}; got shape {got}")
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
    """Logistic function ``1 / (1 + exp(-x))`` of one ``mpf``.

    Parameters
    ----------
    x : mpf
        Real input.
    ctx : mpmath context, optional
        Working context (default ``mpmath.mp``).

    Returns
    -------
    mpf
        ``sigmoid(x)`` (no overflow: mpmath exponents are unbounded).
    """
    ctx = _ctx(ctx)
    return 1 / (1 + ctx.exp(-x))


def silu(x: Any, ctx: Any = None) -> Any:
    """SiLU ``x * sigmoid(x)`` of one ``mpf``.

    Parameters
    ----------
    x : mpf
        Real input.
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    mpf
        ``x * sigmoid(x)``.
    """
    return x * sigmoid(x, ctx)


def iswiglu(x: Any, ctx: Any = None) -> Any:
    """``iSwiGLU(x) = x * silu(x)`` of one ``mpf``.

    Parameters
    ----------
    x : mpf
        Real input.
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    mpf
        ``x^2 sigmoid(x) >= 0``.
    """
    return x * silu(x, ctx)


# --------------------------------------------------------------------------- steps 1-3
def density(q: Any, ctx: Any = None) -> Mat:
    """Step 1: ``D = Q^T Q``.

    Parameters
    ----------
    q : matrix-like, shape (S, dk)
        Rotated queries.
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    list of list of mpf, shape (dk, dk)
        ``D``.
    """
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
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    list of list of mpf, shape (m, n)
        The normalised rows.
    """
    ctx = _ctx(ctx)
    g = _vec(gamma, ctx) if isinstance(gamma, np.ndarray) else [ctx.mpf(e) for e in gamma]
    b = _vec(beta, ctx) if isinstance(beta, np.ndarray) else [ctx.mpf(e) for e in beta]
    e = ctx.mpf(eps)
    return [_layer_norm_row(row, g, b, e, ctx) for row in _mat(X, ctx)]


def swiglu(X: Any, block: SwiGLUBlock, ctx: Any = None) -> Mat:
    """One SwiGLU block on rows: ``(silu(X @ W1 + b1) * (X @ W2 + b2)) @ W3 + b3``.

    Parameters
    ----------
    X : matrix-like, shape (m, d_in)
        Rows.
    block : SwiGLUBlock
        Weights (float64, converted exactly).
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    list of list of mpf, shape (m, d_out)
        The block's output.
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
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    list of list of mpf, shape (dk, dk)
        The unit's output.
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
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    list of list of mpf, shape (dk, dk)
        ``A``.
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
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    list of list of mpf, shape (dk, dk)
        ``A_LM``.
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
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    list of list of mpf, shape (dk, dk)
        ``A_P``.

    Raises
    ------
    ValueError
        If an entry of ``A_LM`` is ``<= 0``.
    """
    ctx = _ctx(ctx)
    X = _mat(A_LM, ctx)
    if any(x <= 0 for row in X for x in row):
        raise ValueError("A_LM must be entrywise > 0 for the power law")
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
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    list of list of mpf, shape (dk, dk)
        ``G``.
    """
    ctx = _ctx(ctx)
    aA = _matmul(_mat(a, ctx), _mat(A_P, ctx), ctx)
    return [
        [x + c for x, c in zip(rx, rb, strict=True)]
        for rx, rb in zip(aA, _mat(b_a, ctx), strict=True)
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
        raise ValueError(f"causal mask needs s_k >= s_q; got s_q={s_q}, s_k={s_k}")
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
            raise ValueError(f"mask allows no key for query row {i}: softmax undefined")
        top = max(e for e, m in zip(row, allowed, strict=True) if m)
        ex = [ctx.exp(e - top) if m else ctx.zero for e, m in zip(row, allowed, strict=True)]
        total = ctx.fsum(ex)
        out.append([x / total for x in ex])
    return out


def attend(weights: Any, v: Any, ctx: Any = None) -> Mat:
    """Step 8: ``H = weights @ V``.

    Parameters
    ----------
    weights : matrix-like, shape (S_q, S_k)
        Attention rows.
    v : matrix-like, shape (S_k, dv)
        Values.
    ctx : mpmath context, optional
        Working context.

    Returns
    -------
    list of list of mpf, shape (S_q, dv)
        The head output.
    """
    ctx = _ctx(ctx)
    return _matmul(_mat(weights, ctx), _mat(v, ctx), ctx)


# --------------------------------------------------------------------------- the head
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
        raise TypeError(f"params must be a PLGAParams; got {type(params).__name__}")
    if isinstance(dps, bool) or not isinstance(dps, int) or dps < 15:
        raise ValueError(f"dps must be an int >= 15; got {dps!r}")
    if not isinstance(causal, bool | np.bool_):
        raise TypeError(f"causal must be a bool; got {type(causal).__name__}")
    ctx = mpmath.MPContext()
    ctx.dps = dps
    Q = to_mat(q, "q", ("S", "dk"), ctx)
    s_q, dk = len(Q), len(Q[0]) if Q else 0
    if s_q == 0 or dk == 0:
        raise ValueError(f"q must have shape (S, dk) with S, dk >= 1; got ({s_q}, {dk})")
    K = to_mat(k, "k", ("S", dk), ctx)
    s_k = len(K)
    if s_k < s_q:
        raise ValueError(f"k must have S_k >= S_q rows; got S_q={s_q}, S_k={s_k}")
    if G is None and A is None and s_k != s_q:
        raise ValueError(f"k must have shape ({s_q}, {dk}) like q on the uncached path")
    V = to_mat(v, "v", (s_k, "dv"), ctx)
    params = params.validate(dk)
    if G is not None and A is not None:
        raise ValueError("give at most one of G (G-cache) and A (metric-learner cache)")
    m = causal_mask(s_q, s_k) if causal else [[True] * s_k for _ in range(s_q)]
    if mask is not None:
        extra = as_bool_mask(mask, "mask", (s_q, s_k)).tolist()
        m = [
            [x and y for x, y in zip(r1, r2, strict=True)] for r1, r2 in zip(m, extra, strict=True)
        ]
    for i, row in enumerate(m):
        if not any(row):
            raise ValueError(f"mask (with causal={causal}) allows no key for query rows [{i}]")

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
