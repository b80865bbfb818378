"""The native path's wiring: ``lake build``, the kernel audit and ``#print axioms`` must agree.

No native toolchain can be installed here, so ``lake`` is replaced by a stub
and the ``.olean`` files are synthetic (8-byte pointers, as on x86-64).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from olean_builder import OleanWriter

from pyverify.lean.build import build
from pyverify.lean.toolchain import LeanRun, NativeToolchain


class StubLake(NativeToolchain):
    def __init__(self, lib: Path, printed: str) -> None:
        super().__init__("lake", "lean")
        self.lib, self.printed = lib, printed

    def version(self) -> str:
        return "Lean (version 4.28.0, x86_64-unknown-linux-gnu)"

    def library_dirs(self) -> list[Path]:
        return [self.lib]

    def lake_build(self, project: Path, timeout: float = 7200.0) -> LeanRun:
        return LeanRun(0, "Build completed successfully.\n")

    def run_generated(
        self, project: Path, stem: str, text: str, args: Sequence[str] = ()
    ) -> LeanRun:
        assert "#print axioms thm" in text
        return LeanRun(0, self.printed)


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "proj"
    (project / ".lake" / "build" / "lib" / "lean").mkdir(parents=True)
    (project / "lakefile.toml").write_text('name = "Demo"\n')
    (project / "Demo.lean").write_text("module\n\n/-- a fact -/\ntheorem thm : True := trivial\n")
    w = OleanWriter(8, 0x7F0000000000)
    prop = w.sort0()
    root = w.module_data(["Init"], [("thm", w.constant(2, "thm", prop, w.const("propext")))])
    (project / ".lake" / "build" / "lib" / "lean" / "Demo.olean").write_bytes(w.image(root))
    (project / ".lake" / "build" / "lib" / "lean" / "Demo.olean.private").write_bytes(
        _private_part()
    )
    lib = tmp_path / "lib"
    lib.mkdir()
    iw = OleanWriter(8, 0x7E0000000000)
    init = iw.module_data([], [("propext", iw.constant(0, "propext", iw.sort0()))])
    (lib / "Init.olean").write_bytes(iw.image(init))
    return project, lib


def _private_part() -> bytes:
    """The private part: the same module data, written for the next base address."""
    pw = OleanWriter(8, 0x7F0000100000)
    prop = pw.sort0()
    proot = pw.module_data(["Init"], [("thm", pw.constant(2, "thm", prop, pw.const("propext")))])
    return pw.image(proot)


@pytest.mark.parametrize(
    ("printed", "problem"),
    [
        ("'thm' depends on axioms: [propext]\n", None),
        ("'thm' depends on axioms: [propext, sorryAx]\n", "theorem `thm` depends on sorryAx"),
        ("'thm' does not depend on any axioms\n", "#print axioms says [], the .olean reader"),
    ],
)
def test_print_axioms_and_reader_must_agree(tmp_path: Path, printed: str, problem: str | None):
    project, lib = _project(tmp_path)
    result = build(project, StubLake(lib, printed), lib="Demo")
    messages = [f.format() for f in result.all_findings()]
    if problem is None:
        assert result.ok, messages
    else:
        assert not result.ok and any(problem in m for m in messages), messages
