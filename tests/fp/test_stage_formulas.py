"""The stage bounds of :mod:`pyverify.fp.stages` against simulated rounded computations.

Every computation is simulated exactly: the roundings are the oracle of
:mod:`pyverify.fp.ieee` on Fractions (in a narrow format, so that the errors are large),
the irrational steps (``exp``, ``1/sqrt``, powers) are mpmath at :data:`DPS` digits,
rounded by the oracle (a correctly rounded routine: its accuracy is ``u`` plus the
mpmath error, :data:`TINY`), and the exact results are mpmath at the same precision. Each
test checks ``|computed - exact| <= bound`` with the bound evaluated by the formula the
Lean statement gives, in Fractions where the formula is rational.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from pyverify.fp import ieee, stages
from pyverify.fp.ieee import BFLOAT16, BINARY16

DPS = 60


@pytest.fixture(autouse=True)
def _digits():
    """Every test here at DPS digits; mpmath's global context is left as found."""
    with mpmath.workdps(DPS):
        yield


#: The error of an mpmath value at DPS digits, relative (far below any bound here).
TINY = Fraction(1, 10**50)
#: A narrow format with subnormals within easy reach (p = 5, emin = -6).
TOY = ieee.Format("toy", 5, -6, 7)


def _mp(q: Fraction) -> mpmath.mpf:
    return mpmath.mpf(q.numerator) / q.denominator


def _frac(x: mpmath.mpf) -> Fraction:
    m, e = mpmath.mpf(x).man_exp
    return Fraction(int(m)) * ieee.pow2(int(e))


def _rnd(fmt: ieee.Format, x) -> Fraction:
    return ieee.rne(fmt, x if isinstance(x, Fraction) else _frac(x))


def _seq_sum(fl, xs: list[Fraction]) -> Fraction:
    s = xs[0]
    for x in xs[1:]:
        s = fl(s + x)
    return s


def _within(err, bound, rel_slack=TINY):
    """``err <= bound`` up to the mpmath error of the exact value (relative TINY)."""
    return err <= bound * (1 + rel_slack) + rel_slack


def _grid(rng: random.Random, fmt: ieee.Format, n: int, scale: float) -> list[Fraction]:
    return [ieee.rne(fmt, Fraction(rng.uniform(-scale, scale))) for _ in range(n)]


# --------------------------------------------------------------------------- IEEE and FTZ


@pytest.mark.parametrize("fmt", [BFLOAT16, BINARY16, TOY], ids=lambda f: f.name)
def test_ieee_dot_product(fmt):
    rng = random.Random(fmt.p)
    for trial in range(200):
        n = rng.randint(1, 12)
        scale = 2.0 ** rng.randint(fmt.emin - 4, 4)
        a, b = _grid(rng, fmt, n, scale), _grid(rng, fmt, n, 1.0)
        prods = [ieee.rne(fmt, x * y) for x, y in zip(a, b, strict=True)]
        got = _seq_sum(lambda z: ieee.rne(fmt, z), prods)
        exact = sum((x * y for x, y in zip(a, b, strict=True)), Fraction(0))
        mass = sum((abs(x) * abs(y) for x, y in zip(a, b, strict=True)), Fraction(0))
        bound = stages.fp_ieee_rounding_dot_product(mass, n, fmt.u, fmt.eta)
        assert abs(got - exact) <= bound, (trial, n)


def test_ieee_rounding_bound():
    rng = random.Random(1)
    for _ in range(500):
        x = Fraction(rng.uniform(-1, 1)) * ieee.pow2(rng.randint(-12, 4))
        assert abs(ieee.rne(TOY, x) - x) <= stages.fp_ieee_rounding(abs(x), TOY.u, TOY.eta)


def test_flush_to_zero_sum_and_dot_product():
    rng = random.Random(2)
    fmt = TOY
    rho = fmt.eta_ftz
    violated = 0
    for _ in range(300):
        n = rng.randint(2, 10)
        xs = [ieee.ftz(fmt, v) for v in _grid(rng, fmt, n, float(4 * rho))]
        got = _seq_sum(lambda z: ieee.ftz(fmt, z), xs)
        exact = sum(xs, Fraction(0))
        mass = sum((abs(x) for x in xs), Fraction(0))
        assert abs(got - exact) <= stages.fp_flush_to_zero(mass, n, fmt.u, rho)
        g = Fraction(n - 1) * fmt.u / (1 - (n - 1) * fmt.u)
        violated += abs(got - exact) > g * mass  # the eta-free bound of fp_summation
        b = _grid(rng, fmt, n, 1.0)
        prods = [ieee.ftz(fmt, x * y) for x, y in zip(xs, b, strict=True)]
        got = _seq_sum(lambda z: ieee.ftz(fmt, z), prods)
        exact = sum((x * y for x, y in zip(xs, b, strict=True)), Fraction(0))
        mass = sum((abs(x) * abs(y) for x, y in zip(xs, b, strict=True)), Fraction(0))
        assert abs(got - exact) <= stages.fp_flush_to_zero_dot_product(mass, n, fmt.u, rho, rho)
    assert violated > 0  # flush-to-zero does break the eta-free bound


# --------------------------------------------------------------------------- LayerNorm


def _layer_norm_sim(fmt, xh, gamma, beta, eps):
    """Two-pass LayerNorm in ``fmt`` (every operation rounded by the oracle)."""
    n = len(xh)
    fl = lambda z: ieee.rne(fmt, z)  # noqa: E731
    mu = fl(_seq_sum(fl, xh) / n)
    c = [fl(x - mu) for x in xh]
    v = fl(_seq_sum(fl, [fl(ci * ci) for ci in c]) / n)
    w = fl(v + eps)
    r = _rnd(fmt, 1 / mpmath.sqrt(_mp(w)))
    return [fl(fl(fl(ci * r) * g) + b) for ci, g, b in zip(c, gamma, beta, strict=True)]


@pytest.mark.parametrize("fmt", [BFLOAT16, BINARY16], ids=lambda f: f.name)
def test_layernorm(fmt):
    rng = random.Random(3 + fmt.p)
    ratios, refused = [], 0
    for _ in range(60):
        n = rng.randint(2, 8)
        x = [Fraction(rng.uniform(-3, 3)) for _ in range(n)]
        xh = [ieee.rne(fmt, xi) for xi in x]  # the computed input: x rounded
        d = [abs(a - b) for a, b in zip(xh, x, strict=True)]
        gamma = _grid(rng, fmt, n, 2.0)
        beta = _grid(rng, fmt, n, 1.0)
        eps = ieee.rne(fmt, Fraction(1, 1000))
        got = _layer_norm_sim(fmt, xh, gamma, beta, eps)
        mu = sum(x, Fraction(0)) / n
        v = sum(((xi - mu) ** 2 for xi in x), Fraction(0)) / n
        r_mp = 1 / mpmath.sqrt(_mp(v + eps))
        u, eta = fmt.u, fmt.eta
        dmu = stages.fp_layernorm_mean(
            sum((abs(xi) for xi in x), Fraction(0)), sum(d, Fraction(0)), n, u, u, eta
        )
        e_v, eta_v = stages.fp_layernorm_variance(n, u, u, eta, eta)
        r = _frac(r_mp)  # the exact r to DPS digits; the bound moves by ~TINY relative
        kw = dict(u=u, eta=eta, u_rs=u + TINY, delta_mu=dmu, e_v=e_v, eta_v=eta_v)
        try:
            bound = stages.fp_layernorm(x, d, gamma, beta, eps, r, **kw)
        except ValueError:  # the variance is not resolved at this precision: no bound
            refused += 1
            continue
        for i in range(n):
            y = _mp(gamma[i]) * (_mp(x[i] - mu) * r_mp) + _mp(beta[i])
            err = abs(_frac(_mp(got[i]) - y))
            assert _within(err, bound[i], Fraction(1, 10**40)), (i, float(err), float(bound[i]))
            if err > 0:
                ratios.append(float(bound[i] / err))
    assert refused < 20
    assert ratios and np.median(ratios) < 1e3  # a running bound, not a worst case


def test_layernorm_refuses_an_unresolved_variance():
    x = [Fraction(1), Fraction(1)]
    with pytest.raises(ValueError, match="not resolved"):
        stages.fp_layernorm(
            x, [Fraction(1)] * 2, [Fraction(1)] * 2, [Fraction(0)] * 2, Fraction(0), Fraction(1),
            u=Fraction(1, 256), eta=0, u_rs=0, delta_mu=Fraction(1), e_v=0, eta_v=0,
        )  # fmt: skip


# --------------------------------------------------------------------------- SwiGLU, power


def _silu(z):
    return z / (1 + mpmath.exp(-z))


def test_swiglu_silu_lipschitz_constant():
    zs = [mpmath.mpf(k) / 100 for k in range(-1000, 1001)]
    lip = max(abs(_silu(a) - _silu(b)) / (b - a) for a, b in itertools.pairwise(zs))
    assert lip < 1.0999


@pytest.mark.parametrize("fmt", [BFLOAT16, BINARY16], ids=lambda f: f.name)
def test_swiglu(fmt):
    rng = random.Random(5 + fmt.p)
    fl = lambda z: ieee.rne(fmt, z)  # noqa: E731
    u, eta = fmt.u, fmt.eta
    for _ in range(20):
        n, f, m = rng.randint(1, 4), rng.randint(1, 5), rng.randint(1, 3)
        x = [Fraction(rng.uniform(-2, 2)) for _ in range(n)]
        xh = [fl(xi) for xi in x]
        d = [float(abs(a - b)) for a, b in zip(xh, x, strict=True)]
        w1 = [_grid(rng, fmt, f, 1.0) for _ in range(n)]
        w2 = [_grid(rng, fmt, f, 1.0) for _ in range(n)]
        w3 = [_grid(rng, fmt, m, 1.0) for _ in range(f)]
        b1, b2, b3 = _grid(rng, fmt, f, 0.5), _grid(rng, fmt, f, 0.5), _grid(rng, fmt, m, 0.5)

        def aff(v, w, b, j):
            terms = [fl(v[k] * w[k][j]) for k in range(len(v))] + [b[j]]
            mass = sum((abs(v[k] * w[k][j]) for k in range(len(v))), abs(b[j]))
            return _seq_sum(fl, terms), float(
                stages.fp_ieee_rounding_dot_product(mass, len(v) + 1, u, eta)
            )

        h1h, b1l = zip(*(aff(xh, w1, b1, j) for j in range(f)), strict=True)
        h2h, b2l = zip(*(aff(xh, w2, b2, j) for j in range(f)), strict=True)
        ph = []
        for j in range(f):
            e = _rnd(fmt, mpmath.exp(-_mp(h1h[j])))
            sig = fl(1 / fl(1 + e))
            ph.append(fl(fl(h1h[j] * sig) * h2h[j]))
        oh, b3l = zip(*(aff(ph, w3, b3, o) for o in range(m)), strict=True)
        # exact
        h1 = [sum((x[k] * w1[k][j] for k in range(n)), b1[j]) for j in range(f)]
        h2 = [sum((x[k] * w2[k][j] for k in range(n)), b2[j]) for j in range(f)]
        s = [_silu(_mp(h)) for h in h1]
        o_ex = [
            sum((s[j] * _mp(h2[j]) * _mp(w3[j][o]) for j in range(f)), _mp(b3[o])) for o in range(m)
        ]
        bound = stages.fp_swiglu(
            np.array([float(h) for h in h1]),
            np.array([float(h) for h in h2]),
            np.array([float(v) for v in s]),
            np.array(d),
            np.array([[float(v) for v in r] for r in w1]),
            np.array([[float(v) for v in r] for r in w2]),
            np.array([[float(v) for v in r] for r in w3]),
            np.array(b1l),
            np.array(b2l),
            np.array(b3l),
            u=float(u), eta=float(eta), u_exp=float(u), eta_e=float(eta), eta_q=float(eta),
            lip=1.0999,
        )  # fmt: skip
        for o in range(m):
            err = float(abs(_mp(oh[o]) - o_ex[o]))
            assert err <= bound[o] * (1 + 1e-12), (o, err, bound[o])


def test_power_law():
    rng = random.Random(6)
    fmt = BFLOAT16
    for _ in range(300):
        a = Fraction(rng.uniform(0.01, 4))
        p_exp = Fraction(rng.uniform(-3, 3)).limit_denominator(64)
        ah = ieee.rne(fmt, a * (1 + Fraction(rng.uniform(-0.01, 0.01))))
        rho = abs(ah - a) / a
        pi_h = _rnd(fmt, mpmath.power(_mp(ah), _mp(p_exp)))
        exact = mpmath.power(_mp(a), _mp(p_exp))
        err = float(abs(_mp(pi_h) - exact))
        bound = stages.fp_power_law(float(exact), float(rho), float(p_exp), float(fmt.u), 0.0)
        assert err <= bound * (1 + 1e-9), (float(a), float(p_exp), err, bound)


def test_power_law_refuses_rho_one():
    with pytest.raises(ValueError):
        stages.fp_power_law(1.0, 1.0, 2.0, 0.0, 0.0)


# --------------------------------------------------------------------------- decoder


def _decoder_case(rng: random.Random, fmt: ieee.Format) -> None:
    """A two-stage chain: residual of a linear map (fl(x + fl(x W))), then LayerNorm."""
    fl = lambda z: ieee.rne(fmt, z)  # noqa: E731
    u, eta = fmt.u, fmt.eta
    n = rng.randint(2, 5)
    x = [fl(Fraction(rng.uniform(-2, 2))) for _ in range(n)]  # an exact grid row: d = 0
    w = [_grid(rng, fmt, n, 0.5) for _ in range(n)]
    gamma, beta = _grid(rng, fmt, n, 2.0), _grid(rng, fmt, n, 1.0)
    eps = fl(Fraction(1, 100))

    def g_exact(v):
        return [sum((v[k] * w[k][j] for k in range(n)), Fraction(0)) for j in range(n)]

    def res_exact(v):
        return [a + b for a, b in zip(v, g_exact(v), strict=True)]

    def beta_res(v, dv):
        # the sublayer: rounded dot products of the computed input (fp_decoder_step_affine)
        bg = []
        for j in range(n):
            mass = sum((abs(v[k] * w[k][j]) + dv[k] * abs(w[k][j]) for k in range(n)), Fraction(0))
            local = stages.fp_ieee_rounding_dot_product(mass, n, u, eta)
            bg.append(local + sum((dv[k] * abs(w[k][j]) for k in range(n)), Fraction(0)))
        gv = g_exact(v)
        return [
            stages.fp_decoder_step_residual(dv[j], bg[j], abs(v[j] + gv[j]), u) for j in range(n)
        ]

    def beta_ln(v, dv):
        mu = sum(v, Fraction(0)) / n
        var = sum(((a - mu) ** 2 for a in v), Fraction(0)) / n
        r = _frac(1 / mpmath.sqrt(_mp(var + eps)))
        dmu = stages.fp_layernorm_mean(sum(map(abs, v), Fraction(0)), sum(dv), n, u, u, eta)
        e_v, eta_v = stages.fp_layernorm_variance(n, u, u, eta, eta)
        kw = dict(u=u, eta=eta, u_rs=u + TINY, delta_mu=dmu, e_v=e_v, eta_v=eta_v)
        return stages.fp_layernorm(v, dv, gamma, beta, eps, r, **kw)

    d0 = [Fraction(0)] * n
    bound = stages.fp_decoder_step(x, d0, [(res_exact, beta_res), (lambda v: v, beta_ln)])
    gh = [_seq_sum(fl, [fl(x[k] * w[k][j]) for k in range(n)]) for j in range(n)]
    z = [fl(a + b) for a, b in zip(x, gh, strict=True)]
    got = _layer_norm_sim(fmt, z, gamma, beta, eps)
    ze = res_exact(x)
    mu = sum(ze, Fraction(0)) / n
    var = sum(((a - mu) ** 2 for a in ze), Fraction(0)) / n
    r_mp = 1 / mpmath.sqrt(_mp(var + eps))
    for i in range(n):
        y = _mp(gamma[i]) * (_mp(ze[i] - mu) * r_mp) + _mp(beta[i])
        err = abs(_frac(_mp(got[i]) - y))
        assert _within(err, bound[i], Fraction(1, 10**40))


def test_decoder_step_composes_residual_and_layernorm():
    rng = random.Random(8)
    for _ in range(20):
        _decoder_case(rng, BINARY16)


def test_cached_decode_is_the_sum():
    assert stages.fp_cached_decode(Fraction(1, 3), Fraction(1, 6)) == Fraction(1, 2)
    np.testing.assert_array_equal(
        stages.fp_cached_decode(np.array([1.0, 2.0]), np.array([0.5, 0.25])), [1.5, 2.25]
    )
