"""density_psd: D = Q^T Q is symmetric positive semidefinite; rank one for one row.

The implementations' density operators (reference ``numpy_head.density``, kernels
``density_operator``, in the compute dtype) on queries held exactly in the dtype.

Tolerances. Every entry of the computed ``D^`` is within ``B_ij`` of the exact ``D``:
``[fp_matmul]`` (:func:`pyverify.testing.bounds.density_bound`: ``gamma_S(u_c)
(|Q|^T |Q|)_ij`` plus the underflow terms), times ``EVAL_SLACK`` for its float64
evaluation. Every comparison below is exact (Fractions), so the only slack is the
implementation's:

* symmetry: ``|D^_ij - D^_ji| <= B_ij + B_ji`` (both within their bounds of
  ``D_ij = D_ji``; BLAS may sum the two entries in different orders);
* semidefiniteness along ``x``: ``x^T D^ x >= x^T D x - |x|^T B |x| >= -|x|^T B |x|``;
* semidefiniteness in every direction (:func:`psd_with_shift`): with
  ``M = (B + B^T) / 2`` the symmetric part ``Ds`` of ``D^`` is within ``M`` of ``D``, and
  for any positive ``y`` a symmetric ``E`` with ``|E| <= M`` makes
  ``E + diag(M y / y)`` positive semidefinite (scaled diagonal dominance), so
  ``Ds + diag(M y / y) = D + (Ds - D) + diag(M y / y)`` is positive semidefinite:
  checked by an exact ``L D L^T`` elimination. With ``y`` near the Perron vector of
  ``M`` the shift is near ``||M||_2``, the Weyl bound, and no eigensolver's error enters;
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

from pyverify.fp.formulas import EVAL_SLACK, SMALLEST_NORMAL
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
    return impl.round(draw(arrays((s, dk), 3.0))), draw(arrays((dk,), 3.0))


def entry_bound(impl, q) -> np.ndarray:
    """``[fp_matmul]`` ``B``: every computed ``D^_ij`` within ``B_ij`` of the exact ``D_ij``.

    :func:`pyverify.testing.bounds.density_bound` (``gamma_S(u_c) |Q|^T |Q|`` and the
    underflow terms) times ``EVAL_SLACK``, the relative slack of its float64 evaluation
    (``[fp_summation]``).
    """
    return EVAL_SLACK * density_bound(impl, q)


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


def psd_with_shift(D: np.ndarray, B: np.ndarray) -> bool:
    """``[fp_matmul]`` Whether ``Ds + diag(M y / y)`` is positive semidefinite (exactly).

    ``Ds = (D^ + D^T) / 2`` and ``M = (B + B^T) / 2`` in Fractions, ``B`` the entry bound
    (:func:`entry_bound`). Holds whenever the exact ``D`` is positive semidefinite and
    every ``|D^_ij - D_ij| <= B_ij``, for every positive ``y`` (module docstring); ``y`` is
    the Perron vector of ``M`` (float64 ``eigh``; any positive vector is valid, this one
    makes the shift near ``||M||_2``), its entries kept at least ``SMALLEST_NORMAL``
    (positive; where it is tiny the shift only grows, which weakens, never fails, the
    check).
    """
    n = D.shape[0]
    Dq, Bq = from_numpy(D), from_numpy(B)
    Ds = [[(Dq[i][j] + Dq[j][i]) / 2 for j in range(n)] for i in range(n)]
    M = [[(Bq[i][j] + Bq[j][i]) / 2 for j in range(n)] for i in range(n)]
    perron = np.abs(np.linalg.eigh(np.array([[float(t) for t in r] for r in M]))[1][:, -1])
    y = [Fraction(float(t)) for t in np.maximum(perron, SMALLEST_NORMAL["float64"])]
    shift = [sum((M[i][j] * y[j] for j in range(n)), Fraction(0)) / y[i] for i in range(n)]
    return is_psd([[Ds[i][j] + (shift[i] if i == j else 0) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_density_is_symmetric_positive_semidefinite(impl, data):
    q, x = data.draw(queries(impl))
    D = density(impl, q)
    B = entry_bound(impl, q)
    Dq, Bq = from_numpy(D), from_numpy(B)
    n = D.shape[0]
    pairs = [(i, j) for i in range(n) for j in range(n)]
    assert all(abs(Dq[i][j] - Dq[j][i]) <= Bq[i][j] + Bq[j][i] for i, j in pairs)
    # x^T D x evaluated exactly: >= -(the implementation's rounding of D along x)
    xf = [Fraction(float(t)) for t in x]
    quad = sum(xf[i] * Dq[i][j] * xf[j] for i, j in pairs)
    assert quad >= -sum(abs(xf[i]) * Bq[i][j] * abs(xf[j]) for i, j in pairs)
    # against the exact D of the same (held) queries: every entry within the bound
    assert worst_excess(D, matmul(transpose(from_numpy(q)), from_numpy(q)), B) <= 1
    # every direction at once: the symmetric part plus the certified shift is PSD
    assert psd_with_shift(D, B)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_one_row_density_is_rank_one(impl, data):
    q, _ = data.draw(queries(impl, 1, 1))
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
    assert worst_excess(D, [[a * b for b in qf] for a in qf], entry_bound(impl, q)) <= 1


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
