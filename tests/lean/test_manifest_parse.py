from pathlib import Path

from pyverify.lean.manifest import id_problems, parse_theorems
from pyverify.lean.project import load_package
from pyverify.theorems import THEOREM_IDS


def test_parse_theorems_names_ids_lines(tmp_path: Path):
    (tmp_path / "Pldr").mkdir()
    (tmp_path / "Pldr.lean").write_text("module\npublic import Pldr.A\n")
    (tmp_path / "Pldr" / "A.lean").write_text(
        "module\n\npublic section\nnamespace Pldr.Rope\n\n"
        "/-- [rope_group] rotations compose.\n  More text. -/\n"
        "@[simp]\ntheorem rope_group (a : Nat) : a = a := rfl\n\n"
        "/-- helper, no tag -/\nprotected theorem helper : True := trivial\n"
        "-- theorem commented_out : True := trivial\n"
        "section Inner\n/-- [bogus_id] x -/\ntheorem inner : True := trivial\nend Inner\n"
        "private theorem hidden : True := trivial\n"
        "end Pldr.Rope\n\ntheorem top_level : True := trivial\nend\n"
    )
    ts = parse_theorems(load_package(tmp_path))
    got = [(t.name, t.theorem_id, t.line) for t in ts]
    assert got == [
        ("Pldr.Rope.rope_group", "rope_group", 9),
        ("Pldr.Rope.helper", None, 12),
        ("Pldr.Rope.inner", "bogus_id", 16),
        ("top_level", None, 21),
    ]
    problems = id_problems(ts)
    assert any("unknown ID [bogus_id]" in p for p in problems)
    assert sum("no theorem carries" in p for p in problems) == len(THEOREM_IDS) - 1
