"""The package layout: no loose module at the top of ``pyverify/``, no import circle."""

from __future__ import annotations

import ast
from pathlib import Path

import pyverify

ROOT = Path(pyverify.__file__).parent
# The shared facts every package draws on, and the CLI; everything else lives in a package.
TOP_LEVEL = {"__init__", "dispatch", "errors", "host", "output", "paths", "precision", "tolerance"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Every pyverify module ``path`` imports, at module level or inside a function."""
    is_pkg = path.name == "__init__.py"
    base = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                anchor = base.split(".")[: len(base.split(".")) - node.level + 1]
                mod = ".".join([*anchor, mod] if mod else anchor)
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


def test_no_loose_module_at_the_top():
    loose = sorted(p.stem for p in ROOT.glob("*.py") if p.stem not in TOP_LEVEL)
    assert loose == [], f"modules outside a package at pyverify/ top level: {loose}"


def test_no_import_circle():
    mods = _modules()
    graph = {name: _imports(path, name, set(mods)) for name, path in mods.items()}
    # A package's __init__ re-exporting its own submodules is not a circle: the edge from a
    # submodule up to its package is implied by Python, so drop package -> own-submodule edges.
    for name in graph:
        graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == [], "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_walker_sees_a_circle(tmp_path):
    """The walker finds both kinds of edge (module level and inside a function)."""
    a = tmp_path / "a.py"
    a.write_text("from pkg.b import x\n")
    b = tmp_path / "b.py"
    b.write_text("def f():\n    from pkg.a import y\n")
    known = {"pkg.a", "pkg.b"}
    assert _imports(a, "pkg.a", known) == {"pkg.b"}
    assert _imports(b, "pkg.b", known) == {"pkg.a"}
