"""Fixtures for the kernel tests: every test runs on CPU, and on CUDA when available."""

from __future__ import annotations

import pytest
from kernel_helpers import DEVICES


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return request.param
