"""Fixtures of the report tests."""

from __future__ import annotations

import pytest
from report_helpers import Fake


@pytest.fixture
def fake(tmp_path) -> Fake:
    return Fake(tmp_path)
