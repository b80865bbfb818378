"""The floating-point error bounds proved in Lean (``lean/Pldr/Float/``): one function each.

Every function evaluates the right-hand side of one Lean theorem, named with its theorem
ID and Lean name, on NumPy values: nothing here is derived anywhere else, and nothing is
first-order. The model (``Pldr.Float.Model``): a rounding with unit round-off ``u`` is
``|fl x - x| <= u |x|`` in the normal range; below it, a product, quotient, exponential or
conversion has an absolute error ``eta`` (:data:`UNDERFLOW`), while a sum of two
floating-point numbers is exact there (IEEE gradual underflow). ``gamma_n = n u / (1 - n u)``
(:func:`pyverify.precision.gamma`, Higham's; ``fp_prod_gamma``: ``n`` roundings multiply to
``1 + theta_n`` with ``|theta_n| <= gamma_n``).

What each implementation computes (which roundings, which exponential, which order) is in
:mod:`pyverify.fp.models`, which instantiates these formulas.
"""

from __future__ import annotations

import numpy as np

from pyverify.precision import UNIT_ROUNDOFF, gamma

__all__ = [
    "EVAL_OPS",
    "EVAL_SLACK",
    "SMALLEST_NORMAL",
    "UNDERFLOW",
    "fp_dot_product",
    "fp_elementwise",
    "fp_flush_to_zero",
    "fp_flush_to_zero_dot_product",
    "fp_head_output",
    "fp_head_output_hull",
    "fp_head_output_normalized",
    "fp_head_scores",
    "fp_matmul",
    "fp_mixed_precision",
    "fp_softmax",
    "fp_softmax_beta",
    "fp_softmax_coefficients",
    "fp_softmax_exp_excess",
    "fp_softmax_exp_factor",
    "fp_summation",
    "fp_summation_perturbed",
    "inv1m",
    "prod1m",
]

#: Half the smallest subnormal spacing of each format: the absolute error of one rounding
#: whose exact result lies below the normal range (the ``eta`` of the Lean statements,
#: e.g. ``[fp_dot_product]``).
#: float64's, ``2^-1075``, is not a float64 number (``2.0**-1075`` rounds to 0): its upper
#: neighbour ``2^-1074`` stands in (a larger ``eta`` keeps every bound true, and its
#: factor 2 absorbs the rounding of a bound evaluated down there).
UNDERFLOW: dict[str, float] = {
    "float64": 2.0**-1074,
    "float32": 2.0**-150,
    "bfloat16": 2.0**-134,
    "float16": 2.0**-25,
}

#: The smallest normal number of each format (``[fp_mixed_precision]``'s input rounding
#: holds above it; ``rho`` of the flush-to-zero statements).
SMALLEST_NORMAL: dict[str, float] = {
    "float64": 2.0**-1022,
    "float32": 2.0**-126,
    "bfloat16": 2.0**-126,
    "float16": 2.0**-14,
}

#: The most roundings on any path through one bound's evaluation in float64 (a matrix
#: product of at most 512 keys, a few dozen more operations).
EVAL_OPS = 4096
#: ``[fp_summation]`` Relative slack of a bound evaluated in float64: every formula here is
#: a sum and product of nonnegative terms (the ``(1 + a)(1 + b) - 1`` coefficients taken
#: by :func:`prod1m` without cancellation), so ``fp_prod_gamma`` puts its value within
#: ``gamma_EVAL_OPS(2^-53)`` of the exact one.
EVAL_SLACK = 1.0 + gamma(EVAL_OPS, UNIT_ROUNDOFF["float64"])


def prod1m(*xs):  # type: ignore[no-untyped-def]
    """``prod_i (1 + x_i) - 1`` for ``x_i >= 0`` (floats or arrays), without cancellation.

    ``(1 + x)`` is not a float64 number for small ``x`` (``1 + 2^-53`` rounds to 1), so the
    coefficients of the statements are formed as ``expm1(sum log1p(x_i))``: each step
    within a few ``2^-53`` relative (inside :data:`EVAL_SLACK`).
    """
    return np.expm1(sum(np.log1p(np.asarray(x, dtype=np.float64)) for x in xs))


def inv1m(*xs):  # type: ignore[no-untyped-def]
    """``1 / prod_i (1 - x_i) - 1`` for ``0 <= x_i < 1``, without cancellation."""
    return np.expm1(-sum(np.log1p(-np.asarray(x, dtype=np.float64)) for x in xs))


def _g(n, u: float):
    """``gamma_n(u)`` (``n`` an int or an array of them), defined for ``n u < 1``."""
    g = gamma(np.asarray(n, dtype=np.float64), u)  # refuses n u >= 1
    return float(g) if np.ndim(g) == 0 else g


def _pred(n):
    """``n - 1``, at least 0 (elementwise)."""
    return np.maximum(np.asarray(n) - 1, 0)


def fp_summation(abs_sum, n: int, u: float):
    """``[fp_summation]`` ``Pldr.fp_summation``: any order of ``n`` terms at ``u``.

    ``|s^ - sum f| <= gamma_{n-1} sum |f|``; ``abs_sum`` is ``sum |f|``.
    """
    return _g(_pred(n), u) * np.asarray(abs_sum, dtype=np.float64)


def fp_summation_perturbed(mass, eta_sum, n: int, u: float, e: float):
    """``[fp_summation]`` ``Pldr.fp_summation_perturbed``: leaves off by ``e M_i + eta_i``.

    ``((1 + gamma_{n-1})(1 + e) - 1) sum M + (1 + gamma_{n-1}) sum eta``.
    """
    g = _g(_pred(n), u)
    return prod1m(g, e) * np.asarray(mass, dtype=np.float64) + (1 + g) * eta_sum


def fp_dot_product(abs_prod_sum, n: int, u: float, eta_sum=0.0):
    """``[fp_dot_product]`` ``Pldr.fp_dot_product``: ``n`` products (rounded or fused), any order.

    ``|a^.b - a.b| <= gamma_n sum |a_i||b_i| + (1 + gamma_{n-1}) sum eta_i``.
    """
    return _g(n, u) * np.asarray(abs_prod_sum, dtype=np.float64) + (
        1 + _g(_pred(n), u)
    ) * np.asarray(eta_sum, dtype=np.float64)


def fp_flush_to_zero(abs_sum, n: int, u: float, rho: float):
    """``[fp_flush_to_zero]`` ``Pldr.fp_flush_to_zero``: any order, partial sums flushed.

    ``n`` terms, every partial sum below the normal range flushed (``rho = 2^emin`` per
    node): ``|s^ - sum f| <= gamma_{n-1} sum |f| + (1 + gamma_{n-1})(n - 1) rho``
    (``lean/Pldr/Float/Ftz.lean``). On float64 arrays; :mod:`pyverify.fp.stages` holds the
    same formula in exact arithmetic (a deliberate pair: arrays for the tests, exact for
    the oracle).
    """
    g = _g(_pred(n), u)
    return g * np.asarray(abs_sum, dtype=np.float64) + (1 + g) * _pred(n) * rho


def fp_flush_to_zero_dot_product(abs_prod_sum, n: int, u: float, rho_p: float, rho: float):
    """``[fp_flush_to_zero]`` ``Pldr.fp_flush_to_zero_dot_product`` (and ``_matmul``, entrywise).

    Products rounded with relative ``u`` and absolute ``rho_p`` (flushed), any order with
    ``rho`` per node: ``gamma_n sum |a_i||b_i| + (1 + gamma_{n-1})(n rho_p + (n - 1) rho)``
    (as :func:`fp_flush_to_zero`, an array twin of :mod:`pyverify.fp.stages`'s).
    """
    return _g(n, u) * np.asarray(abs_prod_sum, dtype=np.float64) + (1 + _g(_pred(n), u)) * (
        n * rho_p + _pred(n) * rho
    )


def fp_matmul(abs_a, abs_b, u: float, eta: float = 0.0):
    """``[fp_matmul]`` ``Pldr.fp_matmul``: ``|C^ - AB| <= gamma_n |A||B| + (1+gamma_{n-1}) n eta``.

    ``abs_a`` (m, n) and ``abs_b`` (n, p) are ``|A|`` and ``|B|``; every entry may use its
    own summation order.
    """
    n = np.shape(abs_a)[-1]
    return fp_dot_product(np.asarray(abs_a) @ np.asarray(abs_b), n, u, n * eta)


def fp_mixed_precision(
    abs_prod_sum,
    n: int,
    u_acc: float,
    u_a: float = 0.0,
    u_b: float = 0.0,
    u_out: float = 0.0,
    eta_sum=0.0,
    eta_out: float = 0.0,
):
    """``[fp_mixed_precision]`` ``Pldr.fp_mixed_precision`` (and ``_matmul``).

    Inputs rounded at ``u_a``, ``u_b`` (normal range), products and any summation order at
    ``u_acc`` (product underflows summing to ``eta_sum``), the result rounded at ``u_out``
    (underflow ``eta_out``):
    ``((1 + u_out)(1 + u_a)(1 + u_b)(1 + gamma_n(u_acc)) - 1) sum |a_i||b_i|
    + (1 + u_out)(1 + gamma_{n-1}(u_acc)) sum eta_i + eta_out``.
    """
    k = prod1m(u_out, u_a, u_b, _g(n, u_acc))
    return (
        k * np.asarray(abs_prod_sum, dtype=np.float64)
        + (1 + u_out) * (1 + _g(_pred(n), u_acc)) * np.asarray(eta_sum, dtype=np.float64)
        + eta_out
    )


def fp_softmax_exp_factor(delta, spread, u: float, u_exp: float):
    """``[fp_softmax]`` ``Pldr.fp_softmax_exp``: the factor ``c_e`` of one computed exponential.

    The score is off by ``delta`` (``|x^ - x| <= delta``), ``|x^ - m| <= spread`` for the
    shift ``m``, the difference is rounded at ``u`` and the exponential has relative error
    ``u_exp``: ``|e^ - e| <= (c_e - 1) e + eta_exp`` with
    ``c_e = (1 + u_exp) / (1 - (delta + u spread))``, defined where ``delta + u spread < 1``.
    """
    return 1 + fp_softmax_exp_excess(delta, spread, u, u_exp)


def fp_softmax_exp_excess(delta, spread, u: float, u_exp: float):
    """``[fp_softmax]`` ``c_e - 1`` of :func:`fp_softmax_exp_factor`, without cancellation.

    ``(1 + u_exp) / (1 - a) - 1 = (u_exp + a) / (1 - a)``, ``a = delta + u spread < 1``.
    The bounds below take this excess (``ce_m1``) wherever the statements say ``c_e``.
    """
    a = np.asarray(delta, dtype=np.float64) + u * np.asarray(spread, dtype=np.float64)
    if np.any(a >= 1):
        raise ValueError("fp_softmax_exp: the exponent's error delta + u spread reaches 1")
    return (u_exp + a) / (1 - a)


def fp_softmax_beta(ce_m1, n, u: float, eta_e: float, sigma):
    """``[fp_softmax]`` the normaliser's relative error ``beta`` (elementwise, unchecked).

    ``beta = (1 + gamma_{n-1}) c_e - 1 + (1 + gamma_{n-1}) n eta_e sigma``; the statements
    need ``beta < 1``.
    """
    g = _g(_pred(n), u)
    b = prod1m(g, ce_m1)  # (1 + gamma_{n-1}) c_e - 1
    return b + (1 + g) * np.asarray(n) * eta_e * np.asarray(sigma)


def _beta(ce_m1, n: int, u: float, eta_e: float, sigma):
    beta = fp_softmax_beta(ce_m1, n, u, eta_e, sigma)
    if np.any(beta >= 1):
        raise ValueError("the normaliser's relative error beta reaches 1")
    return beta


def fp_softmax(p, ce_m1, n: int, u: float, u_d: float, sigma, eta_e: float = 0.0, eta_d=0.0):
    """``[fp_softmax]`` ``Pldr.fp_softmax``: weights ``fl(e^_j / s^)`` (normalise-first order).

    Exponentials within ``(c_e - 1) e_j + eta_e``, their sum in any order at ``u``, the
    quotient rounded at ``u_d`` (underflow ``eta_d``), ``(sum_l e_l)^-1 <= sigma``; with
    ``beta = (1 + gamma_{n-1}) c_e - 1 + (1 + gamma_{n-1}) n eta_e sigma``:
    ``|p^_j - p_j| <= (1 + u_d)((c_e - 1 + beta) p_j + eta_e sigma)/(1 - beta) + u_d p_j + eta_d``
    (``ce_m1 = c_e - 1``, :func:`fp_softmax_exp_excess`).
    """
    rel, ab = fp_softmax_coefficients(ce_m1, n, u, u_d, sigma, eta_e, eta_d)
    return rel * np.asarray(p, dtype=np.float64) + ab


def fp_softmax_coefficients(ce_m1, n, u: float, u_d: float, sigma, eta_e: float = 0.0, eta_d=0.0):
    """:func:`fp_softmax`'s bound as ``rel p_j + ab``; ``n``, ``ce_m1``, ``sigma`` may be arrays.

    ``rel = (1 + u_d)(c_e - 1 + beta)/(1 - beta) + u_d`` and
    ``ab = (1 + u_d) eta_e sigma / (1 - beta) + eta_d``: the statement's terms regrouped.
    """
    beta = _beta(ce_m1, n, u, eta_e, sigma)
    rel = (1 + u_d) * (np.asarray(ce_m1) + beta) / (1 - beta) + u_d
    ab = (1 + u_d) * eta_e * np.asarray(sigma) / (1 - beta) + eta_d
    return rel, ab


def fp_head_output(
    mass,
    ce_m1,
    n: int,
    u: float,
    e_p: float,
    w: float,
    sigma,
    abs_v_sum=0.0,
    eta_e: float = 0.0,
    eta_g_sum=0.0,
    eta_y: float = 0.0,
):
    """``[fp_head_output]`` ``Pldr.fp_head_output``: one fused output (numerator / denominator).

    ``mass`` is ``mu = sum_j p_j |v_j|``; exponentials within ``(c_e - 1) e_j + eta_e``;
    numerator leaves within ``e_p |e^_j v_j| + eta_g j``; both sums in any order at ``u``;
    the result within ``w |N^/D^| + eta_y`` of the quotient; ``(sum e)^-1 <= sigma``. With
    ``a = (1 + gamma_{n-1}) c_e (1 + e_p) - 1``, ``H_N = (1 + gamma_{n-1}) (sum_j (1 + e_p)
    eta_e |v_j| + eta_g j)`` and ``beta`` as in :func:`fp_softmax`:
    ``(1 + w)((a + beta) mu + H_N sigma)/(1 - beta) + w mu + eta_y`` (``ce_m1 = c_e - 1``).
    """
    g = _g(_pred(n), u)
    mass = np.asarray(mass, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    a = prod1m(g, ce_m1, e_p)
    beta = _beta(ce_m1, n, u, eta_e, sigma)
    h_n = (1 + g) * ((1 + e_p) * eta_e * np.asarray(abs_v_sum) + np.asarray(eta_g_sum))
    return (1 + w) * ((a + beta) * mass + h_n * sigma) / (1 - beta) + w * mass + eta_y


def fp_head_output_hull(
    spread, vmax, n, u: float, e_p: float, w: float, c: float, eta_g_sum=0.0, eta_y: float = 0.0
):
    """``[fp_head_output]`` ``Pldr.fp_head_output_hull``: the fused output, no premise on scores.

    ``spread = hi - lo`` of the row's values, ``vmax >= |v_j|``, one computed exponential
    at least ``c > 0``, every one ``>= 0``; with ``a = (1 + gamma_{n-1})(1 + e_p) - 1``,
    ``b = gamma_{n-1}``, ``H_N = (1 + gamma_{n-1}) eta_g_sum``:
    ``(hi - lo) + (1 + w)((a + b) V + H_N / c)/(1 - b) + w V + eta_y``.
    """
    g = _g(_pred(n), u)
    a = prod1m(g, e_p)
    h_n = (1 + g) * np.asarray(eta_g_sum, dtype=np.float64)
    vmax = np.asarray(vmax, dtype=np.float64)
    inner = ((a + g) * vmax + h_n / c) / (1 - g)
    return np.asarray(spread, dtype=np.float64) + (1 + w) * inner + w * vmax + eta_y


def fp_head_output_normalized(
    mass,
    rho,
    n: int,
    u: float,
    e_p: float,
    w: float,
    abs_v_sum=0.0,
    eta_p=0.0,
    eta_g_sum=0.0,
    eta_y: float = 0.0,
):
    """``[fp_head_output]`` ``Pldr.fp_head_output_normalized``: weights first, then ``p V``.

    Weights within ``rho p_j + eta_p``, leaves within ``e_p |p^_j v_j| + eta_g j``, any
    order at ``u``, the result within ``w |.| + eta_y``:
    ``((1 + w)(1 + gamma_{n-1})(1 + e_p)(1 + rho) - 1) mu
    + (1 + w)(1 + gamma_{n-1}) (sum_j (1 + e_p) eta_p |v_j| + eta_g j) + eta_y``.
    """
    g = _g(_pred(n), u)
    k = prod1m(w, g, e_p, rho)
    h = (1 + e_p) * np.asarray(eta_p) * np.asarray(abs_v_sum) + np.asarray(eta_g_sum)
    return k * np.asarray(mass, dtype=np.float64) + (1 + w) * (1 + g) * h + eta_y


def fp_head_scores(
    abs_qgk,
    abs_tau: float,
    e1: float,
    e2: float,
    u_tau: float,
    u_s: float,
    h1k=0.0,
    h2=0.0,
    q_dg_k=0.0,
    eta_s: float = 0.0,
):
    """``[fp_head_scores]`` ``Pldr.fp_head_scores``: the scores ``tau Q G K^T``.

    ``abs_qgk`` is ``|Q||G^||K|^T``; ``X`` off by ``e1 |Q||G^| + h1`` (``h1k = h1 |K|^T``),
    the score product off by ``e2 |X||K|^T + h2``, ``tau^`` off by ``u_tau |tau|``, the
    scaled score rounded at ``u_s`` (underflow ``eta_s``), the metric off by ``dG``
    (``q_dg_k = |Q| dG |K|^T``); with ``C = (1 + u_s)(1 + u_tau)``:
    ``|tau| ((C (1 + e1)(1 + e2) - 1) |Q||G^||K|^T + C ((1 + e2) h1 |K|^T + h2)
    + |Q| dG |K|^T) + eta_s``.
    """
    c = (1 + u_s) * (1 + u_tau)
    return (
        abs_tau
        * (
            prod1m(u_s, u_tau, e1, e2) * np.asarray(abs_qgk, dtype=np.float64)
            + c * ((1 + e2) * np.asarray(h1k) + np.asarray(h2))
            + np.asarray(q_dg_k)
        )
        + eta_s
    )


def fp_elementwise(lip, d, r, abs_f, eta_f: float = 0.0):
    """``[fp_elementwise]`` ``Pldr.fp_elementwise``: an entrywise stage on a computed input.

    ``f`` moves by at most ``lip |x^ - x|`` on the segment, the input is off by ``d``, the
    routine has relative error ``r`` and absolute error ``eta_f``:
    ``|f^(x^) - f(x)| <= (1 + r) lip d + r |f(x)| + eta_f``.
    """
    r = np.asarray(r, dtype=np.float64)
    return (1 + r) * np.asarray(lip) * np.asarray(d) + r * np.asarray(abs_f) + eta_f
