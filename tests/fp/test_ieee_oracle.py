"""The exact IEEE oracle (:mod:`pyverify.fp.ieee`) against NumPy's and torch's conversions.

The oracle is ``Pldr.Format.rne`` written out on Fractions; the libraries are independent
implementations of IEEE round-to-nearest-even. Inputs: random float64 values with all 53
significand bits random, across the normal and subnormal ranges of each target format,
exact halfway points (ties) and the boundaries (smallest subnormal, smallest normal,
largest finite). bfloat16 is checked on float32 inputs: torch converts a float64 to
bfloat16 through float32 (two roundings), and float32 to bfloat16 once.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
import torch

from pyverify.fp import ieee
from pyverify.fp.ieee import BFLOAT16, BINARY16, BINARY32, BINARY64, FORMATS

N = 3000


def _randoms(rng: random.Random, fmt: ieee.Format, n: int) -> list[float]:
    """Random float64 values spread over ``fmt``'s subnormal and normal exponents."""
    out = []
    lo, hi = fmt.qexp - 3, fmt.emax
    for _ in range(n):
        e = rng.randint(lo, hi)
        m = rng.getrandbits(53) | (1 << 52)
        x = math.ldexp(m, e - 52)
        out.append(-x if rng.random() < 0.5 else x)
    return out


def _ties(rng: random.Random, fmt: ieee.Format, n: int) -> list[float]:
    """Exact halfway points between neighbours of ``fmt`` (normal and subnormal)."""
    out = []
    for _ in range(n):
        e = rng.randint(fmt.qexp, fmt.emax - fmt.p)  # the spacing's exponent
        m = rng.randrange(2 ** (fmt.p - 1), 2**fmt.p)
        if e == fmt.qexp and rng.random() < 0.5:
            m = rng.randrange(0, 2 ** (fmt.p - 1))  # subnormal
        out.append(math.ldexp(2 * m + 1, e - 1))
    return out


def _boundaries(fmt: ieee.Format) -> list[float]:
    vals = [
        fmt.eta,
        2 * fmt.eta,
        3 * fmt.eta,
        fmt.eta_ftz,
        fmt.eta_ftz - fmt.eta,
        fmt.eta_ftz - 3 * fmt.eta,
        fmt.max_finite,
        fmt.max_finite + fmt.max_finite * fmt.u / 4,
    ]
    return [float(v) for v in vals if float(v) != 0.0 and math.isfinite(float(v))]


def _numpy_round(name: str, xs: list[float]) -> list[float]:
    dt = {"float32": np.float32, "float16": np.float16}[name]
    with np.errstate(over="ignore"):
        return [float(v) for v in np.asarray(xs, dtype=np.float64).astype(dt)]


@pytest.mark.parametrize("fmt", [BINARY32, BINARY16], ids=lambda f: f.name)
def test_rne_matches_numpy(fmt):
    rng = random.Random(20260101 + fmt.p)
    xs = _randoms(rng, fmt, N) + _ties(rng, fmt, N // 3) + _boundaries(fmt)
    got = _numpy_round(fmt.name, xs)
    for x, g in zip(xs, got, strict=True):
        want = ieee.convert(fmt, Fraction(x))
        assert (want == g) if isinstance(want, float) else (Fraction(g) == want), (x, g, want)


def test_rne_matches_torch_bfloat16():
    rng = random.Random(7)
    xs = _randoms(rng, BFLOAT16, N) + _ties(rng, BFLOAT16, N // 3) + _boundaries(BFLOAT16)
    xs32 = [float(np.float32(x)) for x in xs]  # exact float32 inputs: one rounding in torch
    xs32 = [x for x in xs32 if math.isfinite(x)]
    t = torch.tensor(xs32, dtype=torch.float32).to(torch.bfloat16).to(torch.float64)
    for x, g in zip(xs32, t.tolist(), strict=True):
        want = ieee.convert(BFLOAT16, Fraction(x))
        assert (want == g) if isinstance(want, float) else (Fraction(g) == want), (x, g, want)


def test_rne_matches_torch_float32_and_float16():
    rng = random.Random(11)
    for fmt, dt in ((BINARY32, torch.float32), (BINARY16, torch.float16)):
        xs = _randoms(rng, fmt, 500) + _ties(rng, fmt, 200)
        # torch converts float64 -> float16 through float32: feed float32 values for it
        if fmt is BINARY16:
            xs = [float(np.float32(x)) for x in xs]
        t = torch.tensor(xs, dtype=torch.float64).to(dt).to(torch.float64)
        for x, g in zip(xs, t.tolist(), strict=True):
            want = ieee.convert(fmt, Fraction(x))
            assert (want == g) if isinstance(want, float) else (Fraction(g) == want), (x, g)


def test_float64_grid_is_fixed():
    rng = random.Random(3)
    for x in _randoms(rng, BINARY64, 500):
        assert ieee.rne(BINARY64, Fraction(x)) == Fraction(x)
        assert ieee.is_grid(BINARY64, Fraction(x))


@pytest.mark.parametrize("fmt", list(FORMATS.values()), ids=lambda f: f.name)
def test_constants(fmt):
    assert fmt.u == Fraction(1, 2**fmt.p)
    assert fmt.eta == ieee.pow2(fmt.emin - fmt.p)
    assert fmt.eta == fmt.u * fmt.eta_ftz
    assert fmt.max_finite == (2 - 2 * fmt.u) * ieee.pow2(fmt.emax)


def test_constants_literal():
    # the literals of fp_ieee_rounding_binary32 / _bfloat16 / _binary16
    assert BINARY32.u == Fraction(1, 16777216)
    assert BINARY32.eta == Fraction(1, 1427247692705959881058285969449495136382746624)
    assert BINARY32.eta_ftz == Fraction(1, 85070591730234615865843651857942052864)
    assert BFLOAT16.u == Fraction(1, 256)
    assert BFLOAT16.eta == Fraction(1, 21778071482940061661655974875633165533184)
    assert BINARY16.u == Fraction(1, 2048)
    assert BINARY16.eta == Fraction(1, 33554432)
    assert BINARY16.eta_ftz == Fraction(1, 16384)
    assert float(BINARY64.eta) == 2.0**-1075 or BINARY64.eta == ieee.pow2(-1075)


@pytest.mark.parametrize("fmt", [BINARY32, BFLOAT16, BINARY16], ids=lambda f: f.name)
def test_bounds_of_the_theorems(fmt):
    """fp_ieee_rounding (u|x| + eta), _normal, _lattice; fp_flush_to_zero_rounding."""
    rng = random.Random(fmt.p)
    for x in _randoms(rng, fmt, 1000):
        q = Fraction(x)
        e = abs(ieee.rne(fmt, q) - q)
        assert e <= fmt.u * abs(q) + fmt.eta
        if abs(q) >= fmt.eta_ftz:
            assert e <= fmt.u * abs(q)
        assert abs(ieee.ftz(fmt, q) - q) <= fmt.u * abs(q) + fmt.eta_ftz
        assert abs(ieee.daz(fmt, q) - q) <= fmt.eta_ftz
        assert ieee.is_lattice(fmt, ieee.rne(fmt, q))
        assert ieee.is_grid(fmt, ieee.rne(fmt, q))
    # the exact sum of two numbers of the format: no absolute term (gradual underflow)
    for _ in range(1000):
        a = ieee.rne(fmt, Fraction(rng.choice(_randoms(rng, fmt, 1))))
        b = ieee.rne(fmt, Fraction(rng.choice(_randoms(rng, fmt, 1))))
        s = a + b
        assert abs(ieee.rne(fmt, s) - s) <= fmt.u * abs(s)


def test_subnormal_sum_is_exact_and_ftz_flushes_it():
    """fp_flush_to_zero_sum_inexact: 3 2^-127 - 2^-126 = 2^-127."""
    s = 3 * ieee.pow2(-127) - ieee.pow2(-126)
    assert ieee.rne(BINARY32, s) == s == ieee.pow2(-127)
    assert ieee.ftz(BINARY32, s) == 0
    assert abs(ieee.ftz(BINARY32, s) - s) > BINARY32.u * abs(s)


def test_rint_and_ilog2():
    got = [ieee.rint(Fraction(k, 2)) for k in range(-5, 6)]
    assert got == [-2, -2, -2, -1, 0, 0, 0, 1, 2, 2, 2]
    assert ieee.rint(Fraction(7, 3)) == 2 and ieee.rint(Fraction(-7, 3)) == -2
    for x in (Fraction(1), Fraction(3, 4), Fraction(1, 3), Fraction(1024), Fraction(1023, 512)):
        e = ieee.ilog2(x)
        assert ieee.pow2(e) <= x < ieee.pow2(e + 1)
    with pytest.raises(ValueError):
        ieee.ilog2(Fraction(0))


def test_overflow_to_infinity():
    big = BINARY16.max_finite + BINARY16.max_finite * BINARY16.u  # the halfway point: rounds up
    assert ieee.convert(BINARY16, big) == math.inf
    assert ieee.convert(BINARY16, -big) == -math.inf
    with np.errstate(over="ignore"):
        assert float(np.float16(float(big))) == math.inf
