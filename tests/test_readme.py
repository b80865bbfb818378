"""The README is a front door: the two commands on its first screen, the rest in docs/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text().splitlines()


def test_the_two_commands_are_in_the_first_40_lines():
    head = "\n".join(README[:40])
    assert ".venv/bin/pyverify report" in head
    assert "<!-- test-command -->" in head and "<!-- /test-command -->" in head


def test_the_readme_is_at_most_100_lines_and_links_the_reference_pages():
    assert len(README) <= 100
    text = "\n".join(README)
    for page in ("docs/commands.md", "docs/layout.md", "docs/study.md", "docs/conformance.md"):
        assert page in text and (ROOT / page).is_file()
