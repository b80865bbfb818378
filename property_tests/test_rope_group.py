"""rope_group: rot is a homomorphism into SO(2); likewise the block-diagonal R_n.

Float tolerances: a rotation entry is cos or sin of a float64 angle, within 1 ulp of
float64 (2 u64 absolute, |entry| <= 1), then rounded once to the implementation's dtype
(u_io): entry error ``e = 2 u64 + u_io``. A 2 x 2 product entry sums two products of such
entries: ``2 (2e + e^2) + gamma_2(u64)``. Angles: ``a + b`` and ``n theta_p`` are rounded in
float64 (theta_p <= 1, itself within 2 ulp): angle error ``<= 4 u64 (|a| + |b|)``, moving
an entry by as much (cos and sin are 1-Lipschitz).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.testing.exact import block_diag, eye, matmul, rot, transpose
from pyverify.testing.impls import ALL, UNIT_ROUNDOFF, gamma, impl_ids
from pyverify.testing.strategies import arrays, pythagorean

pytestmark = pytest.mark.theorem("rope_group")

U64 = UNIT_ROUNDOFF["float64"]
angles = st.floats(-200.0, 200.0, allow_nan=False, allow_infinity=False)
signed_positions = st.integers(-4096, 4096)


def _entry_error(impl) -> float:
    return 2 * U64 + impl.u_io


def _product_tol(impl, angle_sum: float) -> float:
    e = _entry_error(impl)
    return 2 * (2 * e + e * e) + gamma(2, U64) + e + 4 * U64 * angle_sum


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_rot_is_a_homomorphism_into_so2(impl, data):
    # The kernels build rotations only at integer positions (rope_matrix(n: int); with dk = 2,
    # theta_0 = 1, so the angle is n); the reference's rot2 takes any real angle.
    a, b = (data.draw(angles if impl.name == "reference" else st.integers(-200, 200))
            for _ in range(2))  # fmt: skip
    Ra, Rb, Rab = impl.rot2(a), impl.rot2(b), impl.rot2(a + b)
    tol = _product_tol(impl, abs(a) + abs(b))
    assert np.max(np.abs(Ra @ Rb - Rab)) <= tol  # rot(a) rot(b) = rot(a + b)
    assert np.max(np.abs(Ra.T - impl.rot2(-a))) <= 2 * _entry_error(impl)  # rot(a)^T = rot(-a)
    assert np.max(np.abs(Ra @ Ra.T - np.eye(2))) <= tol  # orthogonal
    e = _entry_error(impl)
    assert abs(np.linalg.det(Ra) - 1.0) <= 2 * (2 * e + e * e) + gamma(2, U64)  # special


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4, 6, 8, 16, 64]), signed_positions, signed_positions)
def test_block_rotations_compose(impl, dk, m, n):
    Rm, Rn, Rmn = (impl.rotation_matrix(x, dk) for x in (m, n, m + n))
    tol = _product_tol(impl, abs(m) + abs(n))
    assert np.max(np.abs(Rm @ Rn - Rmn)) <= tol  # R_m R_n = R_{m+n}
    assert np.max(np.abs(Rm.T - impl.rotation_matrix(-m, dk))) <= 2 * _entry_error(impl) + (
        4 * U64 * abs(m)
    )  # R_m^T = R_{-m}
    assert np.max(np.abs(Rm @ Rm.T - np.eye(dk))) <= tol  # orthogonal
    # block diagonal: nothing outside the 2 x 2 planes
    mask = np.kron(np.eye(dk // 2), np.ones((2, 2))) == 0
    assert np.all(Rm[mask] == 0)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4, 8, 16]), st.integers(1, 5), st.integers(0, 4096),
       st.integers(0, 4096), st.data())  # fmt: skip
def test_rope_application_composes(impl, dk, rows, a, b, data):
    """Rotating a row at position a, then at b, is rotating it at a + b (R_b R_a = R_{a+b})."""
    x = impl.round(data.draw(arrays((rows, 1, dk), 2.0), label="x"))
    twice = impl.rope(impl.rope(x, offset=a), offset=b)
    once = impl.rope(x, offset=a + b)
    # One application: cos/sin of the float64 angle rounded to the compute dtype
    # (u_c + 2 u64 + angle error 4 u64 (a + b)), the 2-term plane rotation in the compute
    # dtype (gamma_2(u_c)), the result rounded to the dtype (u_io): per entry at most
    # rho * eps_1 with rho the largest plane 1-norm |x_2p| + |x_2p+1|. Rotations keep plane
    # 2-norms, so a propagated error grows by <= sqrt 2 entrywise; three applications.
    alpha = 4 * U64 * (a + b)
    eps_1 = 2 * (impl.u_compute + 2 * U64 + alpha) + gamma(2, impl.u_compute) + impl.u_io
    rho = float(np.max(np.abs(x[..., 0::2]) + np.abs(x[..., 1::2])))
    assert np.max(np.abs(twice - once)) <= 4 * math.sqrt(2) * rho * eps_1


# --------------------------------------------------------------------------- exact
@pytest.mark.implementation("reference", dtype="exact")
@given(pythagorean(nonzero_sin=False), pythagorean(nonzero_sin=False))
def test_rational_rotations_form_a_group_exactly(p1, p2):
    """Exact: rational points (c, s) of the unit circle; rot(c1, s1) rot(c2, s2) is the
    rotation by the sum angle, (c1 c2 - s1 s2, s1 c2 + c1 s2); rot^T = rot(c, -s) is the
    inverse; det = c^2 + s^2 = 1."""
    (c1, s1), (c2, s2) = p1, p2
    assert c1 * c1 + s1 * s1 == 1
    R1, R2 = rot(c1, s1), rot(c2, s2)
    assert matmul(R1, R2) == rot(c1 * c2 - s1 * s2, s1 * c2 + c1 * s2)
    assert matmul(R1, R2) == matmul(R2, R1)  # SO(2) is abelian
    assert transpose(R1) == rot(c1, -s1)
    assert matmul(R1, transpose(R1)) == eye(2)
    assert R1[0][0] * R1[1][1] - R1[0][1] * R1[1][0] == 1


@pytest.mark.implementation("reference", dtype="exact")
@given(st.lists(st.tuples(pythagorean(False), pythagorean(False)), min_size=1, max_size=4))
def test_rational_block_rotations_compose_exactly(planes):
    """Exact: block-diagonal R, R' of rational rotations: R R' is the block-diagonal of the
    per-plane products, R R^T = I."""
    A = block_diag([rot(c, s) for (c, s), _ in planes])
    B = block_diag([rot(c, s) for _, (c, s) in planes])
    AB = block_diag([rot(c1 * c2 - s1 * s2, s1 * c2 + c1 * s2) for (c1, s1), (c2, s2) in planes])
    assert matmul(A, B) == AB
    assert matmul(A, transpose(A)) == eye(2 * len(planes))
