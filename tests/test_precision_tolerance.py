"""The precision facts and the tolerance policy, pinned by value (one place for each)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pyverify.precision import (
    DTYPE_NAMES,
    TORCH_DTYPES,
    UNIT_ROUNDOFF,
    canonical_dtype,
    compute_dtype,
    compute_roundoff,
    gamma,
)
from pyverify.tolerance import (
    CONTROL_FACTOR,
    TOL_FLOAT32,
    TOL_FLOAT64,
    TOL_LOW_FLOOR,
    control_bound,
    output_tolerance,
    stage_tolerances,
    within_control,
)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_unit_roundoff_is_half_the_machine_epsilon(name):
    assert UNIT_ROUNDOFF[name] == torch.finfo(TORCH_DTYPES[name]).eps / 2


@pytest.mark.parametrize(
    ("spelling", "name"),
    [("bf16", "bfloat16"), ("torch.half", "float16"), (" FP32 ", "float32"), ("double", "float64")],
)
def test_canonical_dtype_spellings(spelling, name):
    assert canonical_dtype(spelling) == name


def test_unknown_dtype_is_none():
    assert canonical_dtype("float8") is None


def test_compute_dtype_is_float32_below_float64():
    assert compute_dtype("float64") == torch.float64
    assert {compute_dtype(n) for n in DTYPE_NAMES[1:]} == {torch.float32}
    assert compute_roundoff("bfloat16") == UNIT_ROUNDOFF["float32"]


def test_gamma_matches_higham():
    u = UNIT_ROUNDOFF["float32"]
    assert gamma(10, u) == pytest.approx(10 * u / (1 - 10 * u), rel=0)
    assert gamma(1, u) > u  # first order u, plus the second-order term


def test_policy_values():
    assert (TOL_FLOAT64, TOL_FLOAT32, TOL_LOW_FLOOR) == (1e-12, 1e-5, 1e-6)
    assert stage_tolerances("float64") == (1e-12, 1e-12)
    assert stage_tolerances("float32") == (1e-5, 1e-5)
    assert stage_tolerances("bfloat16") == (1e-5, 1e-5 + 4 * 2.0**-16)

    def pair(dtype: str, e_sdpa: float, e_qg: float) -> tuple[float, ...]:
        return tuple(output_tolerance(dtype, p, e_sdpa, e_qg)[0] for p in ("uncached", "collapsed"))

    assert pair("float64", 1.0, 1.0) == (1e-12, 1e-12)
    assert pair("float32", 1e-7, 1e-6) == (1e-5, 1e-5)  # the floor wins
    assert pair("float32", 1e-7, 1e-4) == (2e-4, 2e-4)  # 2 x fl(Q G)'s error
    assert pair("float16", 1e-3, 4e-3) == (2e-3 + 1e-6, 8e-3 + 1e-6)


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16", "float16"])
@pytest.mark.parametrize("path", ["uncached", "collapsed"])
def test_one_function_gives_each_output_tolerance_with_its_rule(dtype, path):
    """The number and its rule come from one branch: the rule, read as arithmetic on the
    two control errors, gives the number (and None means a constant)."""
    e_sdpa, e_qg = 3e-4, 7e-4
    tol, rule = output_tolerance(dtype, path, e_sdpa, e_qg)
    if rule is None:
        assert tol == output_tolerance(dtype, path, 1.0, 1.0)[0]  # independent of the errors
        return
    fed = "Q" if "on Q " in rule or rule.endswith("on Q)") else "fl(Q G)"
    err = e_sdpa if fed == "Q" else e_qg
    k = CONTROL_FACTOR["output"]
    want = max(TOL_FLOAT32, k * err) if rule.startswith("max(") else k * err + TOL_LOW_FLOOR
    assert tol == want


def test_output_tolerance_rejects_an_unknown_path():
    with pytest.raises(ValueError, match="path"):
        output_tolerance("float32", "decoded", 1e-7, 1e-7)


def test_within_control_is_k_times_the_control_plus_floor():
    assert control_bound(3e-3, "output", floor=1e-6) == 2 * 3e-3 + 1e-6
    assert within_control(6e-3, 3e-3, "output")
    assert not within_control(np.nextafter(6e-3, 1.0), 3e-3, "output")
    with pytest.raises(KeyError):
        control_bound(1.0, "no such quantity")
