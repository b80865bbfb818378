"""Negative controls through the real toolchain: every cheat of ``cheats/`` must fail.

One package holds all cheats (six ``lean`` calls: the clean root, a module of
cheats that compile together, the native-evaluation cheats, a lemma resting on
an axiom and its lexically clean importer, and a false statement). Each cheat
must be reported with its file, its theorem or definition, and the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyverify.lean.build import BuildResult, build
from pyverify.lean.toolchain import Toolchain

pytestmark = pytest.mark.lean
CHEATS = Path(__file__).parent / "cheats"


@pytest.fixture
def result(cheats_result: BuildResult) -> BuildResult:
    """The session's one build of the cheat corpus (``conftest.py``)."""
    return cheats_result


def _messages(result: BuildResult) -> list[str]:
    return [f.format() for f in result.all_findings()]


# (file, what the message must contain): the theorem or definition and the reason.
EXPECTED = [
    ("Cheats/Basic.lean:", "theorem `Cheats.c_sorry` depends on the axiom `sorryAx`"),
    ("Cheats/Basic.lean:", "uses `sorry` (in `c_sorry`)"),
    ("Cheats/Basic.lean:", "theorem `Cheats.c_sorry_ax` depends on the axiom `sorryAx`"),
    ("Cheats/Basic.lean:", "uses `set_option warn.sorry` (in `c_sorry_ax`)"),
    ("Cheats/Basic.lean:", "theorem `Cheats.c_macro` depends on the axiom `sorryAx`"),
    ("Cheats/Basic.lean:", "declares the axiom `Cheats.c_axiom_fact`"),
    ("Cheats/Basic.lean:", "theorem `Cheats.c_axiom` depends on the axiom `Cheats.c_axiom_fact`"),
    ("Cheats/Basic.lean:", "`Cheats.c_impl` has @[implemented_by]"),
    ("Cheats/Basic.lean:", "`Cheats.c_extern` has @[extern]"),
    ("Cheats/Basic.lean:", "uses `debug.skipKernelTC` (in `c_skip_kernel`)"),
    ("Cheats/Basic.lean:", "`Cheats.c_unsafe_def` is declared `unsafe`"),
    ("Cheats/Basic.lean:", "uses `partial` (in `c_partial`)"),
    ("Cheats/Basic.lean:", "`Cheats.c_opaque` is an opaque constant"),
    ("Cheats/Native.lean:", "uses `native_decide` (in `c_native_decide`)"),
    ("Cheats/Native.lean:", "uses `decide +native` (in `c_decide_native`)"),
    (
        "Cheats/Indirect.lean:",
        "theorem `Cheats.c_indirect` depends on the axiom `Cheats.hidden_fact` "
        "(through `Cheats.lemma_from_axiom`)",
    ),
    ("Cheats/Wrong.lean:6:", "error"),
]


@pytest.mark.parametrize(("file", "needle"), EXPECTED, ids=[n[:40] for _, n in EXPECTED])
def test_each_cheat_fails_naming_file_theorem_and_reason(result: BuildResult, file, needle):
    messages = _messages(result)
    assert any(file in m and needle in m for m in messages), "\n".join(messages)


def test_only_the_clean_module_passes(result: BuildResult):
    assert not result.ok
    status = {m.name: m.status for m in result.modules}
    assert status.pop("Cheats") in ("built", "cached")
    assert set(status.values()) == {"failed"}, status
    assert not any("pkg/Cheats.lean" in m for m in _messages(result))


def test_native_evaluation_is_caught_in_the_compiled_constants(result: BuildResult):
    """`native_decide` leaves `Lean.ofReduceBool` in the proof (when Lean accepts it)."""
    native = next(m for m in result.modules if m.name == "Cheats.Native")
    text = "\n".join(f.format() for f in native.findings)
    if "error:" in text and "audit (" not in text:
        pytest.fail(f"Lean refused native evaluation; the kernel audit did not run:\n{text}")
    assert "`Lean.ofReduceBool`" in text, text


def test_lean_options_in_the_lakefile_are_refused_before_compiling(toolchain: Toolchain):
    result = build(CHEATS / "lakefile_options", toolchain, lib="Cheats")
    assert not result.ok
    assert {m.status for m in result.modules} == {"skipped"}  # no `lean` call was made
    messages = _messages(result)
    assert any("lakefile.toml:3:" in m and "`leanOptions`" in m for m in messages), messages
