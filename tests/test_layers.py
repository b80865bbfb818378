"""The house: `pyverify`'s packages import only downward, and no module is over 500 lines.

The order is written once, in ``pyproject.toml`` (``[tool.pyverify.layers]``). Every
``import`` and ``from ... import`` in a module counts, at module level or inside a
function, relative or absolute, and so does ``importlib.import_module("pyverify.x")``
with a literal name: Python lets a deferred import hide a loop, the contract does not.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pyverify"


def load_contract(pyproject: Path = ROOT / "pyproject.toml") -> tuple[list[list[str]], int]:
    """The floors (bottom first) and the line limit of ``[tool.pyverify.layers]``."""
    conf = tomllib.loads(pyproject.read_text())["tool"]["pyverify"]["layers"]
    return conf["floors"], conf["max_lines"]


def _unit(parts: tuple[str, ...]) -> str | None:
    """The contract's name for module ``pyverify.<parts>``: its package, or the module."""
    return parts[0] if parts else None


def _imported(module: tuple[str, ...], is_init: bool, tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every pyverify module that ``tree`` imports."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ("pyverify", *module) if is_init else ("pyverify", *module[:-1])
                base = base[: len(base) - node.level + 1]
                name = ".".join((*base, node.module) if node.module else base)
            else:
                name = node.module or ""
            # `from pyverify import x` / `from . import x` name the submodules x
            if name == "pyverify" or not node.module:
                found += [(node.lineno, f"{name}.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, name))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return [(line, n) for line, n in found if n == "pyverify" or n.startswith("pyverify.")]


def upward_imports(package: Path, floors: list[list[str]]) -> list[str]:
    """Every import of ``package`` that runs sideways or up the floors, as messages.

    Also a message for each module whose package or name has no floor.
    """
    level = {name: i for i, floor in enumerate(floors) for name in floor}
    problems: list[str] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).with_suffix("").parts
        is_init = rel[-1] == "__init__"
        module = rel[:-1] if is_init else rel
        src = _unit(module)
        if src is None:  # pyverify/__init__.py
            continue
        if src not in level:
            problems.append(f"pyverify/{'/'.join(rel)}.py: {src!r} has no floor in the contract")
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for line, name in _imported(module, is_init, tree):
            dst = _unit(tuple(name.split(".")[1:]))
            if dst is None or dst == src:
                continue
            if dst not in level:
                problems.append(f"pyverify/{'/'.join(rel)}.py:{line}: imports {name}, no floor")
            elif level[dst] >= level[src]:
                where = "its own floor" if level[dst] == level[src] else "a higher floor"
                problems.append(
                    f"pyverify/{'/'.join(rel)}.py:{line}: {src} imports {name} ({dst}, on {where})"
                )
    return problems


def long_modules(package: Path, max_lines: int) -> list[str]:
    """Modules of ``package`` over ``max_lines`` lines."""
    out = []
    for path in sorted(package.rglob("*.py")):
        n = len(path.read_text().splitlines())
        if n > max_lines:
            out.append(f"{path.relative_to(package.parent)}: {n} lines")
    return out


def test_every_import_runs_down_the_floors():
    floors, _ = load_contract()
    assert upward_imports(PACKAGE, floors) == []


def test_no_module_over_the_line_limit():
    _, max_lines = load_contract()
    assert long_modules(PACKAGE, max_lines) == []


def test_every_name_on_one_floor():
    floors, _ = load_contract()
    names = [n for floor in floors for n in floor]
    assert len(names) == len(set(names))
    on_disk = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    on_disk |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert on_disk == set(names), "a package or module without a floor, or a floor without one"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "pyverify"
    for rel, text in files.items():
        f = pkg / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return pkg


@pytest.mark.parametrize(
    "body",
    [
        "from pyverify.high import x\n",
        "import pyverify.high.mod\n",
        "def f():\n    from pyverify.high import x\n",  # deferred: still a dependency
        "def f():\n    from ..high import mod\n",
        "from pyverify import high\n",
        "import importlib\nm = importlib.import_module('pyverify.high.mod')\n",
    ],
)
def test_the_check_sees_an_upward_import(tmp_path, body):
    pkg = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "",
            "low/a.py": body,
            "high/__init__.py": "",
            "high/mod.py": "from pyverify.low import a\n",
        },
    )
    problems = upward_imports(pkg, [["low"], ["high"]])
    assert len(problems) == 1 and "low imports pyverify.high" in problems[0]


def test_the_check_sees_a_sideways_import_and_a_missing_floor(tmp_path):
    pkg = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pyverify import b\n",
            "b.py": "",
            "c/__init__.py": "from . import d\n",
            "c/d.py": "from pyverify.a import x\n",
        },
    )
    problems = upward_imports(pkg, [["a", "b"]])
    assert any("a imports pyverify.b" in p and "own floor" in p for p in problems)
    assert any("'c' has no floor" in p for p in problems)
    assert upward_imports(pkg, [["b"], ["a"], ["c"]]) == []


def test_the_line_limit_sees_a_long_module(tmp_path):
    pkg = _tree(tmp_path, {"__init__.py": "", "long.py": "x = 1\n" * 501, "ok.py": "x = 1\n"})
    assert long_modules(pkg, 500) == ["pyverify/long.py: 501 lines"]
