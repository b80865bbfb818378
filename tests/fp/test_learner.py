"""The learner's bounds on their operands (pyverify.fp.learner), against mpmath.

Oracles: the exact mean, variance and reciprocal square root of a row in mpmath at 50
digits (independent of the Fractions the certifier uses), the exact LayerNorm and SwiGLU
block in mpmath (``pyverify.reference.mp_stages``, the spec written out). Tolerances: the
proved bounds themselves, nothing added.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.fp.formulas import UNDERFLOW
from pyverify.fp.learner import (
    certify_layernorm,
    check_scale_shift,
    layernorm_bound,
    statistics_ratio,
    swiglu_bound,
)
from pyverify.reference import mp_stages as mps
from pyverify.reference.params import PLGAParams

U32, ETA32, EPS = 2.0**-24, UNDERFLOW["float32"], 1e-6
CTX = mpmath.MPContext()
CTX.dps = 50


def _rows(n: int, seed: int, N: int = 48) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, n)) * rng.uniform(0.01, 30, size=(N, 1)) + rng.normal(size=(N, 1))
    return x.astype(np.float32)


def _torch_ln(x: np.ndarray):  # type: ignore[no-untyped-def]
    y, mu, rs = torch.native_layer_norm(torch.from_numpy(x), (x.shape[1],), None, None, EPS)
    return y.numpy(), mu.numpy()[:, 0], rs.numpy()[:, 0]


def _certify(x, mu, rs):  # type: ignore[no-untyped-def]
    c = (x - mu[:, None]).astype(np.float32)  # fl32(x - mu): the witness
    return c, certify_layernorm(x, mu, [Fraction(float(r)) for r in rs], c, EPS)


@pytest.mark.parametrize("n", [2, 8, 64])
def test_certificate_is_the_routines_actual_error(n):
    x = _rows(n, n)
    _, mu, rs = _torch_ln(x)
    c, cert = _certify(x, mu, rs)
    for i in range(x.shape[0]):
        xm = [CTX.mpf(float(t)) for t in x[i]]
        mean = CTX.fsum(xm) / n
        rho = 1 / CTX.sqrt(CTX.fsum(CTX.mpf(float(t)) ** 2 for t in c[i]) / n + CTX.mpf(EPS))
        rel = abs(CTX.mpf(float(rs[i])) - rho) / rho
        # an upper bound of the actual error, and within a hair of it (the certifier's
        # float64 candidate, widened by 2^-20 relative and 2^-60)
        assert rel <= cert.u_rs[i] <= rel * (1 + 2.0**-19) + 2.0**-59
        dm = abs(CTX.mpf(float(mu[i])) - mean)
        assert dm <= cert.dist_mean[i] <= dm * (1 + 2.0**-52) + 2.0**-1074


def test_certificate_sees_a_routine_that_loses_digits():
    x = _rows(16, 3)
    _, mu, rs = _torch_ln(x)
    _, good = _certify(x, mu, rs)
    _, bad = _certify(x, mu, rs * np.float32(1 + 2.0**-10))
    assert good.u_rs.max() < 2.0**-20 and bad.u_rs.min() >= 2.0**-10 * 0.99
    kw = {"u": U32, "eta": ETA32, "u_rs": (1 + U32) / (1 - U32) - 1}
    assert max(statistics_ratio(x, good, EPS, **kw)) <= 1  # torch: within the two-pass case
    assert statistics_ratio(x, bad, EPS, **kw)[1] > 1  # rstd off by 2^-10: outside
    mu_bad = mu + np.float32(1e-3) * np.abs(x).mean(axis=1).astype(np.float32)
    _, bad_mean = _certify(x, mu_bad, rs)
    assert statistics_ratio(x, bad_mean, EPS, **kw)[0] > 1


def test_scale_shift_accepts_torch_and_refuses_a_bfloat16_output():
    x = _rows(32, 5)
    rng = np.random.default_rng(5)
    g = rng.normal(size=32).astype(np.float32)
    b = rng.normal(size=32).astype(np.float32)
    xt = torch.from_numpy(x)
    y_aff = F.layer_norm(xt, (32,), torch.from_numpy(g), torch.from_numpy(b), EPS).numpy()
    t, mu, rs = _torch_ln(x)
    y_add = torch.addcmul(torch.from_numpy(b), torch.from_numpy(t), torch.from_numpy(g)).numpy()
    c = (x - mu[:, None]).astype(np.float32)
    tw = (c * rs[:, None]).astype(np.float32)
    for y in (y_aff, y_add):  # a fused multiply-add, or two roundings: both modelled
        check_scale_shift(y, tw, g, b, U32, np.float32)
    y_bf = torch.from_numpy(y_aff).to(torch.bfloat16).float().numpy()
    with pytest.raises(ValueError, match="not fl"):
        check_scale_shift(y_bf, tw, g, b, U32, np.float32)


@pytest.mark.parametrize("n", [4, 16, 64])
def test_layernorm_bound_holds_on_a_perturbed_input(n):
    """ATen's float32 LayerNorm of ``x^`` vs the exact LayerNorm of ``x = x^ + delta``."""
    x_hat = _rows(n, 10 + n, N=32)
    rng = np.random.default_rng(n)
    d = 1e-6 * (np.abs(x_hat.astype(np.float64)) + 1)
    x = x_hat + rng.uniform(-1, 1, size=d.shape) * d  # the exact input (float64 values)
    gamma, beta = rng.normal(size=n), rng.normal(size=n)  # exact, held in float32
    g32, b32 = gamma.astype(np.float32), beta.astype(np.float32)
    y, mu, rs = torch.native_layer_norm(torch.from_numpy(x_hat), (n,), torch.from_numpy(g32),
                                        torch.from_numpy(b32), EPS)  # fmt: skip
    y, mu, rs = y.numpy(), mu.numpy()[:, 0], rs.numpy()[:, 0]
    _, cert = _certify(x_hat, mu, rs)
    bound = layernorm_bound(x_hat, d, g32, b32, EPS, cert, u=U32, eta=ETA32, u_hold=U32)
    exact = mps.layer_norm_rows(x, gamma, beta, EPS, CTX)
    worst = max(
        float(abs(CTX.mpf(float(y[i, j])) - exact[i][j]) / bound[i, j])
        for i in range(x.shape[0])
        for j in range(n)
    )
    assert worst <= 1.0
    assert worst > 1e-4  # not vacuous: the bound is within 10^4 of the worst entry's error


def test_swiglu_bound_holds_for_a_block_and_its_fused_residual():
    """One float32 block (``baddbmm``-free: ``addmm``), plain and with ``X + b3`` fused."""
    n, f, N = 8, 12, 40
    blk = PLGAParams.random(n, f, 1, 1, seed=3).reslayers[0].dense[0]
    rng = np.random.default_rng(2)
    Y_hat = rng.normal(size=(N, n)).astype(np.float32)
    d = 1e-6 * np.ones((N, n))
    Y = Y_hat + rng.uniform(-1, 1, size=d.shape) * d
    W1, W2, W3, b1, b2, b3 = (torch.from_numpy(np.asarray(getattr(blk, a), np.float32))
                              for a in ("W1", "W2", "W3", "b1", "b2", "b3"))  # fmt: skip
    Yt = torch.from_numpy(Y_hat)
    h1 = torch.addmm(b1, Yt, W1)
    h2 = torch.addmm(b2, Yt, W2)
    s1 = F.silu(h1)
    g = s1 * h2
    out = torch.addmm(b3, g, W3)
    acc = Yt + b3
    fused = acc.clone().addmm_(g, W3)
    args = (blk, h1.numpy(), h2.numpy(), s1.numpy(), g.numpy())
    kw = {"u": U32, "eta": ETA32, "u_exp": 2.0**-22, "u_hold": U32}
    plain = swiglu_bound(Y_hat, d, *args, **kw)
    res = swiglu_bound(Y_hat, d, *args, acc=acc.numpy(), **kw) + d
    exact = mps.swiglu(Y, blk, CTX)
    worst = [0.0, 0.0]
    for i in range(N):
        for j in range(n):
            e = exact[i][j]
            r = (
                abs(CTX.mpf(float(out[i, j])) - e) / plain[i, j],
                abs(CTX.mpf(float(fused[i, j])) - (e + CTX.mpf(float(Y[i, j])))) / res[i, j],
            )
            worst = [max(w, float(x)) for w, x in zip(worst, r, strict=True)]  # fmt: skip
    assert max(worst) <= 1.0
    assert min(worst) > 1e-2  # not vacuous: each bound within 100 of its worst entry
