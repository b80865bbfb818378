"""The proved-bound formulas and the premises they assume about the implementations.

* :mod:`pyverify.fp.formulas` evaluates the Lean statements: pinned on hand-computed values
  and on the relations between the theorems (``fp_mixed_precision`` with exact inputs is
  ``fp_dot_product``; ``fp_dot_product`` with exact products is ``fp_summation`` plus one
  rounding), and every premise refuses (``n u >= 1``, a score error reaching 1, a power
  law segment reaching 0, more keys than one flash block).
* :data:`pyverify.fp.models.EXP_ACCURACY`: the declared accuracy of each softmax
  exponential against the real one. NumPy's and torch's ``exp`` are measured directly
  against mpmath; ATen's ``exp_u20`` and ``fexp_u20`` (inside the fused SDPA, not callable
  from Python) through a NumPy re-implementation of their x86 source (the polynomial, the
  ``2^n`` construction, the float32 roundings, FMA as one rounding), on a dense grid of the
  arguments a softmax feeds them (``[-86, 0]``, above float32's underflow).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import torch

from pyverify.fp import attention as fa
from pyverify.fp import formulas as fb
from pyverify.fp import models as fm
from pyverify.precision import UNIT_ROUNDOFF, gamma

F32 = np.float32
U32, U64 = UNIT_ROUNDOFF["float32"], UNIT_ROUNDOFF["float64"]


# --------------------------------------------------------------------------- formulas
def test_summation_and_dot_product_formulas():
    u = 2.0**-10
    assert fb.fp_summation(10.0, 1, u) == 0.0  # one term: nothing is rounded
    assert fb.fp_summation(10.0, 3, u) == 10.0 * 2 * u / (1 - 2 * u)
    assert fb.fp_dot_product(5.0, 3, u) == 5.0 * gamma(3, u)
    # exact products: the dot product's gamma_n is gamma_{n-1} (the sum) and one rounding
    assert fb.fp_dot_product(5.0, 3, u) >= fb.fp_summation(5.0, 3, u) * (1 + u) + u * 5.0
    # mixed precision with exact inputs and no output rounding is the dot product
    assert fb.fp_mixed_precision(5.0, 3, u, eta_sum=1e-30) == pytest.approx(
        fb.fp_dot_product(5.0, 3, u, 1e-30), rel=1e-15
    )
    m = fb.fp_mixed_precision(1.0, 4, u, u_a=2.0**-8, u_b=2.0**-8, u_out=2.0**-8)
    assert m == pytest.approx((1 + 2.0**-8) ** 3 * (1 + gamma(4, u)) - 1, rel=1e-12)
    np.testing.assert_array_equal(
        fb.fp_matmul(np.ones((2, 3)), np.ones((3, 1)), u), np.full((2, 1), 3 * gamma(3, u))
    )


def test_softmax_exp_factor_and_the_output_bound():
    ce = fb.fp_softmax_exp_factor(0.01, 100.0, U32, 1e-6)
    assert ce == (1 + 1e-6) / (1 - (0.01 + U32 * 100.0))
    # no error anywhere: a zero bound
    assert fb.fp_softmax_exp_excess(0.01, 100.0, U32, 1e-6) == pytest.approx(ce - 1, rel=1e-9)
    # no error anywhere (c_e - 1 = 0): a zero bound
    assert fb.fp_head_output(1.0, 0.0, 1, 0.0, 0.0, 0.0, 1.0) == 0.0
    assert fb.fp_softmax(0.5, 0.0, 1, 0.0, 0.0, 1.0) == 0.0
    # with exp error only: (a + beta) mu / (1 - beta), a = beta = c_e - 1
    c = 1 + 1e-3
    assert fb.fp_head_output(2.0, c - 1, 1, 0.0, 0.0, 0.0, 1.0) == pytest.approx(
        2 * (c - 1) * 2.0 / (1 - (c - 1)), rel=1e-14
    )


def test_hull_bound_formula_and_where_it_takes_over():
    """``fp_head_output_hull``: the values' range plus the kernel's own roundings; in
    :func:`attention_bound` it bounds the fused kernel's rows whose scores are too far off
    for ``fp_head_output`` (every row finite), never the MATH backend's (still refused)."""
    assert fb.fp_head_output_hull(2.0, 1.5, 1, 0.0, 0.0, 0.0, 1.0) == 2.0  # nothing rounded
    u = 2.0**-10
    g = 2 * u / (1 - 2 * u)  # gamma_2: three terms in any order
    want = 2.0 + (2 * g * 1.5 + 0.0) / (1 - g)  # (a + b) V / (1 - b), a = b = gamma_2
    assert fb.fp_head_output_hull(2.0, 1.5, 3, u, 0.0, 0.0, 1.0) == pytest.approx(want, rel=1e-12)
    ar = fm.arithmetic("kernels", "float32")
    q = np.array([[1.0, 0.0], [3e6, 1e6]])  # row 1's score error bound is far above 1
    k = np.array([[1.0, 2.0], [-2.0, 1.0]])
    v = np.array([[0.5, -1.0], [2.0, 1.0]])
    bound = fa.attention_bound(ar, q, k, v, None, path="sdpa_plain", backend="flash")
    assert np.all(np.isfinite(bound))
    hull = bound[1] / fb.EVAL_SLACK
    assert np.all(hull >= np.ptp(v, axis=0))  # at least the values' range
    assert np.all(bound[0] < 1e-5)  # row 0 keeps the premise-bound: far below its range
    with pytest.raises(ValueError, match="reaches 1"):
        fa.attention_bound(ar, q, k, v[:, :1], None, path="sdpa_plain", backend="math")


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda: fb.fp_summation(1.0, 2**25, U32), "n u >= 1"),
        (lambda: fm._gm(2**24, U32), "n u >= 1"),  # scores_bound's gamma: checked too
        (lambda: gamma(2**24, U32), "n u >= 1"),
        (lambda: fb.fp_softmax_exp_factor(0.9, 1e7, U32, 0.0), "reaches 1"),
        (lambda: fb.fp_head_output(1.0, 1.1, 4, U32, 0.0, 0.0, 1.0), "reaches 1"),
        (
            lambda: fm.power_stage_bound(
                fm.arithmetic("kernels", "float32"),
                np.ones((1, 1)),
                np.full((1, 1), 2.0),
                np.ones((1, 1)),
                np.ones((1, 1)),
            ),
            "reaches 0",
        ),
        (
            lambda: fa.attention_bound(
                fm.arithmetic("kernels", "float32"),
                np.ones((1, 2)),
                np.ones((600, 2)),
                np.ones((600, 2)),  # head sizes agree: the fused kernel, one block of 512
            ),
            "keys",
        ),
    ],
)
def test_premises_refuse(fn, match):
    with pytest.raises(ValueError, match=match):
        fn()


def test_arithmetic_of_each_implementation():
    ref = fm.arithmetic("reference", "float64")
    assert (ref.compute, ref.exp, ref.u_hold) == ("float64", "numpy", 0.0)
    k16 = fm.arithmetic("kernels", "bfloat16")
    assert (k16.compute, k16.exp, k16.u_hold, k16.reduced) == ("float32", "fexp_u20", U32, True)
    assert fm.arithmetic("kernels", "float32").exp == "exp_u20"
    assert fm.arithmetic("someone", "float64").exp == "sleef"  # others: the kernels' premises


@pytest.mark.parametrize("backend", ["flash", "math"])
def test_attention_bound_holds_for_torch_sdpa_at_every_dtype(backend):
    """The bound of SDPA on plain ``Q`` against mpmath, per dtype and pinned backend.

    4-D inputs with equal head sizes run the fused kernel; 2-D inputs run MATH (torch's
    fused kernels take 4-D only): each pinned, so the bound of the backend that runs is
    the one checked (a torch that picked another would raise here).
    """
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(12, 8)) for _ in range(3))
    ctx = mpmath.MPContext()
    ctx.dps = 40
    for dt in ("float64", "float32", "bfloat16", "float16"):
        tdt = getattr(torch, dt)
        qh, kh, vh = (torch.tensor(x).to(tdt) for x in (q, k, v))
        shape = (1, 1, 12, 8) if backend == "flash" else (12, 8)
        with fa.pinned(backend):
            got = torch.nn.functional.scaled_dot_product_attention(
                qh.reshape(shape), kh.reshape(shape), vh.reshape(shape), is_causal=True
            ).reshape(12, 8)
        qn, kn, vn = (t.double().numpy() for t in (qh, kh, vh))
        E = [[ctx.fsum(ctx.mpf(a) * ctx.mpf(b) for a, b in zip(qi, kj, strict=True))
              / ctx.sqrt(8) for kj in kn] for qi in qn]  # fmt: skip
        out = np.zeros_like(vn)
        for i, row in enumerate(E):
            w = [ctx.exp(e - max(row[: i + 1])) for e in row[: i + 1]]
            s = ctx.fsum(w)
            out[i] = [float(ctx.fsum(wj * ctx.mpf(vn[j, c]) for j, wj in enumerate(w)) / s)
                      for c in range(vn.shape[1])]  # fmt: skip
        bound = fa.attention_bound(fm.arithmetic("kernels", dt), qn, kn, vn, None,
                                   path="sdpa_plain", backend=backend)  # fmt: skip
        err = np.abs(got.double().numpy() - out)
        assert np.all(err <= bound + 2 * U64 * np.abs(out)), (dt, float((err / bound).max()))


def test_pinning_refuses_a_backend_torch_cannot_run():
    """The pin is an assertion: the fused kernel cannot take 2-D inputs or unequal heads."""
    q = torch.zeros(1, 1, 4, 8)
    for bad in (torch.zeros(4, 8), torch.zeros(1, 1, 4, 6)):
        with fa.pinned("flash"), pytest.raises(RuntimeError, match="No available kernel"):
            qq = q if bad.dim() == 4 else bad
            torch.nn.functional.scaled_dot_product_attention(qq, qq, bad)
    assert fa.sdpa_backend("sdpa_split", 8, 8) == "math"  # [hi, lo]: head size 2 dk
    assert fa.sdpa_backend("sdpa_split", 4, 8) == "flash"
    assert fa.sdpa_backend("sdpa", 8, 6) == "math"


# --------------------------------------------------------------------------- exponentials
def _fma(a, b, c):
    """float32 fused multiply-add: the exact ``a b + c`` (float64 holds it) rounded once."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(F32)


def _bits(h: int) -> np.float32:
    return np.array([h], dtype=np.uint32).view(F32)[0]


def _fexp_u20(x: np.ndarray) -> np.ndarray:
    """ATen's x86 ``Vectorized<float>::fexp_u20``: ``2^(x log2 e)`` with a cubic correction
    of the mantissa, built in the exponent bits (vec512_float.h)."""
    c0, c1, c2, c3 = (F32(0.00010703434948458272), F32(0.30354260500649682),
                      F32(-0.22433836478672356), F32(-0.079204240219773236))  # fmt: skip
    src = (x * _bits(0x3FB8AA3B)).astype(F32)
    frac = (src - np.floor(src)).astype(F32)
    full = np.full_like
    r = _fma(frac, full(frac, c3), full(frac, c2))
    r = _fma(frac, r, full(frac, c1))
    r = _fma(frac, r, full(frac, c0))
    src = (src - r).astype(F32)
    tmp = _fma(full(src, F32(2.0**23)), src, full(src, F32(2.0**23 * 127)))
    return np.trunc(tmp.astype(np.float64)).astype(np.int64).astype(np.int32).view(F32)


def _exp_u20(x: np.ndarray) -> np.ndarray:
    """ATen's x86 ``Vectorized<float>::exp_u20``: ``x = n ln 2 + r``, a degree-5
    polynomial in ``r``, times ``2^(n-1)`` times 2 (vec512_float.h)."""
    fac = [F32(c) for c in (0.999999701, 0.499991506, 0.166676521, 0.0418978221, 0.00828929059)]
    full = np.full_like
    src = np.clip(x, _bits(0xC2AEAC50), _bits(0x42B17218)).astype(F32)
    fx = np.floor(_fma(src, full(src, _bits(0x3FB8AA3B)), full(src, F32(0.5)))).astype(F32)
    r = _fma(-fx, full(fx, _bits(0x3F317218)), src)
    p = _fma(r, full(r, fac[4]), full(r, fac[3]))
    for c in (fac[2], fac[1], fac[0], F32(1)):
        p = _fma(r, p, full(r, c))
    n = (np.rint(fx - F32(1)).astype(np.int32) + 127).astype(np.uint32) << 23
    return ((p * n.view(F32)).astype(F32) * F32(2)).astype(F32)


_GRID = np.linspace(-86.0, 0.0, 2_000_001).astype(F32)


@pytest.mark.parametrize(("name", "fn"), [("fexp_u20", _fexp_u20), ("exp_u20", _exp_u20)])
def test_aten_exponentials_within_their_declared_accuracy(name, fn):
    got = fn(_GRID).astype(np.float64)
    want = np.exp(_GRID.astype(np.float64))  # float64 exp: 1e-16, nothing next to these
    rel = np.abs(got - want) / want
    u_exp, _ = fm.EXP_ACCURACY[name]
    assert rel.max() <= u_exp, (name, rel.max())
    assert rel.max() > u_exp / 100  # the re-implementation is not accidentally exact


def test_library_exponentials_within_their_declared_accuracy():
    ctx = mpmath.MPContext()
    ctx.dps = 30
    x = np.random.default_rng(0).uniform(-700, 5, 4000)
    exact = np.array([float(ctx.exp(ctx.mpf(float(t)))) for t in x])  # correctly rounded
    for got, u in (
        (np.exp(x), fm.EXP_ACCURACY["numpy"][0]),
        (torch.exp(torch.tensor(x)).numpy(), fm.EXP_ACCURACY["sleef"][0]),
    ):
        assert np.all(np.abs(got - exact) <= (u + U64) * exact)
    x32 = x[x > -80].astype(F32)
    got32 = torch.exp(torch.tensor(x32)).double().numpy()
    exact32 = np.exp(x32.astype(np.float64))
    assert np.all(np.abs(got32 - exact32) <= (fm.LIB_ACCURACY["float32"] + U64) * exact32)


def test_coefficients_without_cancellation():
    """``prod1m``: ``(1 + u)(1 + u) - 1`` at float64's ``u`` is ``2u + u^2``, not the 0 that
    ``1 + 2^-53 == 1`` would give; the bounds' coefficients are formed this way."""
    u = 2.0**-53
    assert (1 + u) * (1 + u) - 1 == 0.0  # the cancellation this avoids
    assert fb.prod1m(u, u) == pytest.approx(2 * u + u * u, rel=1e-15)
    assert fb.inv1m(u) == pytest.approx(u / (1 - u), rel=1e-15)
    assert fb.fp_mixed_precision(1.0, 1, u, u_out=u) == pytest.approx(2 * u, rel=1e-12)
    assert fb.EVAL_SLACK - 1 == pytest.approx(gamma(fb.EVAL_OPS, u), rel=1e-12)


def test_flush_to_zero_formulas():
    """``fp_flush_to_zero``: gradual bound plus ``(1 + gamma_{n-1})`` times the flushes."""
    u, rho = 2.0**-10, 2.0**-20
    assert fb.fp_flush_to_zero(4.0, 3, u, rho) == pytest.approx(
        fb.fp_summation(4.0, 3, u) + (1 + gamma(2, u)) * 2 * rho, rel=1e-15
    )
    assert fb.fp_flush_to_zero(4.0, 1, u, rho) == 0.0  # one term: nothing rounded
    d = fb.fp_flush_to_zero_dot_product(5.0, 3, u, rho, 2 * rho)
    assert d == pytest.approx(5.0 * gamma(3, u) + (1 + gamma(2, u)) * (3 * rho + 4 * rho))
