"""softmax_simplex: masked softmax rows lie on the simplex; equal rows iff a shift.

Statement: a masked softmax row is > 0 on allowed entries, exactly 0 on masked ones and
sums to 1; for an injective exp, two rows (same mask) are equal iff the scores differ by a
constant on the allowed entries.

Floating-point form. Each computed entry is within its proved bound ``err_i`` of the exact
weight ``p_i`` (:func:`pyverify.testing.softmax_bounds.softmax_error`: ``[fp_softmax]``,
``[fp_head_output]``). Then

* ``|fl(sum_i p^_i) - 1|`` is within ``sum err_i`` plus the float64 sum's own rounding
  (:func:`~pyverify.testing.softmax_bounds.row_sum_bound`, ``[fp_summation]``);
* ``p^_i >= p_i - err_i > 0`` as long as ``p_i`` stays a normal number of the dtype,
  which the score ranges below guarantee (``p_i >= exp(-range) / S_k``);
* the "equal iff shift" part is checked through what makes it true: the row determines
  the score differences, ``log p_i - log p_j = e_i - e_j``; computed rows recover them
  within :func:`~pyverify.testing.softmax_bounds.log_ratio_bound` (``[fp_elementwise]``
  for NumPy's ``log``, whose declared accuracy is checked against mpmath, and
  ``[fp_summation]``). So rows of scores differing by a shift agree within the shift
  bound, and scores whose difference is not constant (two log-ratios apart by more than
  both recovery bounds, compared exactly) can never give equal rows.

The spec written out (NumPy float64) is an oracle with its own proved error
(:func:`~pyverify.testing.softmax_bounds.reference_error`, ``[fp_softmax]`` at ``u64``):
a computed row and the oracle differ by at most the sum of their two bounds.

The exact part uses ``exp = 2^x`` on integers (an injective, multiplicative exp) and
``fractions.Fraction``: all four claims hold with equality, for any mask.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyverify.reference import causal_mask, masked_softmax
from pyverify.testing.impls import ALL, REFERENCE, impl_ids
from pyverify.testing.softmax_bounds import (
    base2_weights,
    log_excess,
    log_ratio_bound,
    log_ratios,
    reference_error,
    row_sum_bound,
    softmax_error,
)
from pyverify.testing.strategies import arrays, examples, grid_arrays

pytestmark = pytest.mark.theorem("softmax_simplex")


@st.composite
def score_cases(draw, impl):
    """Scores exactly representable in the dtype, of a range whose softmax stays normal.

    float16's normal range ends at 6.1e-5: with |E| <= 3 the smallest weight is at least
    exp(-6) / 8 = 3e-4. bfloat16 shares the grid (8 significant bits hold multiples of
    1/8 up to 16). float32/float64 take any float up to 10 (exp(-20) / 8 = 3e-10).
    """
    s_q = draw(st.integers(1, 8))
    s_k = draw(st.integers(s_q, 8))
    if impl.dtype in ("bfloat16", "float16"):
        E = draw(grid_arrays((s_q, s_k), bound=3, denom=8))
    else:
        E = impl.round(draw(arrays((s_q, s_k), 10.0)))
    return E, draw(st.booleans())


def _allowed(E, causal):
    return causal_mask(*E.shape) if causal else np.ones(E.shape, dtype=bool)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_rows_lie_on_the_simplex(impl, data):
    E, causal = data.draw(score_cases(impl))
    p = impl.softmax(E, causal=causal)
    allowed = _allowed(E, causal)
    err = softmax_error(impl, E, causal)
    assert np.all(p[allowed] > 0)  # positive where allowed ...
    assert np.all(p[~allowed] == 0)  # ... exactly zero where masked ...
    assert np.all(np.abs(p.sum(axis=1) - 1) <= row_sum_bound(p, err))  # ... and sums to one
    # against the spec written out (float64, exp of exactly held scores): the two rows
    # within the sum of their bounds of the exact softmax
    Em = np.where(allowed, E, -np.inf)
    w = np.exp(Em - Em.max(axis=1, keepdims=True))
    want = w / w.sum(axis=1, keepdims=True)
    assert np.all(np.abs(p - want) <= err + reference_error(E, allowed))


def masking_magnitude(dtype: str) -> float:
    """Masked scores are drawn in ``[M/2, M]``: ``M = 2^31`` (above an additive ``-1e9``
    mask by more than 1e9), or ``2^15`` in float16, which holds at most 65504 (above a
    ``-1e4`` mask, float16's usual stand-in)."""
    return 2.0**15 if dtype == "float16" else 2.0**31


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_masked_entries_get_zero_weight_at_masking_magnitude(impl, data):
    """The statement is about every real score: causal rows whose masked entries are of
    masking magnitude (:func:`masking_magnitude`) are still exactly 0 there, positive on
    the allowed entries and sum to 1, each entry within its bound of the spec.

    Why this ID: an additive mask (``E - 1e9`` at masked places, a common stand-in for
    exact masking) turns ``softmax([[0, 2e9], [., .]], causal)`` into the row ``[0, 1]``:
    weight 0 on the one allowed entry and 1 on the masked one, the negation of this
    theorem's statement, whatever the head around it does. (Inside a head the same
    softmax also breaks ``prefix_consistency``, which
    ``test_prefix_consistency.test_later_keys_of_masking_magnitude_are_not_read`` checks on
    ``plga``: an implementation may mask differently in its head and in ``softmax``.)

    Tolerance: as :func:`test_rows_lie_on_the_simplex`, with the entry bounds of the
    allowed scores only: masked scores take no part in an exact masked softmax's
    arithmetic (their weight is 0 whatever their value)."""
    s_q = data.draw(st.integers(2, 8), label="S_q")  # row 0 has a masked entry
    s_k = data.draw(st.integers(s_q, 8), label="S_k")
    if impl.dtype in ("bfloat16", "float16"):
        small = data.draw(grid_arrays((s_q, s_k), bound=3, denom=8), label="allowed scores")
    else:
        small = impl.round(data.draw(arrays((s_q, s_k), 10.0), label="allowed scores"))
    M = masking_magnitude(impl.dtype)
    big = impl.round(M * (0.75 + 0.25 * data.draw(arrays((s_q, s_k), 1.0), label="masked")))
    allowed = _allowed(small, True)
    E = np.where(allowed, small, big)
    note(f"scores E = {E!r}")
    p = impl.softmax(E, causal=True)
    assert np.all(p[~allowed] == 0)  # exactly zero where masked, however large the score
    assert np.all(p[allowed] > 0)
    held = np.where(allowed, E, 0.0)
    err = softmax_error(impl, held, True)
    assert np.all(np.abs(p.sum(axis=1) - 1) <= row_sum_bound(p, err))
    Em = np.where(allowed, E, -np.inf)
    w = np.exp(Em - Em.max(axis=1, keepdims=True))
    want = w / w.sum(axis=1, keepdims=True)
    assert np.all(np.abs(p - want) <= err + reference_error(held, allowed))


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_rows_determine_scores_up_to_a_shift(impl, data):
    """``log p_i - log p_j`` recovers ``e_i - e_j``: equal rows force a constant shift."""
    E1, causal = data.draw(score_cases(impl))
    s_q, s_k = E1.shape
    allowed = _allowed(E1, causal)
    p1 = impl.softmax(E1, causal=causal)
    err1 = softmax_error(impl, E1, causal)
    assert log_excess(p1[allowed]) <= 1  # NumPy's log within its declared accuracy here
    for r in range(s_q):
        a = np.flatnonzero(allowed[r])
        got = log_ratios(p1[r, a])
        want = E1[r, a][:, None] - E1[r, a][None, :]
        assert np.all(np.abs(got - want) <= log_ratio_bound(p1[r, a], err1[r, a], E1[r, a]))
    # a second score matrix, differing by a non-constant amount on some row's allowed
    # entries: its rows cannot equal the first's where two exact score differences are
    # apart by more than both recovery bounds (compared exactly, in Fractions)
    if impl.dtype in ("bfloat16", "float16"):
        E2 = data.draw(grid_arrays((s_q, s_k), bound=3, denom=8))
    else:
        E2 = impl.round(data.draw(arrays((s_q, s_k), 10.0)))
    p2 = impl.softmax(E2, causal=causal)
    err2 = softmax_error(impl, E2, causal)
    assert log_excess(p2[allowed]) <= 1
    for r in range(s_q):
        a = np.flatnonzero(allowed[r])
        rec = log_ratio_bound(p1[r, a], err1[r, a]) + log_ratio_bound(p2[r, a], err2[r, a])
        g1, g2 = log_ratios(p1[r, a]), log_ratios(p2[r, a])
        d = [Fraction(float(E2[r, j])) - Fraction(float(E1[r, j])) for j in a]
        for i in range(a.size):
            for j in range(a.size):
                gap, room = abs(d[i] - d[j]), Fraction(float(rec[i, j]))
                if gap > room:
                    assert not np.array_equal(p1[r], p2[r])
                # and quantitatively: the recovered log-ratios differ as the scores do, up
                # to the recovery errors of both sides
                assert abs(Fraction(float(g2[i, j])) - Fraction(float(g1[i, j]))) >= gap - room


@pytest.mark.parametrize("impl", [REFERENCE], ids=impl_ids)
@given(st.data())
def test_reference_simplex_with_any_mask(impl, data):
    """Any non-empty mask (not only causal): the reference's rows are on the simplex."""
    s_q, s_k = data.draw(st.integers(1, 7)), data.draw(st.integers(1, 7))
    E = data.draw(arrays((s_q, s_k), 20.0))
    mask = data.draw(hnp.arrays(np.bool_, (s_q, s_k)))
    mask[np.arange(s_q), data.draw(st.integers(0, s_k - 1))] = True
    p = masked_softmax(E, mask)
    # |E| <= 20: the smallest weight is >= exp(-40) / 7 = 6e-19, a normal float64
    assert np.all(p[mask] > 0) and np.all(p[~mask] == 0)
    err = reference_error(E, mask)  # the reference computes the spec's float64 softmax
    assert np.all(np.abs(p.sum(axis=1) - 1) <= row_sum_bound(p, err))
    assert log_excess(p[mask]) <= 1
    for r in range(s_q):
        a = np.flatnonzero(mask[r])
        got = log_ratios(p[r, a])
        want = E[r, a][:, None] - E[r, a][None, :]
        assert np.all(np.abs(got - want) <= log_ratio_bound(p[r, a], err[r, a], E[r, a]))


# --------------------------------------------------------------------------- exact
def _softmax2(e: list[int], allowed: list[bool]) -> list[Fraction]:
    """Masked softmax with the injective exp ``x -> 2^x`` on integers, exactly."""
    z = sum(Fraction(2) ** x for x, a in zip(e, allowed, strict=True) if a)
    return [Fraction(2) ** x / z if a else Fraction(0) for x, a in zip(e, allowed, strict=True)]


@pytest.mark.implementation("reference", dtype="exact")
@examples(60)
@given(st.data())
def test_simplex_and_shift_characterisation_exactly(data):
    n = data.draw(st.integers(1, 6))
    e1 = data.draw(st.lists(st.integers(-12, 12), min_size=n, max_size=n))
    allowed = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    allowed[data.draw(st.integers(0, n - 1))] = True
    c = data.draw(st.integers(-20, 20))
    # half the draws: a shift on the allowed entries (masked entries arbitrary);
    # the other half: anything
    if data.draw(st.booleans()):
        e2 = [
            x + c if a else data.draw(st.integers(-12, 12))
            for x, a in zip(e1, allowed, strict=True)
        ]
    else:
        e2 = data.draw(st.lists(st.integers(-12, 12), min_size=n, max_size=n))
    p1, p2 = _softmax2(e1, allowed), _softmax2(e2, allowed)
    for p in (p1, p2):
        assert sum(p) == 1
        assert all((x > 0) if a else (x == 0) for x, a in zip(p, allowed, strict=True))
    diffs = {y - x for x, y, a in zip(e1, e2, allowed, strict=True) if a}
    assert (p1 == p2) == (len(diffs) == 1)


@pytest.mark.implementation("reference", dtype="exact")
@examples(10)
@given(st.integers(2, 6), st.data())
def test_shift_detection_is_not_vacuous(n, data):
    """Both sides of the iff occur: a non-constant difference gives different rows."""
    e1 = data.draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n))
    i = data.draw(st.integers(0, n - 1))
    e2 = list(e1)
    e2[i] += data.draw(st.integers(1, 5))
    assume(n >= 2)
    assert _softmax2(e1, [True] * n) != _softmax2(e2, [True] * n)


# ------------------------------------------------- two carriers: base-2 softmax
def _base2_rows(impl, rows: list[list[int]]) -> tuple[list[np.ndarray], Fraction]:
    """The implementation's softmax of the scores ``x ln 2`` (held in its dtype), and the
    relative bound of each weight against the exact base-2 softmax of the integers ``x``
    (:func:`pyverify.testing.softmax_bounds.base2_weights`), the largest of the rows'."""
    got = [base2_weights(impl, x) for x in rows]
    return [g for g, _ in got], Fraction(max(r for _, r in got))


def _frac(x) -> list[Fraction]:
    return [Fraction(float(v)) for v in x]


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_base2_softmax_the_genuine_model_of_the_lean(impl, data):
    """``softmax_simplex_hom``/``_eq_iff_hom`` on ``pow2`` (``n -> 2^n``, ``Int -> Rat``):
    the implementation's softmax of ``x ln 2`` is the base-2 softmax of the integer scores
    (oracle: ``_softmax2``, exact Fractions); scores shifted by an integer ``c`` give the
    same row, one entry raised by 1 (the smallest, so its weight is at most 1/2) does not;
    and the values the kernel checks in ``softmax_simplex_pow2``: ``(0,1) -> 2/3``,
    ``(0,2) -> 4/5``, ``(5,6)`` as ``(0,1)``."""
    n = data.draw(st.integers(1, 6))
    x = data.draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n))
    c = data.draw(st.integers(-3, 3))
    j = int(np.argmin(x))
    bumped = [xi + (1 if i == j else 0) for i, xi in enumerate(x)]
    got, rel = _base2_rows(impl, [x, [xi + c for xi in x], bumped])
    got = [_frac(g) for g in got]  # compared exactly with the exact weights
    want = _softmax2(x, [True] * n)
    want_b = _softmax2(bumped, [True] * n)
    assert all(abs(g - w) <= rel * w for g, w in zip(got[0], want, strict=True))
    # a shift: the same row
    assert all(abs(g - w) <= rel * w for g, w in zip(got[1], want, strict=True))
    assert all(abs(g - w) <= rel * w for g, w in zip(got[2], want_b, strict=True))
    if n >= 2:  # not a shift: the rows differ beyond both bounds
        assert abs(got[2][j] - got[0][j]) > rel * (want[j] + want_b[j])
    instance = [[0, 1], [0, 2], [5, 6]]
    got, rel = _base2_rows(impl, instance)
    for row, x_row in enumerate(instance):
        w = _softmax2(x_row, [True, True])[1]  # the exact base-2 weight 1: 2/3, 4/5, 2/3
        assert abs(Fraction(float(got[row][1])) - w) <= rel * w
