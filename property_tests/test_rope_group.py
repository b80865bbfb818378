"""rope_group: rot is a homomorphism into SO(2); likewise the block-diagonal R_n.

Float tolerances (:mod:`pyverify.testing.rope_bounds`): the exact rotations are those of
the implementation's own float64 frequencies (the group laws hold for every real
``theta``), so an angle ``n theta^_p`` or ``a + b`` is off by its one float64 rounding
(``[fp_ieee_rounding]``); a rotation entry is the library ``cos``/``sin`` of it
(``TRIG_ACCURACY``, checked against mpmath on the drawn angles) rounded once to the
implementation's dtype (``[fp_elementwise]``, ``L = 1``); a product of two computed
rotations, evaluated in float64, is ``[fp_dot_product]`` with the entries' errors carried;
two computed values are compared within the sum of their bounds.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.fp.formulas import UNDERFLOW
from pyverify.reference import rope_thetas
from pyverify.testing.exact import block_diag, eye, matmul, rot, transpose
from pyverify.testing.fp import arith
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.rope_bounds import (
    PLANE,
    angle_rounding,
    entry_error,
    plane_blocks,
    plane_norm1,
    product_error,
    rope_row_error,
    rotated_error,
    trig_excess,
)
from pyverify.testing.strategies import arrays, pythagorean

pytestmark = pytest.mark.theorem("rope_group")

angles = st.floats(-200.0, 200.0, allow_nan=False, allow_infinity=False)
signed_positions = st.integers(-4096, 4096)


def _entries(impl, angle_err, dk: int) -> np.ndarray:
    """Entrywise error bound of a computed ``R`` (dk, dk): the rotation entries' on the
    planes (rounded to the dtype), 0 off them (exact zeros)."""
    e = entry_error(angle_err, impl.u_io, UNDERFLOW[impl.dtype])
    return plane_blocks(dk) * e


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.data())
def test_rot_is_a_homomorphism_into_so2(impl, data):
    # The kernels build rotations only at integer positions (rope_matrix(n: int); with dk = 2,
    # theta_0 = 1, so the angle is n); the reference's rot2 takes any real angle.
    a, b = (data.draw(angles if impl.name == "reference" else st.integers(-200, 200))
            for _ in range(2))  # fmt: skip
    assert trig_excess([a, b, a + b], impl.device) <= 1  # the premise TRIG_ACCURACY
    Ra, Rb, Rab = impl.rot2(a), impl.rot2(b), impl.rot2(a + b)
    # a, b are float64 numbers times theta_0 = 1: exact angles; a + b is rounded once
    Ea, Eb, Eab = (_entries(impl, err, PLANE) for err in (0.0, 0.0, angle_rounding(a + b)))
    Aa, Ab = np.abs(Ra), np.abs(Rb)
    # rot(a) rot(b) = rot(a + b)
    assert np.all(np.abs(Ra @ Rb - Rab) <= product_error(Aa, Ab, Ea, Eb) + Eab)
    # rot(a)^T = rot(-a)
    assert np.all(np.abs(Ra.T - impl.rot2(-a)) <= Ea.T + Ea)
    # orthogonal: rot(a) rot(a)^T = I exactly
    assert np.all(np.abs(Ra @ Ra.T - np.eye(2)) <= product_error(Aa, Aa.T, Ea, Ea.T))
    # special: det = c c - (-s) s = 1, the dot product of (R00, R01) and (R11, -R10)
    u, v = Ra[0], np.array([Ra[1, 1], -Ra[1, 0]])
    assert abs(float(u @ v) - 1.0) <= product_error(np.abs(u), np.abs(v), Ea[0], Ea[0])


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4, 6, 8, 16, 64]), signed_positions, signed_positions)
def test_block_rotations_compose(impl, dk, m, n):
    th = rope_thetas(dk)
    assert trig_excess(np.outer([m, n, m + n], th), impl.device) <= 1  # TRIG_ACCURACY
    Rm, Rn, Rmn = (impl.rotation_matrix(x, dk) for x in (m, n, m + n))
    # theta^_p <= 1 (theta^_0 = pow(base, -0) = 1): an angle n theta^_p rounds within u64 |n|
    Em, En, Emn = (_entries(impl, angle_rounding(x), dk) for x in (m, n, m + n))
    Am, An = np.abs(Rm), np.abs(Rn)
    assert np.all(np.abs(Rm @ Rn - Rmn) <= product_error(Am, An, Em, En) + Emn)  # R_m R_n
    # R_m^T = R_{-m} (fl(-m theta) = -fl(m theta): the same bound)
    assert np.all(np.abs(Rm.T - impl.rotation_matrix(-m, dk)) <= Em.T + Em)
    assert np.all(np.abs(Rm @ Rm.T - np.eye(dk)) <= product_error(Am, Am.T, Em, Em.T))
    # block diagonal: nothing outside the 2 x 2 planes
    assert np.all(Rm[plane_blocks(dk) == 0] == 0)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4, 8, 16]), st.integers(1, 5), st.integers(0, 4096),
       st.integers(0, 4096), st.data())  # fmt: skip
def test_rope_application_composes(impl, dk, rows, a, b, data):
    """Rotating a row at position a, then at b, is rotating it at a + b (R_b R_a = R_{a+b}).

    Each application within :func:`rope_row_error` of the exact rotation of its own input
    (by its plane 1-norms); the first one's error carried through the exact second
    rotation (:func:`rotated_error`); the two results compared: the sum of the bounds.
    """
    assert trig_excess(np.outer([a, b, a + b], rope_thetas(dk)), impl.device) <= 1
    ar = arith(impl)
    x = impl.round(data.draw(arrays((rows, 1, dk), 2.0), label="x"))
    y = impl.rope(x, offset=a)
    twice = impl.rope(y, offset=b)
    once = impl.rope(x, offset=a + b)
    e_a = rope_row_error(ar, plane_norm1(x), angle_rounding(a))
    e_twice = rope_row_error(ar, plane_norm1(y), angle_rounding(b)) + rotated_error(e_a)
    e_once = rope_row_error(ar, plane_norm1(x), angle_rounding(a + b))
    assert np.all(np.abs(twice - once) <= e_twice + e_once)


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
