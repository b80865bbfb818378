"""The precision facts, pinned by value (one place for each)."""

from __future__ import annotations

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
