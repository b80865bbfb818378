"""density_psd: D = Q^T Q is symmetric positive semidefinite; rank one for one row.

The implementations' density operators (reference ``numpy_head.density``, kernels
``density_operator``, in the compute dtype) on queries held exactly in the dtype.

Tolerances. Entry ``D_ij`` is a length-S dot product: computed within
``gamma_S(u_c) (|Q|^T |Q|)_ij`` of the exact value (Higham). Hence

* symmetry: ``|D^_ij - D^_ji| <= 2 gamma_S(u_c) (|Q|^T|Q|)_ij`` (BLAS may sum the two
  entries in different orders);
* semidefiniteness: ``x^T D^ x = |Q x|^2 + x^T dD x >= -gamma_S(u_c) |x|^T |Q|^T |Q| |x|``,
  evaluated here exactly in Fractions, so the only slack is the implementation's; the
  smallest eigenvalue of the symmetric part is >= ``-gamma_S(u_c) || |Q|^T|Q| ||_2``
  (Weyl) minus eigvalsh's own float64 error;
* S = 1: ``D^_ij = q_i q_j (1 + d)`` with one rounding, so a 2 x 2 minor
  ``D_ij D_kl - D_il D_kj`` is at most ``gamma_4(u_c) |q_i q_j q_k q_l|`` (two products,
  each with two roundings), computed exactly in Fractions. For bfloat16/float16 queries
  the float32 products of two 8- or 11-bit significands are exact: the minors vanish
  exactly, as in the theorem.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.precision import UNIT_ROUNDOFF
from pyverify.testing.exact import from_numpy, matmul, transpose
from pyverify.testing.impls import ALL, gamma, impl_ids
from pyverify.testing.strategies import arrays, even_dk, examples, fraction_matrix

pytestmark = pytest.mark.theorem("density_psd")

U64 = UNIT_ROUNDOFF["float64"]


def density(impl, q) -> np.ndarray:
    """The implementation's ``Q^T Q`` (float64 copy; the protocol's optional ``density``)."""
    return impl.density(q)


@st.composite
def queries(draw, impl, s_min: int = 1, s_max: int = 8):
    s, dk = draw(st.integers(s_min, s_max)), draw(even_dk)
    return impl.round(draw(arrays((s, dk), 3.0))), draw(arrays((dk,), 3.0))


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_density_is_symmetric_positive_semidefinite(impl, data):
    q, x = data.draw(queries(impl))
    D = density(impl, q)
    S = q.shape[0]
    aQ = np.abs(q)
    mag = aQ.T @ aQ
    g = gamma(S, impl.u_compute)
    assert np.all(np.abs(D - D.T) <= 2 * g * mag)
    # x^T D x evaluated exactly: >= -(the implementation's rounding of D)
    Dq = from_numpy(D)
    xf = [Fraction(float(t)) for t in x]
    quad = sum(xf[i] * Dq[i][j] * xf[j] for i in range(len(xf)) for j in range(len(xf)))
    ax = np.abs(x)
    slack = Fraction(g * float(ax @ mag @ ax)) * Fraction(1 + 4 * U64)
    assert quad >= -slack
    # against the exact D of the same (held) queries: every entry within the bound
    exactD = matmul(transpose(from_numpy(q)), from_numpy(q))
    err = np.array([[float(abs(Dq[i][j] - exactD[i][j])) for j in range(len(xf))]
                    for i in range(len(xf))])  # fmt: skip
    assert np.all(err <= g * mag * (1 + 4 * U64))
    # spectrum of the symmetric part (Weyl + eigvalsh's own backward error)
    Ds = (D + D.T) / 2
    lam = np.linalg.eigvalsh(Ds)
    n2 = float(np.linalg.norm(mag, 2))
    assert lam.min() >= -(g * n2 + 8 * len(xf) * U64 * float(np.abs(lam).max()))


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
    # and it is q^T q itself: the only nonzero eigenvalue is |q|^2
    lam = np.linalg.eigvalsh((D + D.T) / 2)
    nq = float(q[0] @ q[0])
    assert abs(lam.max() - nq) <= (gamma(1, impl.u_compute) + 8 * dk * U64) * nq + 1e-300
    assert np.all(np.abs(lam[:-1]) <= (gamma(1, impl.u_compute) * dk + 8 * dk * U64) * nq)


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
