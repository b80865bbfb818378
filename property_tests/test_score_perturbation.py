"""score_perturbation: the quasi-invariance budget.

Statement: ``|q (G - G*) k^T| <= (sum|q_i|)(sum|k_j|) max|G - G*|``; if every score of a
row moves by at most eta and the row's top-1 margin exceeds ``2 eta``, its argmax is
unchanged; for a monotone exp, each softmax weight changes by a factor within
``[exp(-2 eta), exp(2 eta)]``. The implementations' scores carry the ``1/sqrt(dk)``:
``eta = ||q||_1 ||k||_1 max|Delta| / sqrt(dk)``.

Floating point. The operators are taken as the implementation holds them (float32 for the
float32/bfloat16/float16 kernels), ``Delta`` is their exact difference, queries and keys
are held in the dtype. A computed score is within ``r(G)`` of its exact value
(:func:`score_rounding`: ``[fp_head_scores]``, :func:`pyverify.fp.models.scores_bound`;
the kernels round ``Q G`` once to the input dtype below float32). So computed changes obey
the bound plus ``r(G) + r(G*)``, a computed margin above ``2 (eta + r(G) + r(G*))``
certifies the computed argmax, and softmax weights carry the relative error of
:func:`pyverify.testing.bounds.softmax_rel_bound` on each side (proved: ``fp_softmax``,
``fp_head_output``).

Tightness: for ``q = a e_i``, ``k = b e_j`` at the entry (i, j) of largest ``|Delta|`` the
bound is attained: the computed change must be at least ``bound - r(G) - r(G*)`` (a
mutated scale or operator fails here).

The trained operator: :func:`pyverify.diagnose.perturbation.budget_summary` on all 70 heads of
``G_LM`` with perturbations of relative size 1e-6 .. 1e-3; the numbers are printed
(``pytest -s``) and the statement's consequences asserted on them.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyverify.diagnose.perturbation import budget_summary
from pyverify.fp.exps import DECLARED
from pyverify.fp.formulas import (
    EVAL_SLACK,
    SMALLEST_NORMAL,
    fp_summation_perturbed,
    inv1m,
    prod1m,
)
from pyverify.fp.models import scores_bound
from pyverify.reference import apply_rope
from pyverify.testing.bounds import softmax_rel_bound
from pyverify.testing.fp import arith, scores_path
from pyverify.testing.impls import ALL, FLOAT, REFERENCE, gamma, impl_ids
from pyverify.testing.softmax_bounds import (
    U64,
    WEIGHT_SPAN,
    base2_weights,
    exact_weight_range,
    spec_coefficients,
)
from pyverify.testing.strategies import (
    arrays,
    even_dk,
    examples,
    grid_arrays,
    trained_g_lm,
    trained_head,
)

pytestmark = pytest.mark.theorem("score_perturbation")

#: ``[score_perturbation]`` the statement's argmax margin: a row whose largest score leads
#: the next by more than ``2 eta`` keeps its argmax.
MARGIN = 2
#: ``[score_perturbation]`` the exact model's monotone exp ``x -> 2^x`` (``pow2``): weights
#: within ``[2^(-2 eta), 2^(2 eta)]`` (with :data:`WEIGHT_SPAN`).
BASE = 2
#: ``[non-vacuity]`` The coordinate cases resolve the perturbation: the budget exceeds
#: this many times the two scores' rounding bounds, so the attained change's lower bound
#: (budget minus rounding) exceeds the rounding itself.
RESOLVED = 2
#: ``[non-vacuity]`` On the trained G_LM at the smallest perturbation (the paper's
#: near-collapse level) the budget certifies at least this fraction of the rows' argmax.
CERTIFIED_NEAR_COLLAPSE = 0.95
#: ``[non-vacuity]`` The budget is within three orders of magnitude of the typical change:
#: the median of ``|q Delta k^T|`` over the bound is at least this, for every ``rho``.
TIGHTNESS_MEDIAN = 1e-3


def score_rounding(impl, q, G, k) -> np.ndarray:
    """``[fp_head_scores]`` Entrywise bound ``r(G)`` of a computed score's error.

    :func:`pyverify.fp.models.scores_bound` of the implementation's ``scores`` (path
    ``reference``, or the kernels' ``matmul``: ``Q G`` in the compute dtype, rounded to
    bfloat16/float16 below float32, ``@ K^T``, the scale) against the exact
    ``Q G K^T / sqrt(dk)``, ``G`` as held (no error of its own).
    """
    ar = arith(impl)
    return scores_bound(ar, q, k, G, None, scores_path(impl))


def oracle_ratio_rel(E_star, delta, allowed) -> np.ndarray:
    """``[fp_softmax]``, ``[fp_elementwise]``, ``[fp_summation]`` The spec ratio's error.

    ``want_i = fl(fl(exp d_i) / fl(sum_j fl(p^*_j fl(exp d_j))))`` in float64 against
    ``R_i = e^(d_i) / sum_j p*_j e^(d_j)``, relative, per row (S_q, 1); ``d`` exact, ``p^*``
    NumPy's softmax of ``E*`` (:func:`~pyverify.testing.softmax_bounds.spec_coefficients`:
    relative ``rel + ab / p_lo``). NumPy's ``exp`` within ``DECLARED["numpy"]``
    (``fp_elementwise``, exact input: ``u_exp + eta_exp e^(max|d|)``); every product
    normal (``p_lo e^(-max|d|)`` above the smallest normal, checked; the ratios are near
    1), so each product and the quotient round at ``u64``: leaves within
    ``e = (1 + r_p)(1 + r_e)(1 + u) - 1`` of theirs; ``fp_summation_perturbed`` of the
    ``S_k`` leaves relative to their sum (mass 1); the quotient:
    ``(1 + u)(1 + r_e)/(1 - r_D) - 1``.
    """
    Em = np.where(allowed, E_star, -np.inf)
    w = np.exp(Em - Em.max(axis=1, keepdims=True))
    rel, ab = spec_coefficients(E_star, allowed)
    lo, _ = exact_weight_range(w / w.sum(axis=1, keepdims=True), rel, ab)
    p_lo = np.where(allowed, lo, np.inf).min(axis=1, keepdims=True)
    d_max = float(np.abs(delta).max())
    if np.any(p_lo * np.exp(-d_max) <= SMALLEST_NORMAL["float64"]):
        raise ValueError("a product below the normal range: it rounds absolutely")
    r_p = rel + ab / p_lo
    u_exp, eta_exp = DECLARED["numpy"]
    r_e = u_exp + eta_exp * float(np.exp(d_max))
    r_d = fp_summation_perturbed(1.0, 0.0, E_star.shape[1], U64, prod1m(r_p, r_e, U64))
    return EVAL_SLACK * prod1m(U64, r_e, inv1m(r_d))


def budget(q, k, Delta) -> np.ndarray:
    """The theorem's bound on every score change, ``||q||_1 ||k||_1 max|Delta| / sqrt(dk)``."""
    dk = q.shape[1]
    q1, k1 = np.abs(q).sum(axis=1), np.abs(k).sum(axis=1)
    return np.outer(q1, k1) * float(np.abs(Delta).max()) / np.sqrt(dk)


@st.composite
def perturbation_cases(draw, impl):
    dk = draw(even_dk)
    s_q, s_k = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    q = impl.round(draw(arrays((s_q, dk), 2.0)))
    k = impl.round(draw(arrays((s_k, dk), 2.0)))
    G_star = impl.hold(np.eye(dk) + draw(arrays((dk, dk), 1.0)) / dk)
    # relative sizes down to 1e-6 where the dtype resolves them: at least 100x the
    # score's rounding bound gamma_{2dk+1}(u) (so that a coordinate pair's score change
    # beats the slack 4 gamma |a b|; float32 at dk = 16: ~2e-4); low precision 0.1 .. 1
    if impl.dtype in ("bfloat16", "float16"):
        lo = -1.0
    else:
        lo = max(-6.0, float(np.log10(100 * gamma(2 * dk + 1, impl.u_compute))))
    rho = 10.0 ** draw(st.floats(lo, 0.0))
    U = draw(arrays((dk, dk), 1.0).filter(lambda a: np.abs(a).max() > 0))
    G = impl.hold(G_star + rho * U / np.abs(U).max())
    return q, k, G_star, G


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(12)
@given(st.data())
def test_score_change_within_budget(impl, data):
    q, k, G_star, G = data.draw(perturbation_cases(impl))
    Delta = G - G_star  # exact: both held in float32 or float64
    dE = np.abs(impl.scores(q, k, G) - impl.scores(q, k, G_star))
    slack = score_rounding(impl, q, G, k) + score_rounding(impl, q, G_star, k)
    assert np.all(dE <= budget(q, k, Delta) + slack)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(12)
@given(st.data(), st.integers(-2, 2), st.integers(-2, 2))
def test_budget_is_attained_by_coordinate_vectors(impl, data, ea, eb):
    """``q = a e_i``, ``k = b e_j``: ``q Delta k^T = a b Delta_ij`` = the bound."""
    _, _, G_star, G = data.draw(perturbation_cases(impl))
    Delta = G - G_star
    dk = G.shape[0]
    i, j = np.unravel_index(np.argmax(np.abs(Delta)), Delta.shape)
    q = np.zeros((1, dk))
    k = np.zeros((1, dk))
    q[0, i], k[0, j] = 2.0**ea, -(2.0**eb)  # powers of two: exact in every dtype
    dE = abs(float(impl.scores(q, k, G)[0, 0] - impl.scores(q, k, G_star)[0, 0]))
    b = float(budget(q, k, Delta)[0, 0])
    slack = float(score_rounding(impl, q, G, k)[0, 0] + score_rounding(impl, q, G_star, k)[0, 0])
    assert b - slack <= dE <= b + slack
    assert b > RESOLVED * slack  # the cases resolve the perturbation (non-vacuous)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(12)
@given(st.data())
def test_margin_above_twice_the_budget_keeps_the_argmax(impl, data):
    q, k, G_star, G = data.draw(perturbation_cases(impl))
    Delta = G - G_star
    E_star, E = impl.scores(q, k, G_star), impl.scores(q, k, G)
    r = score_rounding(impl, q, G, k) + score_rounding(impl, q, G_star, k)
    eta = (budget(q, k, Delta) + r).max(axis=1)
    for row in range(q.shape[0]):
        if k.shape[0] < 2:
            break
        top = np.sort(E_star[row])
        if top[-1] - top[-2] > MARGIN * eta[row]:
            assert np.argmax(E[row]) == np.argmax(E_star[row])


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(12)
@given(st.data())
def test_softmax_weights_move_by_a_bounded_factor(impl, data):
    """Scores on the 1/8 grid (exact in every dtype), moved by at most eta = m/8.

    The computed ratio ``fl(p^ / p^*)`` is within ``(1 + u64)(1 + e2)/(1 - e1) - 1`` of the
    exact ``p / p*`` (each weight within its ``softmax_rel_bound``), which the statement
    holds within ``exp(+-2 eta)``; against the spec written out, the ratio and the oracle
    (:func:`oracle_ratio_rel`) each within their relative bound of the exact ratio."""
    s_q = data.draw(st.integers(1, 6))
    s_k = data.draw(st.integers(s_q, 6))
    E_star = data.draw(grid_arrays((s_q, s_k), bound=3, denom=8))
    m = data.draw(st.integers(0, 4))
    steps = st.integers(-m, m).map(lambda i: i / 8)
    delta = data.draw(hnp.arrays(np.float64, (s_q, s_k), elements=steps))  # |delta| <= m/8
    eta = m / 8
    E = E_star + delta
    causal = data.draw(st.booleans())
    p_star, p = impl.softmax(E_star, causal=causal), impl.softmax(E, causal=causal)
    e1, e2 = softmax_rel_bound(impl, E_star, causal), softmax_rel_bound(impl, E, causal)
    allowed = p_star > 0
    ratio = p[allowed] / p_star[allowed]
    k_ratio = prod1m(U64, e2, inv1m(e1))  # fl(p^ / p^*) against p / p*, relative
    up = np.exp(WEIGHT_SPAN * eta) * (1 + k_ratio) * EVAL_SLACK
    down = np.exp(-WEIGHT_SPAN * eta) * (1 - U64) * (1 - e2) / (1 + e1) / EVAL_SLACK
    assert np.all(ratio <= up)
    assert np.all(ratio >= down)
    # the spec written out: p_i / p*_i = e^{delta_i} / sum_j p*_j e^{delta_j} (exact p*)
    Em = np.where(allowed, E_star, -np.inf)
    w = np.exp(Em - Em.max(axis=1, keepdims=True))
    pe = w / w.sum(axis=1, keepdims=True)
    want = np.exp(delta) / (pe * np.exp(delta)).sum(axis=1, keepdims=True)
    r_w = np.broadcast_to(oracle_ratio_rel(E_star, delta, allowed), want.shape)[allowed]
    assert np.all(np.abs(ratio - want[allowed]) <= (k_ratio + r_w) / (1 - r_w) * want[allowed])


# --------------------------------------------------------------------------- trained G_LM
@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@examples(8)
@given(trained_head, st.sampled_from([1e-6, 1e-5, 1e-4, 1e-3]), st.integers(0, 2**32 - 1))
def test_trained_operator_perturbation_budget(impl, head, rho, seed):
    """A trained head (dk = 64) as G*, perturbed by rho max|G*|, RoPE-rotated N(0, 1)
    queries and keys: the computed changes respect the budget (plus rounding), and
    certified rows keep their argmax. In float32 a change of relative size 1e-6 is of the
    order of the scores' own rounding (u_32 = 6e-8 times a conditioning of ~64): the
    inequality still holds, through the rounding terms."""
    rng = np.random.default_rng(seed)
    G_star = impl.hold(trained_g_lm()[head])
    U = rng.uniform(-1, 1, G_star.shape)
    G = impl.hold(G_star + U * (rho * np.abs(G_star).max() / np.abs(U).max()))
    Delta = G - G_star
    q = impl.round(apply_rope(rng.standard_normal((16, 64))))
    k = impl.round(apply_rope(rng.standard_normal((16, 64))))
    E_star, E = impl.scores(q, k, G_star), impl.scores(q, k, G)
    r = score_rounding(impl, q, G, k) + score_rounding(impl, q, G_star, k)
    assert np.all(np.abs(E - E_star) <= budget(q, k, Delta) + r)
    eta = (budget(q, k, Delta) + r).max(axis=1)
    for row in range(16):
        top = np.sort(E_star[row])
        if top[-1] - top[-2] > MARGIN * eta[row]:
            assert np.argmax(E[row]) == np.argmax(E_star[row])


@pytest.mark.parametrize("impl", [REFERENCE], ids=impl_ids)
def test_trained_g_lm_budget_holds_and_is_not_vacuous(impl):
    """All 70 heads of the trained G_LM, rho = 1e-6 .. 1e-3, 64 causal positions (float64):
    the bound is never violated, no certified argmax moves, softmax factors stay within
    the budget; and the budget says something: at the paper's near-collapse level
    (1e-6, the smallest rho) it certifies nearly every row's argmax, and it is within three
    orders of magnitude of the typical change (random Delta; coordinate-aligned Delta
    attains it)."""
    table = budget_summary(trained_g_lm())
    print("\nscore_perturbation on the trained G_LM (70 heads, 64 positions, float64):")
    for row in table:
        print("  " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in row.items()))  # fmt: skip
    for row in table:
        assert row["heads"] == 70
        assert row["violations"] == 0
        assert row["argmax_changed_certified"] == 0
        assert row["log_factor_ratio_max"] <= 1.0
        assert 0 < row["tightness_max"] <= 1.0
        assert row["tightness_median"] >= TIGHTNESS_MEDIAN
    by_rho = {row["rho"]: row for row in table}
    smallest, largest = by_rho[min(by_rho)], by_rho[max(by_rho)]
    assert smallest["certified_mean"] >= CERTIFIED_NEAR_COLLAPSE
    # certification shrinks with the perturbation (the budget responds to rho)
    assert largest["certified_mean"] < smallest["certified_mean"]


# --------------------------------------------------------------------------- exact
@pytest.mark.implementation("reference", dtype="exact")
@examples(40)
@given(st.integers(1, 4), st.data())
def test_score_perturbation_exactly(dk, data):
    """Rationals: the bound holds, is attained by sign-matched rank-one Delta; margin
    > 2 eta keeps the argmax while margin = 2 eta can tie; with the monotone exp
    ``x -> 2^x`` on integers, weight ratios lie in ``[2^(-2 eta), 2^(2 eta)]``."""
    frac = st.builds(Fraction, st.integers(-9, 9), st.integers(1, 5))
    q = data.draw(st.lists(frac, min_size=dk, max_size=dk))
    k = data.draw(st.lists(frac, min_size=dk, max_size=dk))
    D = [data.draw(st.lists(frac, min_size=dk, max_size=dk)) for _ in range(dk)]
    dmax = max(abs(x) for r in D for x in r)
    val = sum(q[i] * D[i][j] * k[j] for i in range(dk) for j in range(dk))
    bound = sum(map(abs, q)) * sum(map(abs, k)) * dmax
    assert abs(val) <= bound
    sgn = [[(1 if q[i] >= 0 else -1) * (1 if k[j] >= 0 else -1) * dmax for j in range(dk)]
           for i in range(dk)]  # fmt: skip
    assert sum(q[i] * sgn[i][j] * k[j] for i in range(dk) for j in range(dk)) == bound
    # argmax under a perturbation of size <= eta
    n = data.draw(st.integers(2, 5))
    e = data.draw(st.lists(st.integers(-10, 10), min_size=n, max_size=n, unique=True))
    eta = data.draw(st.integers(0, 3))
    d = data.draw(st.lists(st.integers(-eta, eta), min_size=n, max_size=n))
    e2 = [a + b for a, b in zip(e, d, strict=True)]
    top = sorted(e)
    if top[-1] - top[-2] > MARGIN * eta:
        assert e2.index(max(e2)) == e.index(max(e))
    # ... and a margin <= 2 eta is not enough: moving the top down and the runner-up up
    # by half the margin each (<= eta) ties them, so the argmax is no longer determined
    margin = top[-1] - top[-2]
    if margin <= MARGIN * eta and margin % 2 == 0:
        i1, i2 = e.index(top[-1]), e.index(top[-2])
        e3 = [a - margin // 2 if i == i1 else a + margin // 2 if i == i2 else a
              for i, a in enumerate(e)]  # fmt: skip
        assert max(abs(x - y) for x, y in zip(e3, e, strict=True)) <= eta
        assert e3.count(max(e3)) == 2
    # softmax factor with exp = 2^x
    two = Fraction(BASE)
    z = sum(two**x for x in e)
    z2 = sum(two**x for x in e2)
    for a, b in zip(e, e2, strict=True):
        ratio = (two**b / z2) / (two**a / z)
        assert two ** (-WEIGHT_SPAN * eta) <= ratio <= two ** (WEIGHT_SPAN * eta)


# ------------------------------------------------- two carriers: base-2 softmax
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_base2_factor_bound_on_the_genuine_model(impl, data):
    """``score_perturbation_softmax_hom`` on ``pow2`` (``n -> 2^n``, ``Int -> Rat``): integer
    scores moved by at most ``eta`` move each base-2 weight by a factor within
    ``[2^{-2 eta}, 2^{2 eta}]``. Measured on the implementation's softmax of ``x ln 2``;
    oracle: the exact base-2 weights (Fractions), compared exactly. Tolerance: each row's
    relative bound against the exact base-2 weights
    (:func:`pyverify.testing.softmax_bounds.base2_weights`: the entry bound of the held
    scores and the move of ``x ln 2`` to them, a factor ``e^{+-2d}``), on each side. Also
    the instance the kernel checks (``score_perturbation_pow2``): ``(0,3) -> (1,2)`` takes
    weight 1 from ``8/9`` to ``2/3`` and keeps the argmax."""
    n = data.draw(st.integers(1, 6))
    eta = data.draw(st.integers(0, 3))
    x = data.draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n))
    x2 = [xi + data.draw(st.integers(-eta, eta)) for xi in x]
    instance = ([0, 3], [1, 2])
    rows = [base2_weights(impl, r) for r in (x, x2, *instance)]
    got = [[Fraction(float(g)) for g in row] for row, _ in rows]
    rels = [Fraction(rel) for _, rel in rows]
    two = Fraction(BASE)
    span = two ** (WEIGHT_SPAN * eta)
    z1 = sum(two**v for v in x)
    z2 = sum(two**v for v in x2)
    for i in range(n):
        p, p2 = two ** x[i] / z1, two ** x2[i] / z2
        assert p / span <= p2 <= span * p  # the oracle obeys the theorem
        # the measured weights obey it, within the two entries' bounds
        assert got[1][i] * (1 - rels[0]) <= span * got[0][i] * (1 + rels[1])
        assert got[0][i] * (1 - rels[1]) <= span * got[1][i] * (1 + rels[0])
        assert abs(got[0][i] - p) <= rels[0] * p
        assert abs(got[1][i] - p2) <= rels[1] * p2
    for row, r in enumerate(instance, start=2):
        w = two ** r[1] / sum(two**v for v in r)  # the exact base-2 weight 1: 8/9, 2/3
        assert abs(got[row][1] - w) <= rels[row] * w
    assert got[3][1] > got[3][0]  # the argmax (position 1) is kept
