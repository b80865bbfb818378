"""The decoder stages' proved bounds (:mod:`pyverify.fp.stages`) for the property tests.

Each shipped implementation's arithmetic as the parameters of the Lean statements of
``lean/Pldr/Float/LayerNorm.lean``, ``Stages.lean`` and ``Decoder.lean``
(:class:`StageArith`) and the running bounds of one LayerNorm, one SwiGLU block and one
affine kernel evaluated on the actual operands; their exact values in mpmath at
:data:`~pyverify.testing.fp.MP_DPS` digits (the spec of ``docs/plga-spec.md`` written out:
:mod:`pyverify.reference.mp_stages`). The composed bound of a decoder pass:
:mod:`pyverify.testing.decoder_bounds`.

Evaluation. The formulas with coefficients ``(1 + a)(1 + b) - 1`` (``fp_layernorm`` and its
statistics, ``fp_swiglu_kappa``, ``fp_swiglu_silu``) are evaluated in Fractions: in float64
their cancellation would cost ~``2^-53 / u`` relative (everything at ``u = 2^-53``). The
rest (sums and products of nonnegative terms) in float64, each stage's result times
:data:`~pyverify.fp.formulas.EVAL_SLACK` (``[fp_summation]``: within it of the exact value,
the float64 leaves included); every bound is monotone in its input error, so the slack of
one stage carries through the next.

What each implementation computes (the premises), :func:`stage_arith`:

* the reference (NumPy float64): two-pass LayerNorm ``(x - mu) / sqrt(v + eps) * g + b``:
  ``sqrt`` correctly rounded and the quotient one rounding of ``c * (1 / s)`` with ``1 / s``
  exact, so the reciprocal square root routine is ``1 / s``: ``u_rs = u / (1 - u)``; the
  sigmoid ``where(z >= 0, 1 / (1 + e), e / (1 + e))`` with ``e = exp(-|z|)``: for ``z < 0``
  it is ``fl(1 / D)`` with ``D = fl(1 + e) / e`` exact, ``1 + 1/e`` rounded once and
  ``1/e`` an exponential of ``-z`` of accuracy ``u_e / (1 - u_e)`` (``u_e`` NumPy's
  ``exp``): that accuracy covers both branches; affine maps ``x @ W + b`` (``n + 1``
  leaves in any order, ``fp_mixed_precision``); attention normalised first (path
  ``reference``).
* the kernels (torch on the CPU; float32, and bfloat16 computed in float32): LayerNorm
  ATen's: the moments (Welford's, ``RowwiseMoments``), ``rstd = fl(1 / fl(sqrt(w)))``
  (``u_rs = (1 + u)/(1 - u) - 1``), ``y = fma(fl(fl(x - mu) rstd), g, b)`` (a fused
  product is a rounding with zero error; the form read off ATen 2.13's outputs bit for
  bit); at bfloat16 the row computed in float32 and rounded once. F.silu
  ``fl(h / fl(1 + exp(-h)))``: the sigmoid ``1 / D`` exact, the quotient the product's
  rounding; its exponential Sleef's ``u10`` (:data:`~pyverify.fp.exps.LIB_ACCURACY`); at
  bfloat16 computed in float32 and rounded once (a rounding of
  ``u = (1 + u_bf)(1 + u_32) - 1``). ``addmm`` accumulates in
  the compute dtype, the bias one of the leaves, the result rounded once to the I/O
  dtype (``fp_mixed_precision`` with ``u_out``). SDPA: the fused CPU kernel (path
  ``sdpa``), pinned by the tests.

The kernels' LayerNorm moments are Welford's, not the two-pass routine whose errors
``fp_layernorm_mean`` and ``fp_layernorm_variance`` bound; the Lean statement takes any
routine through ``Delta mu``, ``e_v``, ``eta_v``, and the kernels are held to the two-pass
values: an assumption about ATen (the cross-check and the learner's property tests need
none: they certify each call's statistics, :mod:`pyverify.fp.learner`), whose
observable consequences (the returned mean within ``Delta mu``, ``rstd`` within ``R r``)
the LayerNorm test checks on every float32 example (bfloat16 returns them rounded).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import torch
from hypothesis import reject

from pyverify.fp import stages
from pyverify.fp.formulas import EVAL_SLACK, UNDERFLOW, fp_elementwise, fp_mixed_precision
from pyverify.fp.learner import HIDDEN_LIMIT, SILU_LIP, float_up, reference_sigmoid_exp
from pyverify.fp.models import LIB_ACCURACY, Arithmetic
from pyverify.fp.underflow import NotModelled
from pyverify.precision import TORCH_DTYPES, UNIT_ROUNDOFF
from pyverify.reference import mp_stages as mps
from pyverify.testing.fp import MP_DPS, MP_REL, arith

__all__ = [
    "HIDDEN_LIMIT",
    "OutsideModel",
    "StageArith",
    "affine_local",
    "affine_mp",
    "eps_error",
    "exact_gap",
    "f64",
    "layernorm_bound",
    "mp_context",
    "mpf_fraction",
    "or_reject",
    "oracle_gap",
    "stage_arith",
    "swiglu_bound",
]


class OutsideModel(ValueError):  # noqa: N818 (a refusal of the example, as BoundRefused)
    """The operands leave a premise of the bounds (the test rejects the example)."""


def or_reject(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` (a proved bound), the example rejected on :class:`OutsideModel`.

    A premise of a stage's theorem fails: no proved bound, Hypothesis draws another
    example (the rejections: ``pytest --hypothesis-show-statistics``).
    """
    try:
        return fn(*args, **kwargs)
    except OutsideModel:
        reject()


@dataclass(frozen=True)
class StageArith:
    """One implementation's arithmetic as the parameters of the stage statements.

    Attributes
    ----------
    ar : Arithmetic
        The implementation's arithmetic (:func:`pyverify.testing.fp.arith`).
    u, eta : Fraction
        Unit round-off of the compute dtype and the underflow of one product in it.
    u_rs : Fraction
        ``fp_layernorm``'s reciprocal square root accuracy.
    u_exp : Fraction
        ``fp_swiglu``'s exponential accuracy (:data:`~pyverify.fp.exps.LIB_ACCURACY`).
    u_out, eta_out : Fraction
        The rounding of a float32 result to the I/O dtype (0 where they agree).
    path : str
        How the attention scores are formed (:func:`pyverify.fp.models.scores_bound`).
    """

    ar: Arithmetic
    u: Fraction
    eta: Fraction
    u_rs: Fraction
    u_exp: Fraction
    u_out: Fraction
    eta_out: Fraction
    path: str

    @property
    def u_sw(self) -> Fraction:
        """``fp_swiglu``'s ``u``: the compute rounding, then the output's (``u_out``)."""
        return (1 + self.u) * (1 + self.u_out) - 1

    @property
    def eta_sw(self) -> Fraction:
        """``fp_swiglu``'s ``eta``: ``|fl_o(fl(z)) - z| <= u_sw |z| + (1 + u_o) eta + eta_o``."""
        return (1 + self.u_out) * self.eta + self.eta_out


def stage_arith(impl: Any) -> StageArith:
    """The :class:`StageArith` of ``impl`` (module docstring: what each computes)."""
    ar = arith(impl)
    u = Fraction(UNIT_ROUNDOFF[ar.compute])
    eta = Fraction(UNDERFLOW[ar.compute])
    u_lib = Fraction(LIB_ACCURACY[ar.compute])
    if ar.impl == "reference":
        return StageArith(ar, u, eta, u / (1 - u), reference_sigmoid_exp(u_lib), Fraction(0),
                          Fraction(0), "reference")  # fmt: skip
    if ar.device != "cpu":
        raise NotModelled(
            f"{ar.device} {ar.dtype}: the stage premises (ATen's CPU LayerNorm, silu, addmm) "
            "are the CPU kernels': no proved stage bound"
        )
    low = ar.dtype != ar.compute
    u_out = Fraction(UNIT_ROUNDOFF[ar.dtype]) if low else Fraction(0)
    eta_out = Fraction(UNDERFLOW[ar.dtype]) if low else Fraction(0)
    path = "sdpa_split" if ar.reduced else "sdpa"
    return StageArith(ar, u, eta, (1 + u) / (1 - u) - 1, u_lib, u_out, eta_out, path)


# --------------------------------------------------------------------------- conversions
def mp_context() -> Any:
    """An mpmath context at :data:`~pyverify.testing.fp.MP_DPS` digits."""
    ctx = mpmath.MPContext()
    ctx.dps = MP_DPS
    return ctx


def mpf_fraction(x: Any) -> Fraction:
    """An ``mpf`` (or float, or Fraction) as the Fraction it is, exactly (``man_exp`` unsigned)."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, float | int | np.floating):
        return Fraction(float(x))
    man, exp = x.man_exp
    value = Fraction(int(man)) * (Fraction(2) ** int(exp))
    return -value if x < 0 else value


def exact_gap(a: Any, b: Any) -> np.ndarray:
    """``|a - b|`` entrywise, exactly, rounded up (rows of floats or mpf, either side)."""
    return np.array([[float_up(abs(mpf_fraction(x) - mpf_fraction(y)))
                      for x, y in zip(ra, rb, strict=True)]
                     for ra, rb in zip(a, b, strict=True)])  # fmt: skip


def oracle_gap(a: Any, b: Any) -> np.ndarray:
    """``|a* - b*|`` entrywise, rounded up, of the exact values of two mpmath oracles.

    ``a``, ``b``: rows of mpf at :data:`~pyverify.testing.fp.MP_DPS` digits, each within
    :data:`~pyverify.testing.fp.MP_REL` relative of its exact value: ``|a - b| + MP_REL
    (|a| + |b|)``, computed exactly (Fractions).
    """
    rel = Fraction(MP_REL)
    out = []
    for ra, rb in zip(a, b, strict=True):
        row = []
        for x, y in zip(ra, rb, strict=True):
            fx, fy = mpf_fraction(x), mpf_fraction(y)
            row.append(float_up(abs(fx - fy) + rel * (abs(fx) + abs(fy))))
        out.append(row)
    return np.array(out)


def eps_error(eps: float, compute: str) -> Fraction:
    """How far the ``eps`` a routine in ``compute`` adds (``eps`` converted to it) is from it."""
    held = torch.tensor(float(eps), dtype=torch.float64).to(TORCH_DTYPES[compute])
    return abs(Fraction(float(held)) - Fraction(float(eps)))


def f64(m: Sequence[Sequence[Any]]) -> np.ndarray:
    """A matrix of mpf as float64 (each entry rounded once)."""
    return np.array([[float(e) for e in row] for row in m], dtype=np.float64)


# --------------------------------------------------------------------------- stages
def affine_local(abs_x: np.ndarray, W: np.ndarray, b: np.ndarray, sa: StageArith) -> np.ndarray:
    """``[fp_mixed_precision]`` An affine kernel ``x W + b`` on its own input, ``|x^| <= abs_x``.

    ``n + 1`` leaves (the bias one) in any order at ``u``, products underflowing by
    ``eta`` each, the result rounded once at ``u_out`` (the weights held exactly).
    """
    W = np.asarray(W, np.float64)
    n = W.shape[0]
    mass = np.asarray(abs_x, np.float64) @ np.abs(W) + np.abs(np.asarray(b, np.float64))
    return EVAL_SLACK * fp_mixed_precision(
        mass, n + 1, float(sa.u), u_out=float(sa.u_out), eta_sum=n * float(sa.eta),
        eta_out=float(sa.eta_out),
    )  # fmt: skip


def layernorm_bound(
    x: Sequence[Sequence[Fraction]], d: np.ndarray, gamma, beta, eps: float | Fraction,
    sa: StageArith,
    ctx: Any, *, with_parts: bool = False, eta_eps: Fraction = Fraction(0),
) -> Any:  # fmt: skip
    """``[fp_layernorm]`` The entrywise bound of every row (float64, rounded up).

    ``x``: the exact rows (Fractions); ``d``: their input error; ``gamma``, ``beta``,
    ``eps``: as held (exact). Statistics: ``fp_layernorm_mean`` (``u_d = u``,
    ``eta_d = eta``) and ``fp_layernorm_variance`` (``eta_m = eta_d = eta``); the exact
    ``r = 1/sqrt(v + eps)`` from mpmath, rounded up (the bound increases with ``r``: each
    ``u |c_i| r |gamma_i|`` term outgrows the change of ``u |y_i|``). At bfloat16 the
    float32 row's rounding: ``[fp_elementwise]`` with ``L = 1``. ``eta_eps``: the distance
    of the ``eps`` the kernel adds to ``eps`` (``fl(v^ + eps^) = fl((v^ + eps^ - eps) + eps)``:
    the variance routine's absolute error ``eta_v`` grows by it). ``with_parts``: also
    ``(Delta mu, R)`` per row (``|r^ - r| <= R r``, the statistics half of the proof).

    Raises
    ------
    OutsideModel
        A row whose variance is not resolved (``W >= v + eps``): no bound.
    """
    u, eta = sa.u, sa.eta
    g = [Fraction(float(t)) for t in np.asarray(gamma, np.float64)]
    bt = [Fraction(float(t)) for t in np.asarray(beta, np.float64)]
    ep = eps if isinstance(eps, Fraction) else Fraction(float(eps))
    out, parts = [], []
    for row, drow in zip(x, np.asarray(d, np.float64), strict=True):
        n = len(row)
        dr = [Fraction(float(t)) for t in drow]
        mu = sum(row, Fraction(0)) / n
        v = sum(((t - mu) ** 2 for t in row), Fraction(0)) / n
        w = v + ep
        r_mp = 1 / ctx.sqrt(ctx.mpf(w.numerator) / w.denominator)
        r = mpf_fraction(r_mp * (1 + ctx.mpf(10) ** (10 - MP_DPS)))
        dmu = stages.fp_layernorm_mean(sum(map(abs, row), Fraction(0)), sum(dr), n, u, u, eta)
        e_v, eta_v = stages.fp_layernorm_variance(n, u, u, eta, eta)
        eta_v += eta_eps
        try:
            b = stages.fp_layernorm(row, dr, g, bt, ep, r, u=u, eta=eta, u_rs=sa.u_rs,
                                    delta_mu=dmu, e_v=e_v, eta_v=eta_v)  # fmt: skip
        except ValueError as exc:
            raise OutsideModel(str(exc)) from None
        bf = np.array([float_up(t) for t in b])
        if sa.u_out:
            y = np.array(
                [abs(float(gi * (xi - mu) * r + bi)) for gi, xi, bi in zip(g, row, bt, strict=True)]
            )
            bf = EVAL_SLACK * fp_elementwise(1.0, bf, float(sa.u_out), y, float(sa.eta_out))
        out.append(bf)
        if with_parts:
            c = [t - mu for t in row]
            D = [(1 + u) * (di + dmu) + u * abs(ci) for di, ci in zip(dr, c, strict=True)]
            Q = sum((Di * (2 * abs(ci) + Di) for Di, ci in zip(D, c, strict=True)), Fraction(0))
            V = (1 + e_v) * (Q / n) + e_v * v + eta_v
            W = (1 + u) * V + u * (v + ep)
            R = (1 + sa.u_rs) * (1 + W / (v + ep - W)) - 1
            parts.append((dmu, R))
    bound = np.array(out)
    return (bound, parts) if with_parts else bound


def swiglu_bound(h1, h2, s1, abs_x, d, block, sa: StageArith, *, abs_p=None) -> np.ndarray:
    """``[fp_swiglu]`` The bound of a SwiGLU block's output rows.

    ``h1``, ``h2``, ``s1 = silu(h1)``: the exact hidden values (float64), ``abs_x``: ``|x|``
    of the exact input, ``d``: its error. ``B1``, ``B2``: :func:`affine_local` on
    ``|x| + d``; ``B3`` on ``|p^| <= |s1 h2| + dp`` (``abs_p`` the actual ``|p^|`` where
    known), ``dp`` the statement's own bound of the gated product (``fp_swiglu`` with
    ``W3 = I``, ``B3 = 0``). The sigmoid: ``eta_e = eta_q = 0`` (``|h1| <=``
    :data:`HIDDEN_LIMIT`: ``exp(-h)`` and ``1 / D`` normal), silu ``SILU_LIP``-Lipschitz.
    """
    h1, h2, s1 = (np.asarray(t, np.float64) for t in (h1, h2, s1))
    if np.any(np.abs(h1) > HIDDEN_LIMIT):
        raise OutsideModel(f"a hidden value beyond {HIDDEN_LIMIT}: exp(-h) may leave the range")
    d = np.asarray(d, np.float64)
    xs = np.asarray(abs_x, np.float64) + d
    B1 = affine_local(xs, block.W1, block.b1, sa)
    B2 = affine_local(xs, block.W2, block.b2, sa)
    kw = {"u": sa.u_sw, "eta": sa.eta_sw, "u_exp": sa.u_exp, "eta_e": Fraction(0),
          "eta_q": Fraction(0), "lip": Fraction(SILU_LIP)}  # fmt: skip
    f = h1.shape[-1]
    dp = EVAL_SLACK * np.asarray(
        stages.fp_swiglu(h1, h2, s1, d, block.W1, block.W2, np.eye(f), B1, B2, np.zeros(f), **kw),
        np.float64,
    )
    p = EVAL_SLACK * np.abs(s1 * h2) + dp if abs_p is None else np.asarray(abs_p, np.float64)
    B3 = affine_local(p, block.W3, block.b3, sa)
    out = stages.fp_swiglu(h1, h2, s1, d, block.W1, block.W2, block.W3, B1, B2, B3, **kw)
    return EVAL_SLACK * np.asarray(out, np.float64)


def affine_mp(X, W, b, ctx) -> list[list[Any]]:
    """The exact ``X W + b`` (rows of mpf; ``W``, ``b`` float64, converted exactly)."""
    Wm = mps.to_mat(np.asarray(W, np.float64), "W", ctx=ctx)
    cols = [list(c) for c in zip(*Wm, strict=True)]
    bv = [ctx.mpf(float(t)) for t in np.asarray(b, np.float64)]
    return [[ctx.fdot(row, c) + bj for c, bj in zip(cols, bv, strict=True)] for row in X]
