"""Theorems declared in a Lean package's sources: names, IDs, files, lines, docstrings.

A theorem's ID is the ``[id]`` that starts its docstring; its full name is
found from the ``namespace`` blocks around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyverify.lean.project import Module, strip_comments, topo_order

_THEOREM = re.compile(r"(?<![\w.])theorem\s+([^\s(:{\[⦃]+)")
_ID = re.compile(r"^\s*\[([A-Za-z0-9_]+)\]")
_MODIFIERS = re.compile(r"(?:@\[[^\]]*\]|protected|private|noncomputable|nonrec|public)\s*$")
_SCOPE = re.compile(
    r"^\s*(?:(?:public|private|noncomputable)\s+)*(namespace|section|end)\b\s*([\w.]*)"
)


@dataclass(frozen=True)
class TheoremDecl:
    """A theorem found in the sources."""

    name: str
    theorem_id: str | None
    file: str
    line: int
    docstring: str


def _docstring_before(text: str, pos: int) -> str | None:
    """The docstring that ends right before ``pos`` (modifiers and attributes may intervene)."""
    head = text[:pos].rstrip()
    while True:
        m = _MODIFIERS.search(head)
        if not m or m.start() == m.end():
            break
        head = head[: m.start()].rstrip()
    if not head.endswith("-/"):
        return None
    start = head.rfind("/--")
    if start < 0:
        return None
    return head[start + 3 : -2].strip()


def _namespaces(stripped: str) -> list[str]:
    """The current namespace at the start of each line (index = line number - 1)."""
    stack: list[tuple[str, str]] = []
    at_line: list[str] = []
    for line in stripped.splitlines():
        at_line.append(".".join(n for kind, n in stack if kind == "namespace" and n))
        m = _SCOPE.match(line)
        if not m:
            continue
        kind, name = m.groups()
        if kind in ("namespace", "section"):
            stack.append((kind, name))
        elif stack:
            stack.pop()
    return at_line


def parse_theorems(modules: dict[str, Module]) -> list[TheoremDecl]:
    """Every non-private theorem of the package, in module order then file order."""
    found: list[TheoremDecl] = []
    for name in topo_order(modules):
        mod = modules[name]
        stripped = strip_comments(mod.source)
        spaces = _namespaces(stripped)
        for m in _THEOREM.finditer(stripped):
            line = stripped.count("\n", 0, m.start()) + 1
            line_text = stripped[stripped.rfind("\n", 0, m.start()) + 1 : m.start()]
            if "private" in line_text.split():
                continue
            doc = _docstring_before(mod.source, m.start())
            ns = spaces[line - 1]
            decl = m.group(1)
            full = (
                decl.removeprefix("_root_.")
                if decl.startswith("_root_.")
                else (f"{ns}.{decl}" if ns else decl)
            )
            idm = _ID.match(doc) if doc else None
            found.append(TheoremDecl(full, idm.group(1) if idm else None, mod.rel, line, doc or ""))
    return found
