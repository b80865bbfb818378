"""Shared fixtures of the study's tests."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def child_bytecode():
    """Let the Python subprocesses of these tests (jobs, torchrun and its ranks) cache bytecode.

    With ``PYTHONDONTWRITEBYTECODE=1`` (set on some machines) every new process compiles
    torch's sources again: ~9 s of CPU per process, measured, against ~2 s with a cache. The
    cache goes to a folder of its own under the temporary directory (``PYTHONPYCACHEPREFIX``),
    not into the environment; sources are checked against it by their mtime as usual. The
    numbers do not depend on it. This process is not affected (both variables are read at
    start-up).
    """
    cache = Path(tempfile.gettempdir()) / f"pyverify-test-pycache-{os.getuid()}"
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        mp.setenv("PYTHONPYCACHEPREFIX", str(cache))
        yield
