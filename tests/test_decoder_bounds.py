"""The decoder bounds' own parts: exact conversions and the RoPE certificate.

The composed bounds are held against the implementations by
``property_tests/test_fp_decoder_step.py`` and ``test_fp_cached_decode.py``; here, what
those tests cannot see: that an exact value keeps its sign on its way to a Fraction (a
LayerNorm bound on ``|x|`` instead of ``x`` still passes them), and that the rotation
certificate measures the table an implementation really uses.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from pyverify.reference.rope import apply_rope
from pyverify.testing.impls import REFERENCE
from pyverify.testing.rope_bounds import rotations
from pyverify.testing.stage_bounds import mp_context, mpf_fraction


@pytest.mark.parametrize("v", [-0.75, 0.75, 0.0, -3.0, 2.0**-1074, -2.5e10, 1 / 3])
def test_mpf_fraction_is_exact_and_keeps_the_sign(v):
    assert mpf_fraction(mpmath.mpf(v)) == Fraction(v)


def test_the_reference_rope_table_is_certified_near_its_rounding():
    rot = rotations(REFERENCE, 5, 4, 10000.0, mp_context())
    # float64 cos/sin of a float64 angle: within a few units of the last place of 1
    assert 0 < rot.e_c.max() < np.spacing(1.0) * 4
    assert rot.e_s.max() < np.spacing(1.0) * 4


class _Shifted:
    """An implementation whose rope rotates one position too far."""

    def rope(self, x, *, offset: int = 0):
        return apply_rope(x, offset=offset + 1)


def test_a_wrong_rope_table_shows_in_the_certificate():
    rot = rotations(_Shifted(), 5, 4, 10000.0, mp_context())
    assert rot.e_c.max() > 0.1  # one radian of plane 0 off: the certificate sees it
