"""softmax_simplex: masked softmax rows lie on the simplex; equal rows iff a shift.

Statement: a masked softmax row is > 0 on allowed entries, exactly 0 on masked ones and
sums to 1; for an injective exp, two rows (same mask) are equal iff the scores differ by a
constant on the allowed entries.

Floating-point form. Each computed entry is ``p_i (1 + e_i)`` with ``|e_i| <= eps`` where
(see :func:`entry_rel_error`) eps collects exp, the normaliser, and the roundings of the
row to the dtype. Then

* ``|sum_i p^_i - 1| <= eps`` (a weighted average of the e_i);
* ``p^_i >= p_i (1 - eps) > 0`` as long as ``p_i`` stays a normal number of the dtype,
  which the score ranges below guarantee (``p_i >= exp(-range) / S_k``);
* the "equal iff shift" part is checked through what makes it true: the row determines
  the score differences, ``log p_i - log p_j = e_i - e_j``; computed rows recover them
  within ``2 eps / (1 - eps)`` (``|log(1 + x)| <= |x| / (1 - |x|)``). So rows of scores
  differing by a shift agree within the shift bound, and scores whose difference is not
  constant (spread above twice the recovery bound) can never give equal rows.

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
from pyverify.testing.bounds import softmax_rel_bound
from pyverify.testing.impls import ALL, REFERENCE, gamma, impl_ids
from pyverify.testing.strategies import arrays, examples, grid_arrays

pytestmark = pytest.mark.theorem("softmax_simplex")


def entry_rel_error(impl, E, causal: bool) -> float:
    """Relative error bound of one computed entry: the proved
    :func:`pyverify.testing.bounds.softmax_rel_bound` (``fp_softmax``, ``fp_head_output``)."""
    return softmax_rel_bound(impl, E, causal)


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
    eps = entry_rel_error(impl, E, causal)
    assert np.all(p[allowed] > 0)  # positive where allowed ...
    assert np.all(p[~allowed] == 0)  # ... exactly zero where masked ...
    assert np.max(np.abs(p.sum(axis=1) - 1)) <= eps  # ... and the row sums to one
    # against the spec written out (float64, exp of exactly held scores): each entry
    # within its relative bound (plus the float64 oracle's own, << eps)
    Em = np.where(allowed, E, -np.inf)
    w = np.exp(Em - Em.max(axis=1, keepdims=True))
    want = w / w.sum(axis=1, keepdims=True)
    assert np.all(np.abs(p - want) <= (eps + gamma(E.shape[1] + 4, 2.0**-53)) * want)


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

    Tolerance: as :func:`test_rows_lie_on_the_simplex`, with the entry bound of the
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
    eps = entry_rel_error(impl, np.where(allowed, E, 0.0), True)
    assert np.max(np.abs(p.sum(axis=1) - 1)) <= eps
    Em = np.where(allowed, E, -np.inf)
    w = np.exp(Em - Em.max(axis=1, keepdims=True))
    want = w / w.sum(axis=1, keepdims=True)
    assert np.all(np.abs(p - want) <= (eps + gamma(s_k + 4, 2.0**-53)) * want)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_rows_determine_scores_up_to_a_shift(impl, data):
    """``log p_i - log p_j`` recovers ``e_i - e_j``: equal rows force a constant shift."""
    E1, causal = data.draw(score_cases(impl))
    s_q, s_k = E1.shape
    allowed = _allowed(E1, causal)
    p1 = impl.softmax(E1, causal=causal)
    eps = entry_rel_error(impl, E1, causal)
    rec = 2 * eps / (1 - eps)
    for r in range(s_q):
        a = np.flatnonzero(allowed[r])
        lp = np.log(p1[r, a])
        got = lp[:, None] - lp[None, :]
        want = E1[r, a][:, None] - E1[r, a][None, :]
        assert np.max(np.abs(got - want)) <= rec
    # a second score matrix, differing by a non-constant amount on some row's allowed
    # entries: its rows cannot equal the first's there (the spread exceeds 2 rec)
    if impl.dtype in ("bfloat16", "float16"):
        E2 = data.draw(grid_arrays((s_q, s_k), bound=3, denom=8))
    else:
        E2 = impl.round(data.draw(arrays((s_q, s_k), 10.0)))
    p2 = impl.softmax(E2, causal=causal)
    rec2 = rec + 2 * entry_rel_error(impl, E2, causal) / (1 - entry_rel_error(impl, E2, causal))
    for r in range(s_q):
        d = (E2 - E1)[r, allowed[r]]
        if d.max() - d.min() > rec + rec2:
            assert not np.array_equal(p1[r], p2[r])
            # and quantitatively: the recovered log-ratios differ as the scores do, up to
            # the recovery errors of both sides
            a = np.flatnonzero(allowed[r])
            l1, l2 = np.log(p1[r, a]), np.log(p2[r, a])
            diff = (l2 - l1)[:, None] - (l2 - l1)[None, :]
            assert np.max(np.abs(diff)) >= (d.max() - d.min()) - (rec + rec2)


@pytest.mark.parametrize("impl", [REFERENCE], ids=impl_ids)
@given(st.data())
def test_reference_simplex_with_any_mask(impl, data):
    """Any non-empty mask (not only causal): the reference's rows are on the simplex."""
    s_q, s_k = data.draw(st.integers(1, 7)), data.draw(st.integers(1, 7))
    E = data.draw(arrays((s_q, s_k), 20.0))
    mask = data.draw(hnp.arrays(np.bool_, (s_q, s_k)))
    mask[np.arange(s_q), data.draw(st.integers(0, s_k - 1))] = True
    p = masked_softmax(E, mask)
    M = np.where(mask, E, -np.inf)
    # |E| <= 20: the smallest weight is >= exp(-40) / 7 = 6e-19, a normal float64
    assert np.all(p[mask] > 0) and np.all(p[~mask] == 0)
    assert np.max(np.abs(p.sum(axis=1) - 1)) <= gamma(s_k + 4, 2.0**-53)
    lp = np.log(np.where(mask, p, 1.0))
    for r in range(s_q):
        a = np.flatnonzero(mask[r])
        got = lp[r, a][:, None] - lp[r, a][None, :]
        want = M[r, a][:, None] - M[r, a][None, :]
        assert np.max(np.abs(got - want)) <= 4 * gamma(s_k + 4, 2.0**-53) + 4 * 2.0**-53 * 40


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
def _base2_rows(impl, rows: list[list[int]]) -> tuple[np.ndarray, float]:
    """The implementation's softmax of the scores ``x ln 2`` (held in its dtype), and the
    relative bound of each weight against the exact base-2 softmax of the integers ``x``:
    the entry bound for the held scores plus the move of ``x ln 2`` to the dtype
    (``|E - x ln 2| <= d`` moves each weight by a factor within ``e^{+-2d}``)."""
    import math

    exact = np.array(rows, dtype=np.float64) * math.log(2)
    E = impl.round(exact)
    d = float(np.max(np.abs(E - exact)))
    return impl.softmax(E), softmax_rel_bound(impl, E) + math.expm1(2 * d)


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
    want = np.array([float(p) for p in _softmax2(x, [True] * n)])
    want_b = np.array([float(p) for p in _softmax2(bumped, [True] * n)])
    assert np.all(np.abs(got[0] - want) <= rel * want)
    assert np.all(np.abs(got[1] - want) <= rel * want)  # a shift: the same row
    assert np.all(np.abs(got[2] - want_b) <= rel * want_b)
    if n >= 2:  # not a shift: the rows differ beyond both bounds
        assert abs(got[2][j] - got[0][j]) > rel * (want[j] + want_b[j])
    got, rel = _base2_rows(impl, [[0, 1], [0, 2], [5, 6]])
    for row, w in ((0, 2 / 3), (1, 4 / 5), (2, 2 / 3)):
        assert abs(got[row][1] - w) <= rel * w
