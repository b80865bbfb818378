"""order_parameter_rms_bound: the RMS form of the pairwise order parameter is at most 2.

The spec (``audit_lib.order_pair``, Lean ``Pldr.order_parameter_rms_bound``), written out
here as the oracle in 60-digit mpmath::

    num = sqrt(mean((x1 - x2)^2)),  r_i = sqrt(mean(x_i^2)),
    form = num / (0.5 (r1 + r2))  (0 when num = 0),  and  0 <= form <= 2.

Implementations: the torch measurement the collapse study and the claims ledger use
(``pyverify.measure.order.order_pair``, attributed to ``kernels``: it is the suite's
torch side, float64 and float32) and the independent float64 NumPy
:func:`pyverify.reference.order_parameter.order_parameter_rms` (``reference``).

Tolerance (both, any summation order). Each rounding is a factor ``(1 + d)``,
``|d| <= u`` (``u = 2^-53`` float64, ``2^-24`` float32). ``num``: the difference and its
square (3 factors), at most ``n - 1`` additions, the division by ``n``, halved by the
square root, plus the root: at most ``(n + 5)/2`` factors. ``r_i``: ``(n + 3)/2``. Then
``r1 + r2`` and the final division: 2. So the computed form is the exact one times at most
``n + 6`` factors ``(1 + d)^(+-1)``, i.e. within a relative ``gamma_{n+6}``
(``gamma_k = k u / (1 - k u)``, Higham Lemma 3.1), and at most ``2 (1 + gamma_{n+6})``.
The ``1/2`` is exact; inputs are in ``[1e-3, 1e3]`` or 0, so no square under- or
overflows. ``x2 = -c x1`` (``c > 0``) attains 2 exactly in exact arithmetic, the case
that tests the excess; ``c = 1`` is exact in binary floating point too (``(2x)^2 = 4 x^2``,
``sqrt(4m) = 2 sqrt(m)``) and is asserted to be exactly 2.0.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pyverify.measure.order import order_pair
from pyverify.precision import UNIT_ROUNDOFF, gamma
from pyverify.reference.order_parameter import order_parameter_rms
from pyverify.testing.strategies import arrays, examples

pytestmark = pytest.mark.theorem("order_parameter_rms_bound")

U = {torch.float64: UNIT_ROUNDOFF["float64"], torch.float32: UNIT_ROUNDOFF["float32"]}
#: [order_parameter_rms_bound] The statement's upper bound: the RMS form is at most 2.
RMS_MAX = 2.0

TORCH = [
    pytest.param(
        dt,
        marks=pytest.mark.implementation("kernels", dtype=str(dt).removeprefix("torch.")),
        id=str(dt).removeprefix("torch."),
    )
    for dt in (torch.float64, torch.float32)
]
REFERENCE = pytest.mark.implementation("reference", dtype="float64")


def spec_form(x1: np.ndarray, x2: np.ndarray) -> mpmath.mpf:
    """The spec in 60-digit arithmetic (the float inputs are exact binary numbers)."""
    with mpmath.workdps(60):
        a = [mpmath.mpf(float(v)) for v in x1.ravel()]
        b = [mpmath.mpf(float(v)) for v in x2.ravel()]
        n = len(a)
        num = mpmath.sqrt(mpmath.fsum((p - q) ** 2 for p, q in zip(a, b, strict=True)) / n)
        if num == 0:
            return mpmath.mpf(0)
        r1 = mpmath.sqrt(mpmath.fsum(p**2 for p in a) / n)
        r2 = mpmath.sqrt(mpmath.fsum(q**2 for q in b) / n)
        return num / ((r1 + r2) / 2)


@st.composite
def pairs(draw):
    """``(x1, x2)``: independent, near each other, ``-c x1`` (the bound), ``x1`` (zero)."""
    shape = draw(st.sampled_from([(1,), (2,), (7,), (64,), (3, 5), (4, 8)]))
    x1 = draw(arrays(shape, scale=1e3))
    kind = draw(st.sampled_from(["independent", "near", "opposite", "equal"]))
    if kind == "independent":
        x2 = draw(arrays(shape, scale=1e3))
    elif kind == "near":
        x2 = x1 + draw(arrays(shape, scale=1.0)) * 1e-3
    elif kind == "opposite":
        c = draw(st.sampled_from([1.0, 0.5, 3.0, 1e-2, 1 / 3]))
        x2 = -c * x1
    else:
        x2 = x1.copy()
    return x1, x2


def _check(form: float, x1: np.ndarray, x2: np.ndarray, u: float) -> None:
    """``0 <= form <= 2 (1 + gamma_{n+6})`` and ``form`` is the spec to ``gamma_{n+6}``."""
    g = gamma(x1.size + 6, u)
    want = spec_form(x1, x2)
    # the theorem, in 60-digit arithmetic: each of the spec's three square roots and two
    # divisions rounds at 60 digits, so at the sharp case x2 = -c x1 (form exactly 2) the
    # computed value may exceed 2 by a few units of 1e-60; 1e-55 covers them (the
    # difference is taken first: at mpmath's default 15 digits 2 + 1e-55 would round to 2)
    assert want - RMS_MAX <= mpmath.mpf(10) ** -55
    assert 0.0 <= form <= RMS_MAX * (1 + g)
    assert abs(mpmath.mpf(form) - want) <= g * want


@pytest.mark.parametrize("dtype", TORCH)
@given(pairs())
@examples(60)
def test_torch_rms_form_at_most_two(dtype, case):
    x1, x2 = (torch.from_numpy(x).to(dtype) for x in case)
    form, _ = order_pair(x1, x2)
    # the oracle sees the inputs the implementation saw (float32: rounded once)
    _check(form, x1.double().numpy(), x2.double().numpy(), U[dtype])


@REFERENCE
@given(pairs())
@examples(60)
def test_reference_rms_form_at_most_two(case):
    x1, x2 = case
    _check(order_parameter_rms(x1, x2), x1, x2, U[torch.float64])


@pytest.mark.parametrize("dtype", TORCH)
@given(arrays((16,), scale=1e3).filter(lambda x: np.any(x != 0)))
def test_torch_opposite_rows_give_exactly_two(dtype, x):
    form, _ = order_pair(torch.from_numpy(x).to(dtype), torch.from_numpy(-x).to(dtype))
    assert form == 2.0


@REFERENCE
@given(arrays((16,), scale=1e3).filter(lambda x: np.any(x != 0)))
def test_reference_opposite_rows_give_exactly_two(x):
    assert order_parameter_rms(x, -x) == 2.0


@pytest.mark.parametrize("dtype", TORCH)
def test_torch_equal_rows_give_zero(dtype):
    x = torch.tensor([[0.0, 1.5], [-2.0, 3.0]], dtype=dtype)
    assert order_pair(x, x.clone()) == (0.0, 0.0)
    assert order_pair(torch.zeros(3, dtype=dtype), torch.zeros(3, dtype=dtype)) == (0.0, 0.0)


@REFERENCE
def test_reference_equal_rows_give_zero_and_bad_input_is_refused():
    x = np.array([[0.0, 1.5], [-2.0, 3.0]])
    assert order_parameter_rms(x, x.copy()) == 0.0
    assert order_parameter_rms(np.zeros(3), np.zeros(3)) == 0.0
    with pytest.raises(ValueError, match="one shape"):
        order_parameter_rms(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="finite"):
        order_parameter_rms(np.array([1.0, np.inf]), np.ones(2))
    with pytest.raises(ValueError, match="at least one entry"):
        order_parameter_rms(np.zeros(0), np.zeros(0))


@REFERENCE
@given(pairs(), st.sampled_from([-1000, -600, 0, 600, 900]))
@examples(20)
def test_reference_is_scale_invariant_over_the_whole_range(case, e):
    """Scaling both rows by ``2^e`` is exact (entries stay normal: ``|x| 2^e`` in
    ``[2^-1010, 2^910]``), and the reference rescales internally, so the form is the same
    bits where the squares of the scaled rows would under- or overflow."""
    x1, x2 = case
    assert order_parameter_rms(np.ldexp(x1, e), np.ldexp(x2, e)) == order_parameter_rms(x1, x2)
