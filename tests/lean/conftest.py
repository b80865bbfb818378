"""Fixtures shared by the Lean tests: one toolchain and one build of each package per session.

Every ``lean`` call on the embedded toolchain costs seconds of CPU, so a package that
several tests read (the cheat corpus, the library) is built once per session and the
tests check the one result; a test whose subject is the build itself (cold build, cache,
rebuild after an edit) still builds its own package.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyverify.lean.build import BuildResult, build
from pyverify.lean.install import find_toolchain
from pyverify.lean.toolchain import Toolchain
from pyverify.paths import repo_root

CHEATS = Path(__file__).parent / "cheats"


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    """The toolchain the Lean tests use (installed when missing)."""
    return find_toolchain("auto", progress=print)


@pytest.fixture(scope="session")
def cheats_result(toolchain: Toolchain) -> BuildResult:
    """The cheat corpus ``cheats/pkg``, built once."""
    return build(CHEATS / "pkg", toolchain, jobs=2, progress=print, lib="Cheats")


@pytest.fixture(scope="session")
def library_result(toolchain: Toolchain) -> BuildResult:
    """The library ``lean/``, built once (a no-op when ``pyverify lean build`` ran first)."""
    return build(repo_root() / "lean", toolchain, progress=print)
