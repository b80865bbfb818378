"""density_psd: D = Q^T Q is symmetric positive semidefinite; rank one for one row.

The implementations' density operators (reference ``numpy_head.density``, kernels
``density_operator``, in the compute dtype) on queries held exactly in the dtype.

Tolerances. Every entry of the computed ``D^`` is within ``B_ij`` of the exact ``D``:
``[fp_matmul]`` (:func:`pyverify.testing.bounds.density_bound`: ``gamma_S(u_c)
(|Q|^T |Q|)_ij`` plus the underflow terms, times ``EVAL_SLACK`` for its float64
evaluation), compared exactly (Fractions), so the only slack is the implementation's.
What that entry check gives, for any ``D^`` within ``B`` of a symmetric positive
semidefinite ``D``, is a lemma, checked exactly on rational ``D = Q^T Q`` and every
``E = D^ - D`` with ``|E| <= B`` (:func:`test_entry_bound_certifies_near_psd_exactly`):

* symmetry: ``|D^_ij - D^_ji| <= B_ij + B_ji`` (``D_ij = D_ji``; BLAS may sum the two
  entries in different orders);
* semidefiniteness along ``x``: ``x^T D^ x >= x^T D x - |x|^T B |x| >= -|x|^T B |x|``;
* semidefiniteness in every direction: with ``M = (B + B^T) / 2`` the symmetric part
  ``Ds`` of ``D^`` is within ``M`` of ``D``, and for any positive ``y`` a symmetric ``E``
  with ``|E| <= M`` makes ``E + diag(M y / y)`` positive semidefinite (scaled diagonal
  dominance), so ``Ds + diag(M y / y)`` is positive semidefinite (an exact ``L D L^T``
  elimination, :func:`is_psd`); with ``y`` the Perron vector of ``M`` the shift is near
  ``||M||_2``, the Weyl bound.

These hold whenever the entry check does, so the implementations are held to the entry
check alone. And:

* S = 1: ``D^_ij = q_i q_j (1 + d)`` with one rounding, so a 2 x 2 minor
  ``D_ij D_kl - D_il D_kj`` is at most ``gamma_4(u_c) |q_i q_j q_k q_l|`` (two products,
  each with two roundings), computed exactly in Fractions; and ``D^`` is ``q^T q`` itself
  within ``B`` (which bounds, by Weyl, its largest eigenvalue's distance from ``|q|^2``
  and the others' from 0). For bfloat16/float16 queries the float32 products of two 8-
  or 11-bit significands are exact: the minors vanish exactly, as in the theorem.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.testing.bounds import density_bound
from pyverify.testing.exact import Mat, from_numpy, matmul, transpose
from pyverify.testing.fp import worst_excess
from pyverify.testing.impls import ALL, gamma, impl_ids
from pyverify.testing.strategies import arrays, even_dk, examples, fraction_matrix

pytestmark = pytest.mark.theorem("density_psd")


def density(impl, q) -> np.ndarray:
    """The implementation's ``Q^T Q`` (float64 copy; the protocol's optional ``density``)."""
    return impl.density(q)


@st.composite
def queries(draw, impl, s_min: int = 1, s_max: int = 8):
    s, dk = draw(st.integers(s_min, s_max)), draw(even_dk)
    return impl.round(draw(arrays((s, dk), 3.0)))


def is_psd(A: Mat) -> bool:
    """Whether the symmetric rational matrix ``A`` is positive semidefinite (exactly).

    Symmetric Gaussian elimination without pivoting: every pivot must be ``>= 0``, and a
    zero pivot needs a zero row in the remaining Schur complement.
    """
    a = [list(r) for r in A]
    n = len(a)
    for k in range(n):
        p = a[k][k]
        if p < 0:
            return False
        if p == 0:
            if any(a[k][j] != 0 for j in range(k + 1, n)):
                return False
            continue
        for i in range(k + 1, n):
            f = a[i][k] / p
            for j in range(k + 1, n):
                a[i][j] -= f * a[k][j]
    return True


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_density_is_q_t_q_within_its_bound(impl, data):
    """Every entry of the computed ``D^`` within ``B`` of the exact ``Q^T Q`` (exactly
    compared): near-symmetric and near-semidefinite by the lemma (module docstring)."""
    q = data.draw(queries(impl))
    Q = from_numpy(q)
    assert worst_excess(density(impl, q), matmul(transpose(Q), Q), density_bound(impl, q)) <= 1


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_one_row_density_is_rank_one(impl, data):
    q = data.draw(queries(impl, 1, 1))
    D = density(impl, q)
    dk = q.shape[1]
    Dq = from_numpy(D)
    qf = [Fraction(float(t)) for t in q[0]]
    exact_products = impl.dtype in ("bfloat16", "float16")
    g4 = Fraction(gamma(4, impl.u_compute))
    for i, k in combinations(range(dk), 2):
        for j, m in combinations(range(dk), 2):
            minor = Dq[i][j] * Dq[k][m] - Dq[i][m] * Dq[k][j]
            if exact_products:
                assert minor == 0
            else:
                assert abs(minor) <= g4 * abs(qf[i] * qf[j] * qf[k] * qf[m])
    # and it is q^T q itself, entry by entry (exactly compared): by Weyl its largest
    # eigenvalue is within ||B||_2 of |q|^2 and the others within it of 0
    assert worst_excess(D, [[a * b for b in qf] for a in qf], density_bound(impl, q)) <= 1


@pytest.mark.implementation("reference", dtype="exact")
@examples(20)
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_density_psd_exactly(s, dk, data):
    """Rational Q: D = Q^T Q is symmetric, x^T D x = |Q x|^2 >= 0, and with one row every
    2 x 2 minor is exactly zero."""
    Q = data.draw(fraction_matrix(s, dk))
    x = data.draw(fraction_matrix(dk, 1))
    D = matmul(transpose(Q), Q)
    assert D == transpose(D)
    quad = matmul(matmul(transpose(x), D), x)[0][0]
    Qx = matmul(Q, x)
    assert quad == sum(r[0] * r[0] for r in Qx) >= 0
    D1 = matmul(transpose(Q[:1]), Q[:1])
    for i, k in combinations(range(dk), 2):
        for j, m in combinations(range(dk), 2):
            assert D1[i][j] * D1[k][m] - D1[i][m] * D1[k][j] == 0
    if s >= 2 and dk >= 2:  # with two independent rows a minor can be nonzero (sharpness)
        Q2 = [[Fraction(1), Fraction(0)] + [Fraction(0)] * (dk - 2),
              [Fraction(0), Fraction(1)] + [Fraction(0)] * (dk - 2)]  # fmt: skip
        D2 = matmul(transpose(Q2), Q2)
        assert D2[0][0] * D2[1][1] - D2[0][1] * D2[1][0] == 1


def _signs() -> st.SearchStrategy[Fraction]:
    """Rationals in ``[-1, 1]``, the ends included."""
    return st.one_of(st.sampled_from([Fraction(-1), Fraction(1)]),
                     st.fractions(-1, 1, max_denominator=8))  # fmt: skip


@pytest.mark.implementation("reference", dtype="exact")
@examples(20)
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_entry_bound_certifies_near_psd_exactly(s, n, data):
    """The lemma (module docstring): rational ``D = Q^T Q``, a bound ``B >= 0``, any ``E``
    with ``|E| <= B`` entrywise (not symmetric), ``D^ = D + E``: ``|D^_ij - D^_ji| <= B_ij
    + B_ji``, ``x^T D^ x >= -|x|^T B |x|`` and, ``M = (B + B^T) / 2``, for every positive
    ``y`` the symmetric part of ``D^`` plus ``diag(M y / y)`` is positive semidefinite."""
    Q = data.draw(fraction_matrix(s, n), label="Q")
    nonneg = st.builds(Fraction, st.integers(0, 9), st.integers(1, 7))
    B = data.draw(st.lists(st.lists(nonneg, min_size=n, max_size=n), min_size=n, max_size=n))
    t = data.draw(st.lists(st.lists(_signs(), min_size=n, max_size=n), min_size=n, max_size=n))
    y = data.draw(st.lists(st.builds(Fraction, st.integers(1, 9), st.integers(1, 7)),
                           min_size=n, max_size=n), label="y")  # fmt: skip
    x = [r[0] for r in data.draw(fraction_matrix(n, 1), label="x")]
    D = matmul(transpose(Q), Q)
    Dh = [[D[i][j] + t[i][j] * B[i][j] for j in range(n)] for i in range(n)]
    pairs = [(i, j) for i in range(n) for j in range(n)]
    assert all(abs(Dh[i][j] - Dh[j][i]) <= B[i][j] + B[j][i] for i, j in pairs)
    quad = sum(x[i] * Dh[i][j] * x[j] for i, j in pairs)
    assert quad >= -sum(abs(x[i]) * B[i][j] * abs(x[j]) for i, j in pairs)
    M = [[(B[i][j] + B[j][i]) / 2 for j in range(n)] for i in range(n)]
    shift = [sum((M[i][j] * y[j] for j in range(n)), Fraction(0)) / y[i] for i in range(n)]
    Ds = [[(Dh[i][j] + Dh[j][i]) / 2 + (shift[i] if i == j else 0) for j in range(n)]
          for i in range(n)]  # fmt: skip
    assert is_psd(Ds)
    # the elimination refuses an indefinite matrix (the check above can fail)
    assert not is_psd([[Fraction(0), Fraction(1)], [Fraction(1), Fraction(0)]])
