"""End-to-end: a clean package through the real Lean toolchain (the negative
controls are in ``test_cheats.py``).

These compile real files (about 15-40 s per ``lean`` call on the embedded
WebAssembly toolchain, two at a time). They never skip: the toolchain is
installed by the ``toolchain`` fixture when missing.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pyverify.lean.audit import ALLOWED_AXIOMS
from pyverify.lean.build import build
from pyverify.lean.manifest import manifest
from pyverify.lean.toolchain import Toolchain

pytestmark = pytest.mark.lean

GOOD = """module

public section
namespace Pldr.Good

/-- Doubling, exposed so importers may unfold it. -/
@[expose] def double (n : Nat) : Nat := n + n

/-- [softmax_shift] a stand-in statement (the word sorry in a comment is harmless). -/
theorem double_eq (n : Nat) : double n = 2 * n := by unfold double; omega

/-- [rope_group] implicit arguments make Lean print the statement as `@name : ...`. -/
theorem comm_implicit {α : Type} (f : α → α → α) (h : ∀ a b, f a b = f b a) (x y : α) :
    f x y = f y x := h x y

end Pldr.Good
end
"""

USES = """module

public import Pldr.Good

public section

/-- [sdpa_special_case] a theorem about an imported definition. -/
theorem Pldr.double_add (a b : Nat) :
    Pldr.Good.double (a + b) = Pldr.Good.double a + Pldr.Good.double b := by
  unfold Pldr.Good.double; omega

end
"""


def make_package(root: Path, files: dict[str, str]) -> Path:
    (root / "lakefile.toml").write_text('name = "Pldr"\n')
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    imports = "".join(f"public import {rel[:-5].replace('/', '.')}\n" for rel in files)
    (root / "Pldr.lean").write_text("module\n\n" + imports)
    return root


def test_clean_package_builds_caches_and_lists_theorems(toolchain: Toolchain, tmp_path: Path):
    project = make_package(tmp_path, {"Pldr/Good.lean": GOOD, "Pldr/Uses.lean": USES})
    first = build(project, toolchain, progress=print)
    assert first.ok, [f.format() for f in first.all_findings()]
    assert {m.status for m in first.modules} == {"built"}

    start = time.monotonic()
    again = build(project, toolchain)
    assert again.ok and {m.status for m in again.modules} == {"cached"}
    assert time.monotonic() - start < 5.0  # the bound for a no-op rebuild

    data = manifest(project, toolchain)
    rows = {t["name"]: t for t in data["theorems"]}
    assert rows["Pldr.Good.double_eq"]["theorem_id"] == "softmax_shift"
    assert rows["Pldr.Good.double_eq"]["statement"] == "∀ (n : Nat), Pldr.Good.double n = 2 * n"
    assert rows["Pldr.double_add"]["statement"].startswith(
        "∀ (a b : Nat), Pldr.Good.double (a + b)"
    )
    for row in rows.values():  # the kernel audit's answer, within the allowed axioms
        assert set(row["axioms"]) <= ALLOWED_AXIOMS, row
    assert rows["Pldr.Good.comm_implicit"]["axioms"] == []  # `h x y`: no axiom at all
    assert rows["Pldr.Good.comm_implicit"]["axioms_exact"]
    implicit = rows["Pldr.Good.comm_implicit"]["statement"]
    assert implicit.startswith("∀ {α : Type} (f : α → α → α)"), implicit

    # editing a module rebuilds it and its importers, nothing else: the module it
    # imports stays cached
    (project / "Pldr" / "Uses.lean").write_text(
        USES.replace("a theorem about", "a theorem (edited) about")
    )
    third = build(project, toolchain)
    assert third.ok
    assert {m.name: m.status for m in third.modules} == {
        "Pldr.Good": "cached",
        "Pldr.Uses": "built",
        "Pldr": "built",
    }
