"""``docs/plga-spec.md`` names every theorem ID with its Lean name, and the docs stay inside.

A new ID in :mod:`pyverify.theorems` needs a row in the page's theorem table, whose Lean
name is a declaration of ``lean/``; README.md and ``docs/`` link only to files of the
repository (a lone clone has no ``../shared``).
"""

from __future__ import annotations

import re
from pathlib import Path

from pyverify.paths import repo_root
from pyverify.theorems import THEOREM_IDS

ROOT = repo_root(Path(__file__).parent)
SPEC = ROOT / "docs" / "plga-spec.md"
_ROW = re.compile(r"^\| `(\w+)` \| `(Pldr\.\w+)` \| (.+) \|\s*$")


def _table() -> dict[str, tuple[str, str]]:
    rows = [_ROW.match(ln) for ln in SPEC.read_text("utf-8").splitlines()]
    return {m[1]: (m[2], m[3]) for m in rows if m}


def test_every_theorem_id_has_a_row_with_its_lean_name_and_statement():
    table = _table()
    assert sorted(table) == sorted(THEOREM_IDS), "docs/plga-spec.md section 9 vs pyverify.theorems"
    lean = "\n".join(p.read_text("utf-8") for p in (ROOT / "lean" / "Pldr").rglob("*.lean"))
    for theorem_id, (name, statement) in table.items():
        assert name == f"Pldr.{theorem_id}", (theorem_id, name)
        # the principal declaration exists, with the ID starting its docstring
        doc = rf"/--\s*\[{theorem_id}\](?:(?!-/).)*-/\s*"
        decl = re.search(rf"{doc}(@\[[^\]]*\]\s*)?theorem {theorem_id}\b", lean, re.S)
        assert decl, f"no `theorem {theorem_id}` with a [{theorem_id}] docstring in lean/Pldr"
        assert len(statement.split()) >= 8, (theorem_id, statement)


def _links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_readme_and_docs_link_only_inside_the_repository():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text("utf-8")
        assert "../shared" not in text and "shared/docs" not in text, page
        for link in _links(text):
            assert not re.match(r"[a-z]+:", link), f"{page.name}: {link} leaves the repository"
            target = (page.parent / link.split("#")[0]).resolve()
            assert target.is_relative_to(ROOT.resolve()) and target.exists(), (page.name, link)
    # the code's docstrings cite the spec by the page that ships with it
    for path in [*(ROOT / "pyverify").rglob("*.py"), *(ROOT / "examples").glob("*.py")]:
        assert "../shared" not in path.read_text("utf-8"), path
