"""layernorm_invariance: LayerNorm ignores a constant shift of a row; with eps = 0 also a
positive scaling.

Two places where the implementations run a LayerNorm over rows, both public:

* the metric learner's first stage, ``A0 = LN_rows(D)`` (a head with no residual units:
  ``metric_learner`` returns exactly ``LN_rows(D) gamma + beta``), in the compute dtype;
* the decoder's embedding, ``LN(Emb(t) sqrt(d_model))``, in the model dtype (bfloat16 and
  float16 included): a token whose embedding row is another's plus a constant (or times
  a positive factor) must get the same normalised row.

Tolerances. Inputs are chosen exactly representable (grid values; shifts and power-of-two
factors keep them exact; ``sqrt(d_model)`` is 2 or 4), so the exact LayerNorm values of
the two rows are equal and only the two evaluations' own rounding separates them:
``fp_layernorm``'s proved bound of each evaluation (:func:`_bound`: ``Pldr.fp_layernorm``
evaluated on the exact rows, in Fractions, by
:func:`pyverify.testing.stage_bounds.layernorm_bound`; the bfloat16/float16 model dtype's
output rounding included; the kernels' statistics held to the two-pass routine's, whose
observable consequences ``test_fp_layernorm`` checks at float32). For a
general positive factor the scaled row is rounded once (``u_c |a x|`` per entry),
propagated by the same bound.

Oracle: the row LayerNorm of the mpmath reference (``MP_DPS`` digits, compared with the
computed rows in mpmath by :func:`pyverify.testing.fp.mp_excess`, the oracle's own error
``MP_REL`` taken off the bound), which imports neither implementation and does no NumPy
arithmetic; the scaled rows are
compared with the exact LayerNorm of the *unscaled* row, so the real ``1/sqrt`` and its
homogeneity ``r(s^2 v) s = r(v)`` (the hypothesis ``RSqrtMap.Homogeneous`` of the Lean
``layernorm_invariance_scale``) are what the tests check, not only agreement of two calls.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

import pyverify.kernels as kern
from pyverify.conformance.subject import not_applicable
from pyverify.reference import Decoder, DecoderParams, PLGAParams
from pyverify.reference import mp as rmp
from pyverify.testing.fp import mp_excess
from pyverify.testing.impls import ALL, FLOAT, impl_ids
from pyverify.testing.stage_bounds import (
    eps_error,
    exact_gap,
    layernorm_bound,
    mp_context,
    or_reject,
    stage_arith,
)
from pyverify.testing.strategies import examples, grid_arrays, seeds

pytestmark = pytest.mark.theorem("layernorm_invariance")

#: [non-vacuity] With ``eps > 0``, scaling a row down must move its LayerNorm by more than
#: this many times the two evaluations' proved bounds (visibly, not by rounding).
VISIBLE = 10


def _ln_impl(impl, X, params: PLGAParams, eps: float) -> np.ndarray:
    """The implementation's row LayerNorm of X (dk x dk): the protocol's optional
    ``layer_norm_rows`` (the kernels: their metric learner with no units)."""
    return impl.layer_norm_rows(X, params.ln0_gamma, params.ln0_beta, eps)


def _bound(impl, X, dX, params, eps, gamma=None, beta=None, eta_eps=None,
           scale=None) -> np.ndarray:  # fmt: skip
    """``[fp_layernorm]`` The bound of one evaluation of the row LayerNorm of the exact rows
    ``X`` (``scale X`` exactly when ``scale`` is given), the implementation's input within
    ``dX`` of them, ``gamma``, ``beta`` as held (default: the learner's ``ln0``); ``eps``
    exact (a float or a Fraction), the one the implementation adds within ``eta_eps`` of
    it (default: ``eps`` as it holds a float, in its compute dtype). No bound where the
    variance is not resolved: the example is rejected."""
    if eta_eps is None:
        eta_eps = eps_error(float(eps), stage_arith(impl).ar.compute)
    g, b = _held(impl, params) if gamma is None else (gamma, beta)
    X = np.asarray(X, np.float64)
    xs = [[Fraction(float(t)) for t in row] for row in X]
    d = np.asarray(dX, np.float64)
    if scale is not None:  # the exact scaled rows, and the float64 product's distance to them
        c = Fraction(float(scale))
        xs = [[c * t for t in row] for row in xs]
        d = d + exact_gap(float(scale) * X, xs)
    return or_reject(layernorm_bound, xs, d, g, b, eps, stage_arith(impl), mp_context(),
                     eta_eps=eta_eps)  # fmt: skip


def _oracle(X, gamma, beta, eps: float) -> list:
    """The exact row LayerNorm (mpmath rows at ``MP_DPS`` digits): independent of both
    implementations."""
    return rmp.layer_norm_rows(X, gamma, beta, eps, mp_context())


def _within(got, want, bound) -> bool:
    """``|got - want| <= bound`` entrywise, ``want`` the mpmath oracle (its own error taken
    off the bound: :func:`pyverify.testing.fp.mp_excess`)."""
    return mp_excess(np.atleast_2d(got), want, np.atleast_2d(bound)) <= 1


def _held(impl, params) -> tuple[np.ndarray, np.ndarray]:
    """gamma and beta as the implementation holds them."""
    return impl.hold(params.ln0_gamma), impl.hold(params.ln0_beta)


#: Float32-exact variance epsilons (their 4^k multiples below stay exact).
DYADIC_EPS = (2.0**-6, 0.25, 1.0, 3.0)


def _spread_ok(X) -> bool:
    """Rows with a non-negligible spread (var >= 1/64): eps = 0 needs var > 0."""
    return bool(np.all(X.var(axis=1) >= 1 / 64))


@st.composite
def ln_cases(draw):
    dk = draw(st.sampled_from([2, 4, 6, 8]))
    X = draw(grid_arrays((dk, dk), bound=8, denom=8))
    c = draw(grid_arrays((dk, 1), bound=8, denom=8))
    params = PLGAParams.random(dk=dk, a_dff=1, num_reslayer=0, num_dense=0, seed=draw(seeds))
    return X, c, params


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@given(ln_cases(), st.sampled_from([1e-6, 0.0]))
def test_row_layernorm_ignores_a_row_shift(impl, case, eps):
    X, c, params = case
    if eps == 0.0:
        assume(_spread_ok(X))
    Y = X + c  # multiples of 1/8 up to 16: exact in every dtype
    a, b = _ln_impl(impl, X, params, eps), _ln_impl(impl, Y, params, eps)
    z = np.zeros_like(X)
    bX, bY = _bound(impl, X, z, params, eps), _bound(impl, Y, z, params, eps)
    assert np.all(np.abs(a - b) <= bX + bY)
    # the oracle: the exact LayerNorm with gamma/beta as the implementation holds them
    want = _oracle(X, *_held(impl, params), eps)
    assert _within(a, want, bX)
    assert _within(b, want, bY)


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@given(ln_cases(), st.integers(-6, 6), st.floats(0.01, 100.0))
def test_row_layernorm_without_eps_ignores_positive_scaling(impl, case, k, a):
    X, _, params = case
    assume(_spread_ok(X))
    # a power of two: the scaled rows are exact
    Y = X * 2.0**k
    z = np.zeros_like(X)
    lx = _ln_impl(impl, X, params, 0.0)
    ly = _ln_impl(impl, Y, params, 0.0)
    bX, bY = _bound(impl, X, z, params, 0.0), _bound(impl, Y, z, params, 0.0)
    assert np.all(np.abs(lx - ly) <= bX + bY)
    # any positive factor: a X rounded once to the compute dtype (input error propagated)
    Ya = impl.hold(a * X)
    dY = impl.u_compute * np.abs(a * X)
    la = _ln_impl(impl, Ya, params, 0.0)
    bA = _bound(impl, X, dY, params, 0.0, scale=a)
    assert np.all(np.abs(lx - la) <= bX + bA)
    # the oracle: every evaluation against the exact LayerNorm of the unscaled row
    want = _oracle(X, *_held(impl, params), 0.0)
    assert _within(lx, want, bX)
    assert _within(ly, want, bY)
    assert _within(la, want, bA)


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@given(ln_cases(), st.sampled_from(DYADIC_EPS), st.integers(-4, 4), st.floats(0.01, 100.0))
def test_row_layernorm_rsqrt_is_homogeneous(impl, case, eps, k, a):
    """The homogeneity ``r(s^2 v) s = r(v)`` of the implementation's ``1/sqrt`` path, at
    ``v = var(x) + eps``: ``LN(s x; s^2 eps) = LN(x; eps)`` (``var(s x) + s^2 eps =
    s^2 (var(x) + eps)``), any ``eps >= 0``, any row. An ``eps`` added outside the root
    (``sqrt(var) + eps``) or a root of the wrong degree fails it. Oracle: the exact
    ``LN(x; eps)``. ``s = 2^k``: exact inputs; a general ``a``: ``a x`` rounded to the compute
    dtype (the input's error), and the ``eps`` the implementation adds, ``a^2 eps`` rounded,
    within its exact distance ``eta_eps`` of the exact ``a^2 eps`` (``[fp_layernorm]``: the
    variance routine's absolute error)."""
    X, _, params = case
    g, b = _held(impl, params)
    want = _oracle(X, g, b, eps)
    z = np.zeros_like(X)
    lx = _ln_impl(impl, X, params, eps)
    tx = _bound(impl, X, z, params, eps)
    assert _within(lx, want, tx)
    s = 2.0**k
    ls = _ln_impl(impl, X * s, params, eps * s * s)
    ts = _bound(impl, X * s, z, params, eps * s * s)
    assert _within(ls, want, ts)
    assert np.all(np.abs(ls - lx) <= tx + ts)
    Ya, ea = impl.hold(a * X), impl.hold(a * a * eps)
    la = _ln_impl(impl, Ya, params, ea)
    dY = impl.u_compute * np.abs(a * X)
    eps_a = Fraction(a) * Fraction(a) * Fraction(eps)
    ta = _bound(impl, X, dY, params, eps_a, eta_eps=abs(Fraction(float(ea)) - eps_a), scale=a)
    assert _within(la, want, ta)


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@given(ln_cases())
def test_positive_eps_breaks_scale_invariance(impl, case):
    """Sharpness: with eps > 0 scaling a row down changes its LayerNorm (visibly)."""
    X, _, params = case
    assume(_spread_ok(X))
    params = dataclasses.replace(params, ln0_gamma=np.ones(X.shape[0]))
    eps = 1.0
    small = X * 2.0**-10
    lx, ls = _ln_impl(impl, X, params, eps), _ln_impl(impl, small, params, eps)
    z = np.zeros_like(X)
    tol = _bound(impl, X, z, params, eps) + _bound(impl, small, z, params, eps)
    assert np.max(np.abs(lx - ls)) > VISIBLE * np.max(tol)


# --------------------------------------------------------------------------- decoder
@st.composite
def embedding_cases(draw):
    d_model = draw(st.sampled_from([4, 16]))  # sqrt(d_model) = 2 or 4: exact products
    ref = DecoderParams.random(vocab=4, d_model=d_model, num_heads=1, num_layers=1, dff=4,
                               a_dff=2, num_reslayer=0, num_dense=1, seed=draw(seeds))  # fmt: skip
    # multiples of 1/8 in [-4, 4] shifted by one in [-4, 4]: sums on the 1/8 grid below
    # 8, times 2 or 4: at most 8 significant bits (exact in bfloat16)
    e = draw(grid_arrays((d_model,), bound=4, denom=8))
    assume(e.var() >= 1 / 16)
    c = draw(st.integers(-32, 32)) / 8
    k = draw(st.integers(-3, 3))
    emb = np.stack([e, e + c, e * 2.0**k, ref.embedding[3]])
    return ref, emb


def _embed(impl, ref: Decoder, tokens) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Embedded rows, and gamma/beta as the model holds them."""
    if impl.name == "reference":
        p = ref.params
        return ref.embed(tokens=np.asarray(tokens)), p.ln_gamma, p.ln_beta
    if impl.name != "kernels":
        not_applicable("the decoder's embedding LayerNorm is not part of the protocol")
    model = kern.model.from_reference(ref, impl.device, impl.tdtype)
    t = torch.as_tensor(np.asarray(tokens, dtype=np.int64))[None]
    x = model.embed(t)[0].to(torch.float64).numpy()
    pp = model.params
    return x, pp.ln0_gamma.to(torch.float64).numpy(), pp.ln0_beta.to(torch.float64).numpy()


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(15)
@given(embedding_cases(), st.sampled_from([1e-6, 0.0]))
def test_decoder_embedding_layernorm_invariances(impl, case, eps):
    """Token 1 = token 0 shifted: same row (any eps); token 2 = token 0 scaled by a power
    of two: same row with eps = 0. In the model dtype (bfloat16/float16 included)."""
    params, emb = case
    ref = Decoder(dataclasses.replace(params, embedding=emb, ln_eps=eps))
    x, g, b = _embed(impl, ref, [0, 1, 2])
    s = np.sqrt(emb.shape[1])
    rows = [emb[i] * s for i in range(3)]
    z = np.zeros((1, emb.shape[1]))

    def tol(r):  # the model dtype's output rounding is in the bound
        return _bound(impl, r[None], z, None, eps, g, b)

    t0 = tol(rows[0])
    assert np.all(np.abs(x[0] - x[1]) <= t0 + tol(rows[1]))
    if eps == 0.0:
        assert np.all(np.abs(x[0] - x[2]) <= t0 + tol(rows[2]))
    # the oracle: the exact LayerNorm (mpmath) with the model's gamma/beta
    assert _within(x[0], _oracle(rows[0][None], g, b, eps), t0)


# ------------------------------------------------- the Lean's rescaling instance
@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@given(st.floats(0.01, 100.0))
def test_layernorm_scale_on_the_lean_instance(impl, s):
    """``layernorm_invariance_scale_rat`` (the whole-field ``layernorm_invariance_scale`` on
    the model ``RSqrtMap.squareClass``): with ``gamma = 1``, ``beta = 0``, ``eps = 0`` the
    row ``x = (0, 4)`` (variance ``4 = 2^2``) has ``LN(s x) = LN(x) = (-1, 1)`` for every
    ``s > 0``. Oracle: the kernel-checked values ``(-1, 1)``, exact. Tolerance: the
    evaluation bound of each row (``s x`` rounded once, its error propagated)."""
    base = dataclasses.replace(
        PLGAParams.random(dk=2, a_dff=1, num_reslayer=0, num_dense=0, seed=0),
        ln0_gamma=np.ones(2),
        ln0_beta=np.zeros(2),
    )
    X = np.array([[0.0, 4.0], [0.0, 4.0]])
    want = np.array([[-1.0, 1.0], [-1.0, 1.0]])
    z = np.zeros_like(X)
    lx = _ln_impl(impl, X, base, 0.0)
    assert np.all(np.abs(lx - want) <= _bound(impl, X, z, base, 0.0))
    Ys = impl.hold(s * X)
    ls = _ln_impl(impl, Ys, base, 0.0)
    assert np.all(
        np.abs(ls - want) <= _bound(impl, X, impl.u_compute * np.abs(s * X), base, 0.0, scale=s)
    )


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
def test_rsqrt_off_the_squares_on_the_lean_values(impl):
    """``RSqrtMap.squareClass_rat_values``: ``r(18) 3 = r(2)`` off the squares. Through the
    row LayerNorm with ``gamma = 1``, ``beta = 0``: the row ``(-1, 1)`` with ``eps = 1``
    gives ``(-r(2), r(2))``, the row ``(-3, 3)`` with ``eps = 9`` gives
    ``(-3 r(18), 3 r(18))``; both must be ``(-1/sqrt 2, 1/sqrt 2)``. Oracle: mpmath's
    ``1/sqrt(2)`` (compared in mpmath); tolerance: the evaluation bound of each row (exact
    inputs)."""
    base = dataclasses.replace(
        PLGAParams.random(dk=2, a_dff=1, num_reslayer=0, num_dense=0, seed=0),
        ln0_gamma=np.ones(2),
        ln0_beta=np.zeros(2),
    )
    r2 = 1 / mp_context().sqrt(2)
    want = [[-r2, r2], [-r2, r2]]
    for c, eps in ((1.0, 1.0), (3.0, 9.0)):
        X = np.array([[-c, c], [-c, c]])
        got = _ln_impl(impl, X, base, eps)
        assert _within(got, want, _bound(impl, X, np.zeros_like(X), base, eps))
