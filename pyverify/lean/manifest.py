"""The theorem manifest: every theorem of the library, its ID and its statement.

Names, IDs, files and lines are read from the sources (a theorem's ID is the
``[id]`` that starts its docstring). Statements are the elaborated types as
Lean prints them, from ``#check @name`` in a generated file that imports the
built library; they are cached by the library's content key.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from pyverify.lean.messages import parse_json_output
from pyverify.lean.project import Module, load_package, module_keys, strip_comments, topo_order
from pyverify.lean.toolchain import NativeToolchain, Toolchain, ToolchainError, WasmToolchain
from pyverify.theorems import THEOREM_IDS

Progress = Callable[[str], None]

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


def id_problems(theorems: list[TheoremDecl]) -> list[str]:
    """Missing or unknown theorem IDs, as messages."""
    seen = {t.theorem_id for t in theorems if t.theorem_id}
    problems = [f"no theorem carries the ID [{i}]" for i in THEOREM_IDS if i not in seen]
    problems += [
        f"{t.file}:{t.line}: {t.name} carries the unknown ID [{t.theorem_id}]"
        for t in theorems
        if t.theorem_id and t.theorem_id not in THEOREM_IDS
    ]
    return problems


def _normalise(statement: str) -> str:
    return " ".join(statement.split())


def statements(
    project: Path,
    tc: Toolchain,
    theorems: list[TheoremDecl],
    modules: dict[str, Module],
    progress: Progress | None = None,
    lib: str = "Pldr",
) -> dict[str, str]:
    """Elaborated statements via ``#check @name``; the library must be built.

    Raises
    ------
    ToolchainError
        When Lean fails on the generated file or omits a statement.
    """
    say = progress or (lambda _msg: None)
    keys = module_keys(modules, salt=tc.version())
    names = [t.name for t in theorems]
    digest = hashlib.sha256(json.dumps([sorted(keys.items()), names]).encode()).hexdigest()
    gen_text = f"import {lib}\n" + "".join(f"#check @{n}\n" for n in names)
    if isinstance(tc, WasmToolchain):
        from pyverify.lean.build import stage_dir

        stage = stage_dir(tc, project)
        cache = stage / f"manifest-{digest}.json"
        if cache.exists():
            return json.loads(cache.read_text())
        workdir, lean_path, rel = stage / "src", [stage / "build"], "PyverifyGenManifest.lean"
        (workdir / rel).write_text(gen_text)
        say(f"elaborating {len(names)} theorem statements (#check) ...")
        run = tc.run_lean(["--json", rel], cwd=workdir, lean_path=lean_path)
        output = run.output
    elif isinstance(tc, NativeToolchain):
        gen = project / ".lake" / "pyverify"
        gen.mkdir(parents=True, exist_ok=True)
        cache = gen / f"manifest-{digest}.json"
        if cache.exists():
            return json.loads(cache.read_text())
        (gen / "Manifest.lean").write_text(gen_text)
        output = tc.lake_env_lean(project, ["--json", str(gen / "Manifest.lean")]).output
    else:
        raise TypeError(f"unsupported toolchain {tc!r}")
    diagnostics, _ = parse_json_output(output)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise ToolchainError(f"#check failed: {errors[0].format()} (is the library built?)")
    by_line = {d.line: d.message for d in diagnostics if d.severity == "info"}
    result: dict[str, str] = {}
    for i, name in enumerate(names):
        text = by_line.get(i + 2)
        if text is not None:
            text = text.removeprefix("@")  # printed so when the theorem has implicit arguments
        if text is None or not text.startswith(name):
            raise ToolchainError(f"Lean printed no statement for {name}")
        result[name] = _normalise(text[len(name) :].lstrip().removeprefix(":").strip())
    cache.write_text(json.dumps(result, sort_keys=True))
    return result


def manifest(
    project: Path,
    tc: Toolchain,
    progress: Progress | None = None,
    lib: str = "Pldr",
) -> dict[str, object]:
    """The manifest as a JSON-ready dict (deterministic: no times, sorted keys).

    The library must have been built with ``tc`` (see :func:`pyverify.lean.build.build`).
    """
    modules = load_package(project, lib)
    theorems = parse_theorems(modules)
    stmts = statements(project, tc, theorems, modules, progress, lib)
    entries = []
    for t in theorems:
        row = asdict(t)
        row["statement"] = stmts[t.name]
        row["file"] = f"lean/{t.file}"
        entries.append(row)
    entries.sort(key=lambda r: (str(r["file"]), int(r["line"])))
    return {
        "schema": 1,
        "package": lib,
        "lean": tc.version(),
        "theorem_ids": list(THEOREM_IDS),
        "theorems": entries,
    }


def dumps(data: dict[str, object]) -> str:
    """Serialise a manifest deterministically."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
