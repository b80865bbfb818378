"""metric_positivity: iSwiGLU >= 0, A_LM > 0 and A_P > 0 entrywise.

No tolerance anywhere: these hold exactly in floating point too. ``silu(z) = z sigmoid(z)``
has the sign of z (sigmoid > 0, or underflows to +0), so ``z silu(z)`` is a product of two
numbers of one sign: >= 0 (or +0), never negative after rounding. Adding ``eps > 0`` (the
metric epsilon as the compute dtype holds it) to a value >= 0 rounds to >= eps (rounding
is monotone and eps is representable). A positive base to any finite power is > 0 unless
the exact value is below the dtype's smallest subnormal: the tests keep ``|P log A_LM|``
inside the normal range, or skip overflow the implementations report as an error.
"""

from __future__ import annotations

import dataclasses

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given, reject
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pyverify.kernels as kern
from pyverify.crosscheck.learner_bound import (
    from_rows,
    learner_bound,
    substages,
)
from pyverify.fp.formulas import inv1m
from pyverify.fp.models import LIB_ACCURACY
from pyverify.precision import UNIT_ROUNDOFF
from pyverify.reference import PLGAParams, PowerLawOverflowError
from pyverify.reference import mp as rmp
from pyverify.reference import mp_stages as mps
from pyverify.reference import numpy_head as nh
from pyverify.testing.bounds import formula_excess
from pyverify.testing.impls import (
    ALL,
    REFERENCE,
    attention_bound,
    impl_ids,
    kernels,
    params_as_used,
)
from pyverify.testing.learner_bounds import composed_learner_bound, traced_learner
from pyverify.testing.stage_bounds import OutsideModel, mp_context, stage_arith
from pyverify.testing.strategies import (
    arrays,
    examples,
    floats,
    head_params,
    multi_head_params,
    seeds,
)

pytestmark = pytest.mark.theorem("metric_positivity")

OVERFLOW = PowerLawOverflowError  # pyverify.errors: one class for both implementations
#: The spec's metric epsilon (``metric_eps``): a parameter of the statement, not a tolerance.
METRIC_EPS = 1e-9


@st.composite
def deductive_cases(draw):
    s = draw(st.integers(1, 8))
    dk = draw(st.sampled_from([2, 4, 6, 8]))
    q = draw(arrays((s, dk), draw(st.sampled_from([1.0, 30.0]))))
    p_range = draw(st.sampled_from([(0.5, 1.5), (-3.0, 3.0)]))
    return q, draw(head_params(dk, p_range=p_range))


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(deductive_cases())
def test_metric_and_potential_tensors_are_positive(impl, case):
    q, params = case
    try:
        res = impl.deductive(impl.round(q), params)
    except OVERFLOW:
        reject()  # the power law left the dtype's range: reported, not returned as inf
    eps = impl.hold(params.metric_eps)
    assert np.all(res.A_LM >= eps)
    assert np.all(res.A_LM > 0)
    # A_P = A_LM ** P > 0: here A_LM >= 1e-9 and |P| <= 3, so A_P >= 1e-27 (normal in fp32)
    assert np.all(res.A_P > 0)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4, 8]), st.data())
def test_positivity_from_any_metric_learner_output(impl, dk, data):
    """Steps 4-6 from an arbitrary A (large negative entries drive W A + b deep into
    iSwiGLU's flat tail, where z^2 sigmoid(z) underflows to 0 and only eps remains)."""
    params = data.draw(head_params(dk), label="params")
    A = data.draw(arrays((dk, dk), data.draw(st.sampled_from([1.0, 1e2, 1e4]))), label="A")
    try:
        A_LM, A_P, _ = impl.energy(A, params)
    except OVERFLOW:
        reject()
    eps = impl.hold(params.metric_eps)
    assert np.all(A_LM >= eps)
    assert np.all(A_P > 0)  # P in [0.5, 1.5], A_LM >= 1e-9 -> A_P >= 1e-13.5


@pytest.mark.parametrize("impl", [REFERENCE], ids=impl_ids)
@given(
    hnp.arrays(
        np.float64, st.integers(1, 64), elements=st.floats(allow_nan=False, allow_infinity=False)
    )
)
def test_iswiglu_is_nonnegative_for_every_float(impl, x):
    """iSwiGLU(x) = x silu(x) >= 0 for every finite float64, signed zeros and subnormals
    included (values beyond ~1e154 overflow to +inf, still >= 0; never NaN). Infinite
    inputs are outside the domain: the head rejects non-finite inputs, and
    iSwiGLU(-inf) = -inf * silu(-inf) = -inf * (-inf * 0) is NaN."""
    y = nh.iswiglu(x)
    assert not np.any(np.isnan(y))
    assert np.all(y >= 0)
    assert np.all(nh.silu(x) * np.sign(x) >= 0)  # silu has the sign of x


@pytest.mark.implementation("reference", dtype="mpmath")
@given(st.integers(2, 4).flatmap(lambda dk: st.tuples(
    arrays((dk, dk), 50.0), arrays((dk, dk), 60.0), st.integers(0, 2**32 - 1))))  # fmt: skip
def test_positivity_beyond_float_range_in_mpmath(case):
    """The mpmath reference has an unbounded exponent range: with |P| up to 60 and large
    negative W A + b, A_LM ** P neither overflows nor underflows there, and A_LM > 0,
    A_P > 0 hold strictly (where float64 would overflow or flush to 0)."""
    A, P, seed = case
    dk = A.shape[0]
    rng = np.random.default_rng(seed)
    W, b = rng.normal(0, 1, (dk, dk)), rng.normal(0, 1, (dk, dk))
    ctx = mpmath.MPContext()
    ctx.dps = 30
    A_LM = rmp.metric_tensor(A, W, b, METRIC_EPS, ctx=ctx)
    A_P = rmp.power_law(A_LM, P, ctx=ctx)
    assert all(x > 0 for row in A_LM for x in row)
    assert all(x >= ctx.mpf(METRIC_EPS) for row in A_LM for x in row)  # A_LM >= eps, exactly
    assert all(x > 0 for row in A_P for x in row)


# --------------------------------------------------------------------------- the formulas
# The positivity above is only worth something if A_LM and A_P are the spec's tensors:
# each implementation's iSwiGLU, A_LM = iSwiGLU(W A + b) + eps and A_P = A_LM ** P are
# compared with the mpmath reference on the implementation's own inputs, within the proved
# stage bounds of pyverify.testing.bounds (fp_mixed_precision, fp_elementwise), and A
# sub-stage by sub-stage within fp_layernorm_certified's and fp_swiglu's bounds.

#: ``[fp_ieee_rounding]`` float64's unit round-off: the reference's arithmetic.
U64 = UNIT_ROUNDOFF["float64"]


def _activation_rel(u_lib: float, k: int) -> float:
    """``[fp_elementwise]`` The routine's relative error ``r`` of the reference's sigmoid
    (``k = 2``), silu (3) and iSwiGLU (4), ``exp(-|x|)`` within ``u_lib``: ``k`` roundings
    and the exponential as factors ``(1 + delta)^(+-1)`` composed exactly
    (``Within.mul``, ``Within.inv`` of ``Pldr.Float.Model``),
    ``1 / ((1 - u_lib)^2 (1 - u)^k) - 1``."""
    return float(inv1m(u_lib, u_lib, *[U64] * k))


@pytest.mark.parametrize("impl", [REFERENCE], ids=impl_ids)
@given(hnp.arrays(np.float64, st.integers(1, 32), elements=floats(40.0)))
def test_activations_are_the_spec_formulas(impl, x):
    """sigmoid = 1/(1 + e^-x), silu = x sigmoid(x), iSwiGLU = x^2 sigmoid(x): ``exp(-|x|)``
    within ``u_lib`` (2 ulp), then ``1 + z`` and the quotient (and one or two products), each
    one rounding: the factors multiply exactly (``Within.mul``, ``Within.inv`` of
    ``Pldr.Float.Model``), ``1 / ((1 - u_lib)^2 (1 - u)^k) - 1`` for k = 2, 3, 4; plus the
    oracle's rounding to float64."""
    ctx = mp_context()
    ul = LIB_ACCURACY["float64"]
    for fn, ref, k in (
        (nh.sigmoid, lambda t: 1 / (1 + ctx.exp(-t)), 2),
        (nh.silu, lambda t: t / (1 + ctx.exp(-t)), 3),
        (nh.iswiglu, lambda t: t * t / (1 + ctx.exp(-t)), 4),
    ):
        got = fn(x)
        want = np.array([float(ref(ctx.mpf(float(t)))) for t in x])
        rel = _activation_rel(ul, k)
        assert np.all(np.abs(got - want) <= (rel + U64) * np.abs(want) * (1 + U64))


@st.composite
def formula_cases(draw):
    B, H = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    s = draw(st.integers(1, 5))
    dk = draw(st.sampled_from([2, 4, 6]))
    return draw(arrays((B, H, s, dk), 2.0)), draw(multi_head_params(dk, H))


@pytest.mark.theorem("cache_equivalence")
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(15)
@given(formula_cases())
def test_deductive_tensors_are_the_spec_formulas(impl, case):
    """A = Phi(LN_rows(Q^T Q)), A_LM = iSwiGLU(W A + b) + eps, A_P = A_LM ** P and
    G = a A_P + b_a (the operator cache_equivalence caches), each against mpmath, for every
    (batch, head) of one batched multi-head call (B, H in {1, 2}: the kernels' row layout).

    A_LM, A_P, G with the exact stage applied to the implementation's own previous tensor,
    within the stage's local bound; the output with exact attention under the
    implementation's G (attention_bound); A, sub-stage by sub-stage, in
    ``test_learner_sub_stages_are_the_spec_formulas``.
    """
    q, heads = case
    q = impl.round(q)
    try:
        results = impl.plga_batched(q, q, q, heads)
    except OVERFLOW:
        reject()
    for b, h in np.ndindex(*q.shape[:2]):
        _check_formulas(impl, q[b, h], params_as_used(impl, heads[h]), results[b][h])


def _check_formulas(impl, q, params, res):
    excess = formula_excess(impl, res, params)
    assert max(excess.values()) <= 1, f"{impl}: steps 4-6 over their bounds {excess}"
    out = rmp.to_numpy(rmp.plga_forward(q, q, q, params, True, G=res.G, dps=30)[0])
    assert np.all(
        np.abs(res.out - out) <= attention_bound(impl, q, res.G, q, q) + U64 * np.abs(out)
    )


def _learner_exact(sub, V, b, h, hp, q, ctx):  # type: ignore[no-untyped-def]
    """The exact sub-stage on the implementation's own inputs (its previous values)."""
    k, j = sub.params
    x = [V[i][b, h] for i in sub.inputs]
    if sub.kind == "D":
        return rmp.density(q, ctx)
    if sub.kind == "ln":
        un = None if k == 0 else hp.reslayers[k - 1]
        g, bt = (hp.ln0_gamma, hp.ln0_beta) if un is None else (un.ln_gamma, un.ln_beta)
        return rmp.layer_norm_rows(x[0], g, bt, hp.ln_eps, ctx)
    if sub.kind == "double":
        return [[ctx.mpf(float(t)) * 2 for t in row] for row in x[0]]
    f = mps.swiglu(x[0], hp.reslayers[k - 1].dense[j - 1], ctx)
    if sub.kind == "f":
        return f
    return [[a + ctx.mpf(float(t)) for a, t in zip(ra, rt, strict=True)]
            for ra, rt in zip(f, x[1], strict=True)]  # fmt: skip


def _check_composed(impl, q, held, A) -> None:
    """An implementation whose learner cannot be traced: its ``A`` against the exact chain
    from the exact queries, within the composed proved bound
    (:func:`pyverify.testing.learner_bounds.composed_learner_bound`; its LayerNorm's
    statistics held to the two-pass routine's, the premise of that composition)."""
    sa = stage_arith(impl)
    for b, h in np.ndindex(*q.shape[:2]):
        try:
            exact, bound = composed_learner_bound(q[b, h], held[h], sa)
        except OutsideModel:
            reject()
        want = rmp.to_numpy(exact)
        assert np.all(np.abs(A[b, h] - want) <= bound + U64 * np.abs(want)), (b, h)


@pytest.mark.theorem("fp_layernorm")
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(15)
@given(formula_cases())
def test_learner_sub_stages_are_the_spec_formulas(impl, case):
    """A = Phi(LN_rows(Q^T Q)) sub-stage by sub-stage (``D``, ``A0``, each SwiGLU block,
    residual sum and LayerNorm), each against mpmath applied to the implementation's own
    previous sub-stage, within its proved local bound (``fp_mixed_precision``;
    ``fp_layernorm_certified``, the LayerNorm's mean and rstd certified per row on the
    values it was given; ``fp_swiglu``; the residual sum), for every (batch, head) of one
    batched call, with the parameters as the implementation holds them. The
    implementation's learner is traced op for op (the kernels:
    ``pyverify.kernels.learner_trace``; the reference: its NumPy operations), the trace
    checked to give its ``A`` bit for bit. Tolerance: the bound, plus the oracle's
    rounding to float64 (``u64 |exact|``). An implementation under ``pyverify check``
    (not traceable): its ``A`` within the composed bound (:func:`_check_composed`)."""
    q, heads = case
    q = impl.round(q)
    try:
        results = impl.plga_batched(q, q, q, heads)
    except OVERFLOW:
        reject()
    A = np.stack([np.stack([r.A for r in row]) for row in results])
    traced = traced_learner(impl, q, heads, A)
    if traced is None:  # a black box: only its A is seen
        _check_composed(impl, q, [params_as_used(impl, hp) for hp in heads], A)
        return
    tr, held, ar = traced
    subs, vals = substages(tr)
    B = q.shape[0]
    V = [from_rows(v, B) for v in vals]
    ctx = mp_context()
    for k, sub in enumerate(subs):
        bound = learner_bound(tr, held, ar, q, sub, [0 * vals[i] for i in sub.inputs])
        for b, h in np.ndindex(*q.shape[:2]):
            want = rmp.to_numpy(_learner_exact(sub, V, b, h, held[h], q[b, h], ctx))
            err = np.abs(V[k][b, h] - want)
            assert np.all(err <= bound[b, h] + U64 * np.abs(want)), (sub.name, b, h)


# --------------------------------------------------------------------------- out of range
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4]), st.floats(-60.0, -25.0), st.floats(-80.0, -45.0), seeds)
def test_power_law_out_of_range_is_reported_not_returned(impl, dk, b, p, seed):
    """A_LM ** P > 0 in exact arithmetic; when the dtype cannot hold it, the implementation
    reports PowerLawOverflowError (never inf/NaN). W = 0 and b <= -25 give
    A_LM = b^2 sigmoid(b) + eps <= 625 e^-25 + 1e-9 < 1e-8 (ln < -18.4), so P <= -45
    sends A_LM ** P beyond e^828 > 1e359, past float64's (and float32's) range.
    (b = -20 is not enough: A_LM ~ 8e-7 and (8e-7)^-45 ~ 1e274 is representable.)"""
    params = dataclasses.replace(
        PLGAParams.random(dk, 3, 1, 1, seed=seed),
        W=np.zeros((dk, dk)), b=np.full((dk, dk), b), P=np.full((dk, dk), p),
    )  # fmt: skip
    q = impl.round(np.eye(dk))
    with pytest.raises(OVERFLOW):  # the power-law subclass, not only its base class
        impl.deductive(q, params)
    with pytest.raises(OVERFLOW):  # the whole head (its default: check_finite=True)
        impl.plga(q, q, q, params)
    if impl.name == "kernels":  # the public stage function checks by default too
        A = impl.t(np.zeros((dk, dk)), impl.cdtype)[None, None]
        with pytest.raises(kern.PowerLawOverflowError):
            kern.energy_curvature(A, impl.heads(params))


@pytest.mark.parametrize("impl", [REFERENCE], ids=impl_ids)
@given(st.sampled_from([2, 4]), st.floats(-30.0, -25.0), seeds)
def test_energy_and_score_overflow_is_reported(impl, dk, p, seed):
    """Past the power law: G = a A_P + b_a and the scores Q G K^T may overflow too; the
    reference reports both as PowerLawOverflowError (its contract: nothing returns inf)."""
    base = PLGAParams.random(dk, 3, 1, 1, seed=seed)
    # A_P ~ (1e-9)^p ~ 1e225..1e270 is finite; a = 1e100 makes G overflow
    params = dataclasses.replace(
        base, W=np.zeros((dk, dk)), b=np.full((dk, dk), -40.0), P=np.full((dk, dk), p),
        a=np.full((dk, dk), 1e100),
    )  # fmt: skip
    with pytest.raises(PowerLawOverflowError, match="energy_curvature"):
        impl.deductive(np.eye(dk), params)
    q = np.full((2, dk), 1e6)
    with pytest.raises(PowerLawOverflowError, match="scores"):
        impl.plga(q, q, q, base, G=np.full((dk, dk), 1e300))


@pytest.mark.parametrize("impl", kernels(), ids=impl_ids)
@examples(15)
@given(formula_cases())
def test_kernel_public_stages_compose_to_compute_g(impl, case):
    """The kernels' public stage functions are the pieces of compute_g: the metric learner
    of the density operator is A, and energy_curvature(A) is (A_LM, A_P, G): bitwise."""
    q, heads = case
    q4, hp = impl.t(impl.round(q)), impl.heads(heads)
    try:
        ded = kern.compute_g(q4, hp)
    except OVERFLOW:
        reject()
    A = kern.metric_learner(kern.density_operator(q4), hp)
    assert torch.equal(A, ded.A)
    for got, want in zip(kern.energy_curvature(A, hp), (ded.A_LM, ded.A_P, ded.G), strict=True):
        assert torch.equal(got, want)


@pytest.mark.parametrize("impl", kernels("float16"), ids=impl_ids)
@given(st.integers(1, 4), st.sampled_from([2, 4]), st.floats(300.0, 1e4))
def test_float16_query_times_g_overflow_is_reported(impl, s, dk, g):
    """float16 holds at most 65504: Q G beyond it is reported (both precisions), not inf."""
    q = np.full((s, dk), 255.0)  # |Q G| = 255 g >= 76500 > 65504
    G = g * np.eye(dk)
    with pytest.raises(kern.PowerLawOverflowError):
        impl.plga(q, q, q, None, G=G)
    with pytest.raises(kern.PowerLawOverflowError):
        impl.collapsed(q, q, q, G)
