"""The theorem manifest: every theorem of the library, its ID and its statement.

Names, IDs, files and lines are read from the sources (a theorem's ID is the
``[id]`` that starts its docstring). Statements are the elaborated types as
Lean prints them, from ``#check @name`` in a generated file that imports the
built library; they are cached by the library's content key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from pyverify.lean.kernel_audit import load_axioms
from pyverify.lean.messages import parse_json_output
from pyverify.lean.project import Module, load_package, module_keys
from pyverify.lean.sources import TheoremDecl, parse_theorems
from pyverify.lean.toolchain import Toolchain, ToolchainError
from pyverify.output import Progress
from pyverify.theorems import THEOREM_IDS

__all__ = ["TheoremDecl", "dumps", "id_problems", "manifest", "parse_theorems", "statements"]


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
    cache = tc.cache_dir(project) / f"manifest-{digest}.json"
    if cache.exists():
        return dict(json.loads(cache.read_text()))
    say(f"elaborating {len(names)} theorem statements (#check) ...")
    output = tc.run_generated(project, "PyverifyGenManifest", gen_text, ["--json"]).output
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
    cache.parent.mkdir(parents=True, exist_ok=True)
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
    axioms = load_axioms(tc.cache_dir(project), module_keys(modules, salt=tc.version()))
    if axioms is None:
        raise ToolchainError(
            f"no kernel audit of {lib} at its current sources: run `pyverify lean build` first"
        )
    entries = []
    for t in theorems:
        row = asdict(t)
        row["statement"] = stmts[t.name]
        found = axioms.get(t.name)
        if found is None:
            raise ToolchainError(f"{t.name} is not a theorem constant of the compiled library")
        row["axioms"] = list(found["axioms"])
        row["axioms_exact"] = bool(found["exact"])
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
