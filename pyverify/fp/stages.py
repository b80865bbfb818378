"""The bounds of the decoder's stages proved in Lean (issue 35): one function per theorem.

Each function evaluates the right-hand side of one Lean statement exactly as written
(its docstring names the theorem ID and the Lean name), on NumPy float64 values or on
:class:`fractions.Fraction` scalars (the formulas use only ``+ - * /``, so Fractions give
the bound exactly; float64 evaluation is off by at most
:data:`pyverify.fp.formulas.EVAL_SLACK`). Arguments are the actual magnitudes of the
operands (``sum |a||b|``, ``|x_i - mu|``, the row's variance), so the bounds are running
error bounds.

* ``fp_ieee_rounding`` (``lean/Pldr/Float/Ieee.lean``): :func:`fp_ieee_rounding`,
  :func:`fp_ieee_rounding_dot_product`; the formats' constants are
  :mod:`pyverify.fp.ieee`.
* ``fp_flush_to_zero`` (``Ftz.lean``): :func:`fp_flush_to_zero`,
  :func:`fp_flush_to_zero_perturbed`, :func:`fp_flush_to_zero_dot_product`.
* ``fp_layernorm`` (``LayerNorm.lean``): :func:`fp_layernorm`,
  :func:`fp_layernorm_mean`, :func:`fp_layernorm_variance`.
* ``fp_swiglu``, ``fp_power_law`` (``Stages.lean``): :func:`fp_swiglu_kappa`,
  :func:`fp_swiglu_silu`, :func:`fp_swiglu`, :func:`fp_power_law`.
* ``fp_decoder_step``, ``fp_cached_decode`` (``Decoder.lean``):
  :func:`fp_decoder_step_residual`, :func:`fp_decoder_step_affine`,
  :func:`fp_decoder_step`, :func:`fp_cached_decode`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "Stage",
    "fp_cached_decode",
    "fp_decoder_step",
    "fp_decoder_step_affine",
    "fp_decoder_step_residual",
    "fp_flush_to_zero",
    "fp_flush_to_zero_dot_product",
    "fp_flush_to_zero_perturbed",
    "fp_ieee_rounding",
    "fp_ieee_rounding_dot_product",
    "fp_layernorm",
    "fp_layernorm_mean",
    "fp_layernorm_variance",
    "fp_power_law",
    "fp_swiglu",
    "fp_swiglu_kappa",
    "fp_swiglu_silu",
]

Num = Any  # a float, a Fraction or a NumPy array of float64

#: A stage's error propagator: ``beta(x, d)``, the exact input and the input error.
Stage = Callable[[Any, Any], Any]


def _gam(n: int, u: Num) -> Num:
    """Higham's ``gamma_n(u) = n u / (1 - n u)``, defined for ``n u < 1``."""
    nu = n * u
    if nu >= 1:
        raise ValueError(f"gamma_{n}({u}) is undefined: n u >= 1")
    return nu / (1 - nu)


def _abs(x: Num) -> Num:
    return abs(x) if isinstance(x, int | float | Fraction) else np.abs(np.asarray(x))


# --------------------------------------------------------------------------- IEEE, FTZ


def fp_ieee_rounding(abs_x: Num, u: Num, eta: Num) -> Num:
    """``[fp_ieee_rounding]`` ``Pldr.fp_ieee_rounding``: ``|rne x - x| <= u |x| + eta``.

    ``u = 2^-p``, ``eta = 2^(emin - p)`` (:class:`pyverify.fp.ieee.Format`); in the normal
    range (``Pldr.fp_ieee_rounding_normal``) and for the exact sum of two numbers of the
    format (``_lattice``, ``_add``) the bound is ``u |x|``: pass ``eta = 0``.
    """
    return u * abs_x + eta


def fp_ieee_rounding_dot_product(abs_prod_sum: Num, n: int, u: Num, eta: Num) -> Num:
    """``[fp_ieee_rounding]`` ``Pldr.fp_ieee_rounding_dot_product``: genuine IEEE dot product.

    Products rounded to nearest (underflow ``eta`` each), any summation order, ``n u < 1``:
    ``gamma_n sum |a_i||b_i| + (1 + gamma_{n-1}) n eta``.
    """
    return _gam(n, u) * abs_prod_sum + (1 + _gam(max(n - 1, 0), u)) * (n * eta)


def fp_flush_to_zero(abs_sum: Num, n: int, u: Num, rho: Num) -> Num:
    """``[fp_flush_to_zero]`` ``Pldr.fp_flush_to_zero``: any order, nodes off by ``u|.| + rho``.

    ``gamma_{n-1} sum |f| + (1 + gamma_{n-1}) (n - 1) rho`` (flush-to-zero:
    ``rho = 2^emin``, :attr:`pyverify.fp.ieee.Format.eta_ftz`).
    """
    g = _gam(max(n - 1, 0), u)
    return g * abs_sum + (1 + g) * (max(n - 1, 0) * rho)


def fp_flush_to_zero_perturbed(mass: Num, eta_sum: Num, n: int, u: Num, e: Num, rho: Num) -> Num:
    """``[fp_flush_to_zero]`` ``Pldr.fp_flush_to_zero_perturbed``: leaves off by ``e M_i + eta_i``.

    ``((1 + gamma_{n-1})(1 + e) - 1) sum M + (1 + gamma_{n-1})(sum eta + (n - 1) rho)``.
    """
    g = _gam(max(n - 1, 0), u)
    return ((1 + g) * (1 + e) - 1) * mass + (1 + g) * (eta_sum + max(n - 1, 0) * rho)


def fp_flush_to_zero_dot_product(abs_prod_sum: Num, n: int, u: Num, rho_p: Num, rho: Num) -> Num:
    """``[fp_flush_to_zero]`` ``Pldr.fp_flush_to_zero_dot_product`` (and ``_matmul``, ``_ieee``).

    Products with absolute term ``rho_p``, sums with ``rho``, ``n >= 1``, ``n u < 1``:
    ``gamma_n sum |a_i||b_i| + (1 + gamma_{n-1})(n rho_p + (n - 1) rho)``.
    """
    g1 = _gam(max(n - 1, 0), u)
    return _gam(n, u) * abs_prod_sum + (1 + g1) * (n * rho_p + max(n - 1, 0) * rho)


# --------------------------------------------------------------------------- LayerNorm


def fp_layernorm_mean(abs_x_sum: Num, d_sum: Num, n: int, u: Num, u_d: Num, eta_d: Num) -> Num:
    """``[fp_layernorm]`` ``Pldr.fp_layernorm_mean``: the computed mean's error ``Delta mu``.

    A sum in any order at ``u`` of the input (off by ``d``), divided by ``n`` and rounded at
    ``u_d`` (absolute ``eta_d``): ``((1 + u_d)(1 + gamma_{n-1}) - 1) sum|x|/n
    + (1 + u_d)(1 + gamma_{n-1}) sum d/n + eta_d``.
    """
    g = _gam(max(n - 1, 0), u)
    return ((1 + u_d) * (1 + g) - 1) * abs_x_sum / n + (1 + u_d) * (1 + g) * d_sum / n + eta_d


def fp_layernorm_variance(n: int, u: Num, u_d: Num, eta_m: Num, eta_d: Num) -> tuple[Num, Num]:
    """``[fp_layernorm]`` ``Pldr.fp_layernorm_variance``: the variance routine's ``(e_v, eta_v)``.

    Squares rounded (absolute ``eta_m``), any order at ``u``, divided by ``n`` and rounded
    at ``u_d`` (``eta_d``): ``e_v = (1 + u_d)(1 + gamma_n) - 1``,
    ``eta_v = (1 + u_d)(1 + gamma_{n-1}) eta_m + eta_d``.
    """
    e_v = (1 + u_d) * (1 + _gam(n, u)) - 1
    eta_v = (1 + u_d) * (1 + _gam(max(n - 1, 0), u)) * eta_m + eta_d
    return e_v, eta_v


def fp_layernorm(
    x: Sequence[Num],
    d: Sequence[Num],
    gamma: Sequence[Num],
    beta: Sequence[Num],
    eps: Num,
    r: Num,
    *,
    u: Num,
    eta: Num,
    u_rs: Num,
    delta_mu: Num,
    e_v: Num,
    eta_v: Num,
) -> list[Num]:
    """``[fp_layernorm]`` ``Pldr.fp_layernorm``: one LayerNorm row, entrywise bounds.

    ``x`` is the exact row, ``d`` its input error, ``r`` the exact ``1/sqrt(v + eps)``
    (``r^2 (v + eps) = 1``; evaluated by the caller), ``delta_mu`` the mean's error
    (:func:`fp_layernorm_mean`), ``e_v``, ``eta_v`` the variance routine's
    (:func:`fp_layernorm_variance`), ``u_rs`` the rsqrt routine's accuracy, ``u`` and
    ``eta`` the roundings'. With ``c_i = x_i - mu``, ``w = v + eps``,
    ``D_i = (1 + u)(d_i + delta_mu) + u |c_i|``, ``Q = sum D_i (2 |c_i| + D_i) / n``,
    ``V = (1 + e_v) Q + e_v v + eta_v``, ``W = (1 + u) V + u w`` (must be ``< w``),
    ``omega = W / (w - W)``, ``R = (1 + u_rs)(1 + omega) - 1``,
    ``T_i = (1 + u)(D_i r + |c_i| R r + D_i R r) + u |c_i| r + eta``,
    ``S_i = (1 + u) T_i |gamma_i| + u |c_i| r |gamma_i| + eta``:
    ``(1 + u) S_i + u |gamma_i c_i r + beta_i|``.

    Raises
    ------
    ValueError
        If the variance is not resolved (``W >= v + eps``): the theorem gives no bound.
    """
    n = len(x)
    mu = sum(x, 0 * x[0]) / n
    c = [xi - mu for xi in x]
    v = sum((ci * ci for ci in c), 0 * x[0]) / n
    w = v + eps
    dd = [(1 + u) * (di + delta_mu) + u * _abs(ci) for di, ci in zip(d, c, strict=True)]
    q = sum((di * (2 * _abs(ci) + di) for di, ci in zip(dd, c, strict=True)), 0 * x[0]) / n
    big_v = (1 + e_v) * q + e_v * v + eta_v
    big_w = (1 + u) * big_v + u * w
    if not big_w < w:
        raise ValueError("fp_layernorm: the variance is not resolved (W >= v + eps)")
    omega = big_w / (w - big_w)
    rr = (1 + u_rs) * (1 + omega) - 1
    out = []
    for ci, di, gi, bi in zip(c, dd, gamma, beta, strict=True):
        t = (1 + u) * (di * r + _abs(ci) * (rr * r) + di * (rr * r)) + u * (_abs(ci) * r) + eta
        s = (1 + u) * (t * _abs(gi)) + u * (_abs(ci) * r * _abs(gi)) + eta
        out.append((1 + u) * s + u * _abs(gi * (ci * r) + bi))
    return out


# --------------------------------------------------------------------------- SwiGLU, power


def fp_swiglu_kappa(u: Num, u_exp: Num, eta_e: Num) -> Num:
    """``[fp_swiglu]`` ``Pldr.fp_swiglu_sigmoid``: the sigmoid's relative factor ``kappa``.

    ``delta = (1 + u)(1 + u_exp + eta_e) - 1 < 1``, ``kappa = (1 + u)/(1 - delta) - 1``:
    ``|sigma^ - sigma(z)| <= kappa sigma(z) + eta_q``.
    """
    delta = (1 + u) * (1 + u_exp + eta_e) - 1
    if not delta < 1:
        raise ValueError("fp_swiglu_sigmoid: delta >= 1")
    return (1 + u) / (1 - delta) - 1


def fp_swiglu_silu(
    abs_silu_h: Num, abs_h: Num, d1: Num, *, u: Num, eta: Num, eta_q: Num, kappa: Num, lip: Num
) -> Num:
    """``[fp_swiglu]`` ``Pldr.fp_swiglu_silu``: ``fl(h^ sigma^)`` on an argument off by ``d1``.

    ``((1 + u)(1 + kappa) - 1)(|silu h| + L d1) + (1 + u)(|h| + d1) eta_q + eta + L d1``.
    """
    return (
        ((1 + u) * (1 + kappa) - 1) * (abs_silu_h + lip * d1)
        + (1 + u) * (abs_h + d1) * eta_q
        + eta
        + lip * d1
    )


def fp_swiglu(
    h1: Num,
    h2: Num,
    silu_h1: Num,
    d: Num,
    w1: Num,
    w2: Num,
    w3: Num,
    b1_local: Num,
    b2_local: Num,
    b3_local: Num,
    *,
    u: Num,
    eta: Num,
    u_exp: Num,
    eta_e: Num,
    eta_q: Num,
    lip: Num,
) -> np.ndarray:
    """``[fp_swiglu]`` ``Pldr.fp_swiglu``: ``|o^ - swiglu(x)|`` for one row (NumPy float64).

    ``h1 = x W1 + b1``, ``h2 = x W2 + b2`` and ``silu_h1`` are the exact hidden values
    (``(f,)``), ``d`` the input error (``(n,)``), ``w1``, ``w2`` ``(n, f)``, ``w3``
    ``(f, m)``; ``b1_local``, ``b2_local``, ``b3_local`` the local bounds ``B1, B2, B3`` of
    the three affine kernels on their own inputs (``fp_mixed_precision``). With
    ``d1 = B1 + d |W1|``, ``d2 = B2 + d |W2|``, ``ds`` = :func:`fp_swiglu_silu` and
    ``dp = (1 + u)(ds |h2| + |silu h1| d2 + ds d2) + u |silu h1| |h2| + eta``:
    ``B3 + dp |W3|``.
    """
    d = np.asarray(d, np.float64)
    d1 = np.asarray(b1_local, np.float64) + d @ np.abs(w1)
    d2 = np.asarray(b2_local, np.float64) + d @ np.abs(w2)
    kappa = fp_swiglu_kappa(u, u_exp, eta_e)
    a_s, a_h2 = np.abs(silu_h1), np.abs(h2)
    ds = fp_swiglu_silu(a_s, np.abs(h1), d1, u=u, eta=eta, eta_q=eta_q, kappa=kappa, lip=lip)
    dp = (1 + u) * (ds * a_h2 + a_s * d2 + ds * d2) + u * (a_s * a_h2) + eta
    return np.asarray(b3_local, np.float64) + dp @ np.abs(w3)


def fp_power_law(a_p: Num, rho: Num, p_exp: Num, u_pow: Num, eta_pow: Num) -> Num:
    """``[fp_power_law]`` ``Pldr.fp_power_law`` (``_hpow`` entrywise): ``|pi^ - a^P|``.

    The base off by ``rho a`` (``rho < 1``), the routine of accuracy ``u_pow``, ``eta_pow``,
    ``c = (1 - rho)^-|P|`` (evaluated in float64: round the result up, it is not exact):
    ``((1 + u_pow) c - 1) a^P + eta_pow``; ``a_p`` is the exact ``a^P``.
    """
    rho = np.asarray(rho, np.float64)
    if np.any(rho >= 1):
        raise ValueError("fp_power_law: the base's relative error reaches 1")
    c = (1 - rho) ** (-np.abs(np.asarray(p_exp, np.float64)))
    return ((1 + u_pow) * c - 1) * np.asarray(a_p, np.float64) + eta_pow


# --------------------------------------------------------------------------- decoder


def fp_decoder_step_residual(d: Num, beta_g: Num, abs_sum: Num, u: Num) -> Num:
    """``[fp_decoder_step]`` ``Pldr.fp_decoder_step_residual``: ``fl(x^ + g^(x^))``.

    ``(1 + u)(d + beta_g) + u |x + g(x)|`` (a sum: no absolute term).
    """
    return (1 + u) * (d + beta_g) + u * abs_sum


def fp_decoder_step_affine(local: Num, d: Num, w: Num) -> np.ndarray:
    """``[fp_decoder_step]`` ``Pldr.fp_decoder_step_affine``: ``B_j + sum_k d_k |W_kj|``."""
    return np.asarray(local, np.float64) + np.asarray(d, np.float64) @ np.abs(w)


def fp_decoder_step(x: Any, d: Any, stages: Sequence[tuple[Callable[[Any], Any], Stage]]) -> Any:
    """``[fp_decoder_step]`` ``Pldr.fp_decoder_step``: the composed bound of a chain of stages.

    ``stages`` lists ``(f, beta)`` pairs in order: the exact map and the propagator
    ``beta(x, d)`` (``FpStage.comp``: stage ``k + 1`` gets the exact ``f_k(x)`` and the
    bound ``beta_k(x, d)``). Returns the bound on the last stage's output.
    """
    for f, beta in stages:
        x, d = f(x), beta(x, d)
    return d


def fp_cached_decode(bound_cached: Num, bound_uncached: Num) -> Num:
    """``[fp_cached_decode]`` ``Pldr.fp_cached_decode``: ``|Y^_c - Y^_u| <= B_c + B_u``."""
    return bound_cached + bound_uncached
