"""softmax_shift: softmax (masked or not) is invariant under adding one constant to a row.

Floating point: the exact softmax of ``E + c`` is that of ``E`` (the statement), so the two
computed rows differ by at most the sum of their bounds against it
(:func:`shift_error`): each row's ``[fp_softmax]`` / ``[fp_head_output]`` bound, the
shifted row's with the held ``E + c``'s distance to the exact ``E + c``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyverify.fp.learner import float_up
from pyverify.reference import causal_mask, masked_softmax, plga_forward_full
from pyverify.testing.impls import ALL, FLOAT, REFERENCE, impl_ids
from pyverify.testing.softmax_bounds import reference_error, softmax_error
from pyverify.testing.strategies import arrays, examples, grid_arrays, head_params

pytestmark = pytest.mark.theorem("softmax_shift")


@st.composite
def score_rows(draw, grid: bool):
    s_q = draw(st.integers(1, 8))
    s_k = draw(st.integers(s_q, 8))
    if grid:
        # multiples of 1/8 in [-8, 8]: E, c and E + c are exact in bfloat16 and wider
        E = draw(grid_arrays((s_q, s_k)))
        c = draw(grid_arrays((s_q, 1)))
    else:
        E = draw(arrays((s_q, s_k), 10.0))
        c = draw(arrays((s_q, 1), 10.0))
    return E, c, draw(st.booleans())


def held_distance(held, E, c) -> np.ndarray:
    """``|held - (E + c)|`` entrywise against the exact sum (Fractions), rounded up."""
    h, e, s = (a.ravel() for a in np.broadcast_arrays(np.asarray(held, np.float64), E, c))
    d = [
        float_up(abs(Fraction(float(x)) - Fraction(float(y)) - Fraction(float(z))))
        for x, y, z in zip(h, e, s, strict=True)
    ]
    return np.array(d).reshape(np.shape(held))


def shift_error(impl, E, c, held, causal: bool) -> np.ndarray:
    """``[fp_softmax]`` / ``[fp_head_output]``: bound of ``|softmax^(held) - softmax^(E)|``.

    ``E`` held exactly, ``held`` the shifted scores as the implementation holds them. Both
    computed rows are within their bounds of the exact ``softmax(E) = softmax(E + c)``
    (:func:`pyverify.testing.softmax_bounds.softmax_error`; the shifted row's scores off by
    :func:`held_distance` from the exact ``E + c``): the sum of the two bounds.
    """
    d = held_distance(held, E, c)
    return softmax_error(impl, held, causal, d) + softmax_error(impl, E, causal)


def _assert_shift_invariant_exact(impl, case) -> None:
    """softmax(E + c) = softmax(E) within the arithmetic bound (E + c exact in the dtype)."""
    E, c, causal = case
    held = impl.round(E + c)
    assert np.array_equal(held, E + c)  # the shift is exact in the dtype
    base = impl.softmax(E, causal=causal)
    shifted = impl.softmax(held, causal=causal)
    assert np.all(np.isfinite(shifted))
    assert np.all(np.abs(shifted - base) <= shift_error(impl, E, c, held, causal))


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(score_rows(grid=True))
def test_row_shift_leaves_softmax_unchanged_exact_inputs(impl, case):
    _assert_shift_invariant_exact(impl, case)


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@given(score_rows(grid=False))
def test_row_shift_leaves_softmax_unchanged_any_floats(impl, case):
    E, c, causal = case
    E = impl.round(E)
    Ec = impl.round(E + c)  # the shifted scores as the dtype holds them
    base = impl.softmax(E, causal=causal)
    shifted = impl.softmax(Ec, causal=causal)
    assert np.all(np.abs(shifted - base) <= shift_error(impl, E, c, Ec, causal))


@pytest.mark.parametrize("impl", [REFERENCE], ids=impl_ids)
@given(st.data())
def test_reference_shift_is_bitwise_exact_with_any_mask(impl, data):
    """Exact arithmetic: with dyadic scores and shift, ``(E + c) - max(E + c) = E - max E``
    holds exactly in float64, so the reference (which subtracts the row maximum over the
    allowed entries) must return bitwise identical rows; any mask (rows non-empty)."""
    s_q, s_k = data.draw(st.integers(1, 7), label="s_q"), data.draw(st.integers(1, 7), label="s_k")
    # E on a grid of 1/64 up to 2^20, c an integer up to 2^30: all sums exact (< 2^53)
    E = data.draw(
        hnp.arrays(
            np.float64, (s_q, s_k), elements=st.integers(-(2**26), 2**26).map(lambda i: i / 64)
        )
    )
    c = data.draw(
        hnp.arrays(np.float64, (s_q, 1), elements=st.integers(-(2**30), 2**30)), label="c"
    )
    mask = data.draw(hnp.arrays(np.bool_, (s_q, s_k)), label="mask")
    mask[np.arange(s_q), data.draw(st.integers(0, s_k - 1))] = True  # no empty row
    assert np.array_equal(E + c - c, E)  # the shift really is exact
    base = masked_softmax(E, mask)
    shifted = masked_softmax(E + c, mask)
    assert np.array_equal(shifted, base)
    assert np.all(base[~mask] == 0.0)
    # and the softmax of the whole row (mask None) likewise
    assert np.array_equal(masked_softmax(E + c), masked_softmax(E))


@pytest.mark.parametrize("impl", [REFERENCE], ids=impl_ids)
@given(st.data())
def test_head_rows_are_the_masked_softmax_of_its_scores(impl, data):
    """Inside the head: attention rows = masked softmax of the head's scores under the
    causal mask AND an extra mask (exactly the same function: bitwise), masked entries get
    weight 0, and shifting each row of the scores leaves the rows unchanged (within the
    bounds of :func:`shift_error`; the scores are not dyadic here, so E + c is rounded)."""
    s_q = data.draw(st.integers(1, 6), label="s_q")
    s_k = data.draw(st.integers(s_q, 6), label="s_k")
    dk = data.draw(st.sampled_from([2, 4]), label="dk")
    q, k, v = (data.draw(arrays(shape, 2.0)) for shape in ((s_q, dk), (s_k, dk), (s_k, 3)))
    G = np.eye(dk) + data.draw(arrays((dk, dk), 1.0)) / dk
    mask = data.draw(hnp.arrays(np.bool_, (s_q, s_k)), label="mask")
    mask[:, 0] = True  # key 0 is causally visible to every query: no empty row
    causal = data.draw(st.booleans(), label="causal")
    params = data.draw(head_params(dk), label="params")
    res = plga_forward_full(q, k, v, params, causal, G=G, mask=mask)
    allowed = (causal_mask(s_q, s_k) if causal else np.ones((s_q, s_k), bool)) & mask
    assert np.array_equal(res.weights, masked_softmax(res.E, allowed))
    assert np.all(res.weights[~allowed] == 0)
    c = data.draw(arrays((s_q, 1), 10.0), label="c")
    held = res.E + c  # rounded to float64
    shifted = masked_softmax(held, allowed)
    # [fp_softmax] both float64 rows (any mask) against the exact softmax(E) = softmax(E + c)
    d = held_distance(held, res.E, c)
    assert np.all(
        np.abs(shifted - res.weights)
        <= reference_error(held, allowed, d) + reference_error(res.E, allowed)
    )


@pytest.mark.parametrize("impl", [REFERENCE], ids=impl_ids)
@given(st.integers(1, 5), st.integers(1, 5), st.data())
def test_a_row_with_nothing_to_attend_is_rejected(impl, s_q, s_k, data):
    """The theorem is about non-empty rows: softmax over no entries is undefined, and the
    reference says so (ValueError naming the rows) instead of returning 0/0 = NaN."""
    E = data.draw(arrays((s_q, s_k), 5.0), label="E")
    mask = data.draw(hnp.arrays(np.bool_, (s_q, s_k)), label="mask")
    empty = data.draw(st.integers(0, s_q - 1), label="empty")
    mask[empty] = False
    with pytest.raises(ValueError, match=f"rows .*{empty}"):
        masked_softmax(E, mask)


@pytest.mark.implementation("reference", dtype="exact")
@examples(4)
@given(st.integers(1, 5), st.integers(0, 4))
def test_shift_invariance_symbolically(n, masked):
    """Symbolic: for any reals e_j, c and any non-empty allowed set, the rows agree."""
    e = sympy.symbols(f"e0:{n}", real=True)
    c = sympy.Symbol("c", real=True)
    allowed = [j for j in range(n) if j >= min(masked, n - 1)]  # a non-empty subset
    for i in allowed:
        lhs = sympy.exp(e[i] + c) / sum(sympy.exp(e[j] + c) for j in allowed)
        rhs = sympy.exp(e[i]) / sum(sympy.exp(e[j]) for j in allowed)
        assert sympy.simplify(lhs - rhs) == 0


@st.composite
def large_shift_rows(draw):
    s_q = draw(st.integers(1, 6))
    s_k = draw(st.integers(s_q, 6))
    E = draw(grid_arrays((s_q, s_k)), label="E")  # multiples of 1/8 in [-8, 8]
    mag = st.integers(256, 4096)
    c = draw(hnp.arrays(np.float64, (s_q, 1), elements=mag), label="c")
    sign = draw(hnp.arrays(np.float64, (s_q, 1), elements=st.sampled_from([-1.0, 1.0])))
    return E, c * sign, draw(st.booleans(), label="causal")


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@given(large_shift_rows())
def test_large_row_shift_leaves_softmax_unchanged(impl, case):
    """The theorem holds for every constant, so also for shifts far past exp's range
    (|c| up to 4096 > 709): an implementation must not evaluate exp(E + c) unshifted.
    E + c is exact in float32 and float64 (a multiple of 1/8 below 2^13), so only the
    arithmetic bounds of :func:`shift_error` apply."""
    _assert_shift_invariant_exact(impl, case)
