"""The kernel-level audit: what the compiled constants of a package declare and use.

For every module of the package (public and private parts) it lists the
constants with their kind, and for every theorem the axioms it depends on,
followed transitively as ``#print axioms`` does (``Lean.collectAxioms``). A
module fails when it declares an axiom, an opaque, unsafe or partial
constant, an ``@[implemented_by]``/``@[extern]`` one, when a constant refers to
an untrusted primitive (:data:`UNTRUSTED`), or when a theorem depends on an
axiom outside :data:`~pyverify.lean.audit.ALLOWED_AXIOMS`.

Lean's own library (``Init``, ``Std``, ``Lean``) is trusted and read lazily,
public parts only: the toolchain ships no ``.olean.private``, so a library
theorem (or unexposed definition) appears there as an axiom without a value,
recognised as *hidden* by its ``privateConstKindsExt`` entry. The axioms of
hidden library constants come from :data:`LIBRARY_AXIOMS`, an explicit list of
facts about Lean's library; a hidden constant not in the list is *unresolved*:
by the trust assumption it uses only allowed axioms, but which ones is
unknown. A theorem's axiom set is exact when nothing unresolved is reached or
when it already holds all three allowed axioms (no more can be added).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyverify.lean.audit import ALLOWED_AXIOMS, Finding
from pyverify.lean.constants import Constant, ModuleView, load_module, used_constants
from pyverify.lean.toolchain import ToolchainError

#: Primitives no constant of the package may mention.
UNTRUSTED = frozenset({"sorryAx", "Lean.ofReduceBool", "Lean.ofReduceNat", "Lean.trustCompiler"})

_ALL3 = frozenset(ALLOWED_AXIOMS)
_CHOICE = frozenset({"propext", "Classical.choice", "Quot.sound"})
#: Axioms of hidden constants of Lean's library (theorems whose proofs are not
#: shipped). Each entry is a documented ``#print axioms`` fact of Lean 4, kept
#: to constants whose proofs are fixed by their meaning: classical logic goes
#: through ``Classical.em`` (Diaconescu: choice, propext, and funext, i.e.
#: ``Quot.sound``); ``funext`` uses ``Quot.sound`` only; the equality lemmas of
#: ``Init.Prelude``/``Init.Core`` are proved by ``▸``/``rfl`` without axioms.
LIBRARY_AXIOMS: dict[str, frozenset[str]] = {
    "Classical.em": _CHOICE,
    "Classical.byContradiction": _CHOICE,
    "Classical.byCases": _CHOICE,
    "Classical.not_not": _CHOICE,
    "Classical.propDecidable": _CHOICE,
    "Classical.decEq": _CHOICE,
    "Classical.choose_spec": frozenset({"Classical.choice"}),
    "funext": frozenset({"Quot.sound"}),
    "Eq.symm": frozenset(),
    "Eq.trans": frozenset(),
    "Eq.subst": frozenset(),
    "Eq.mpr": frozenset(),
    "Eq.mp": frozenset(),
    "congrArg": frozenset(),
    "congrFun": frozenset(),
    "congr": frozenset(),
    "Ne.symm": frozenset(),
    "absurd": frozenset(),
    "rfl": frozenset(),
    "id": frozenset(),
}


@dataclass
class TheoremAxioms:
    """What one theorem depends on."""

    name: str
    module: str
    axioms: list[str]
    unresolved: list[str] = field(default_factory=list)  # hidden library constants reached

    @property
    def exact(self) -> bool:
        """Whether :attr:`axioms` is exactly what ``#print axioms`` prints."""
        return not self.unresolved or set(self.axioms) >= _ALL3


@dataclass
class ModuleAudit:
    """The audit of one module of the package."""

    module: str
    file: str
    kinds: dict[str, str]  # constant -> kind
    theorems: dict[str, TheoremAxioms]
    findings: list[Finding]


def is_library_module(name: str) -> bool:
    """Whether ``name`` is a module of Lean's own library (trusted)."""
    return name.split(".", 1)[0] in ("Init", "Std", "Lean", "Lake")


class Environment:
    """Compiled modules by name, loaded on demand, with a constant -> module index."""

    def __init__(self, build_dir: Path, lib_dirs: Iterable[Path], package: set[str]) -> None:
        self.build_dir = build_dir
        self.lib_dirs = list(lib_dirs)
        self.package = package
        self.modules: dict[str, ModuleView] = {}
        self.owner: dict[str, str] = {}
        self._refs: dict[tuple[str, str], set[str]] = {}

    def _stem(self, module: str) -> Path:
        rel = module.replace(".", "/")
        if module in self.package:
            return self.build_dir / rel
        for lib in self.lib_dirs:
            if (lib / f"{rel}.olean").is_file():
                return lib / rel
        raise ToolchainError(f"module {module} is imported but no {rel}.olean was found")

    def load(self, module: str) -> ModuleView:
        """Load ``module`` and, transitively, everything it imports."""
        todo = [module]
        while todo:
            name = todo.pop()
            if name in self.modules:
                continue
            view = load_module(self._stem(name), name)
            self.modules[name] = view
            for const in view.const_ptrs:
                self.owner.setdefault(const, name)
            todo.extend(view.imports)
        return self.modules[module]

    def find(self, name: str) -> Constant | None:
        """The constant ``name`` from whichever loaded module declares it."""
        module = self.owner.get(name)
        return None if module is None else self.modules[module].constant(name)

    def references(self, const: Constant) -> set[str]:
        """Cached :meth:`Constant.references`."""
        key = (const.module, const.name)
        refs = self._refs.get(key)
        if refs is None:
            refs = self._refs[key] = const.references()
        return refs

    def axioms(self, name: str) -> tuple[set[str], set[str], dict[str, str]]:
        """Axioms reached from ``name``, and what is known about how.

        Returns the axioms, the unresolved hidden library constants, and for
        each axiom the constant of the package through which it was reached.
        """
        axioms: set[str] = set()
        unresolved: set[str] = set()
        via: dict[str, str] = {}
        seen = {name}
        stack = [(name, name)]
        while stack:
            current, through = stack.pop()
            const = self.find(current)
            if const is None:
                continue
            parent = through
            if const.module in self.package:
                through = current
            if const.hidden:
                known = LIBRARY_AXIOMS.get(current)
                if known is not None:
                    for ax in known:
                        axioms.add(ax)
                        via.setdefault(ax, parent)
                    continue
                if current not in self.modules[const.module].projections:
                    unresolved.add(current)
                    continue
                # A projection's value is `fun params self => self.i`: its constants
                # are those of its type, which the public part has.
                refs = used_constants(const.region, [const.type_ptr])
            elif const.kind == "axiom":
                axioms.add(current)
                via.setdefault(current, parent)
                continue
            else:
                refs = self.references(const)
            for ref in refs:
                if ref not in seen:
                    seen.add(ref)
                    stack.append((ref, through))
        return axioms, unresolved, via


def _is_compiler_unsafe_rec(const: Constant, view: ModuleView) -> bool:
    """``f._unsafe_rec``: the partial twin Lean generates for compiling a recursive safe ``f``."""
    if not const.name.endswith("._unsafe_rec") or const.safety != "partial":
        return False
    base = const.name[: -len("._unsafe_rec")]
    if base not in view.const_ptrs:
        return False
    twin = view.constant(base)
    return twin.kind == "definition" and twin.safety == "safe"


def display_name(name: str) -> str:
    """``_private.Mod.0.X.y`` -> ``X.y`` (the name as written in the source)."""
    if name.startswith("_private."):
        parts = name.split(".")
        for i, part in enumerate(parts):
            if i > 1 and part.isdigit():
                return ".".join(parts[i + 1 :])
    return name


def audit_module(env: Environment, module: str, file: str) -> ModuleAudit:
    """Audit one module of the package (it must be built, with its private part)."""
    view = env.load(module)
    findings: list[Finding] = []

    def fail(const: str, reason: str) -> None:
        line = view.lines.get(const) or view.lines.get(display_name(const)) or 1
        findings.append(Finding(file, line, 0, f"audit ({module}): {reason}"))

    if view.is_module and not view.private:
        fail(module, f"{module}.olean.private not found: the proofs cannot be audited")
    kinds: dict[str, str] = {}
    theorems: dict[str, TheoremAxioms] = {}
    for const in view.constants():
        name, shown = const.name, display_name(const.name)
        kinds[name] = const.kind
        if const.kind == "axiom":
            fail(name, f"declares the axiom `{shown}`")
        elif const.kind == "opaque":
            fail(name, f"`{shown}` is an opaque constant (opaque/partial declarations are refused)")
        elif const.kind == "quotient":
            fail(name, f"`{shown}` declares a quotient primitive")
        if const.safety == "unsafe":
            fail(name, f"`{shown}` is declared `unsafe`")
        elif const.safety == "partial" and not _is_compiler_unsafe_rec(const, view):
            fail(name, f"`{shown}` is declared `partial`")
        bad = sorted(env.references(const) & UNTRUSTED)
        for prim in bad:
            fail(name, f"`{shown}` refers to `{prim}`")
    for name in view.implemented_by:
        fail(name, f"`{display_name(name)}` has @[implemented_by]")
    for name in view.extern:
        fail(name, f"`{display_name(name)}` has @[extern]")
    for const in view.constants():
        if const.kind != "theorem":
            continue
        axioms, unresolved, via = env.axioms(const.name)
        theorems[const.name] = TheoremAxioms(const.name, module, sorted(axioms), sorted(unresolved))
        for ax in sorted(axioms - ALLOWED_AXIOMS):
            through = via.get(ax, const.name)
            how = "" if through == const.name else f" (through `{display_name(through)}`)"
            fail(
                const.name,
                f"theorem `{display_name(const.name)}` depends on the axiom `{ax}`{how}",
            )
    findings.sort(key=lambda f: (f.line, f.reason))
    return ModuleAudit(module, file, kinds, theorems, findings)


#: Bumped whenever the audit's rules change, so cached verdicts are not reused.
AUDIT_VERSION = "kernel-audit-1"


def audit_package(
    object_dir: Path,
    lib_dirs: Iterable[Path],
    modules: dict[str, str],
) -> list[ModuleAudit]:
    """Audit every built module of a package.

    Parameters
    ----------
    object_dir
        Where the package's ``.olean`` files are (``A/B.olean`` for module ``A.B``).
    lib_dirs
        Where Lean's own library is.
    modules
        Module name -> file name to report, in dependency order.
    """
    env = Environment(object_dir, lib_dirs, set(modules))
    return [audit_module(env, name, file) for name, file in modules.items()]


def _cache_file(cache_dir: Path, keys: dict[str, str]) -> Path:
    digest = hashlib.sha256(json.dumps([AUDIT_VERSION, sorted(keys.items())]).encode())
    return cache_dir / f"audit-{digest.hexdigest()[:32]}.json"


def save_axioms(cache_dir: Path, keys: dict[str, str], audits: list[ModuleAudit]) -> None:
    """Record a passed audit's per-theorem axioms under the package's content keys."""
    data = {
        t.name: {"axioms": t.axioms, "exact": t.exact, "unresolved": len(t.unresolved)}
        for a in audits
        for t in a.theorems.values()
    }
    for old in cache_dir.glob("audit-*.json"):
        old.unlink(missing_ok=True)
    path = _cache_file(cache_dir, keys)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")


def load_axioms(cache_dir: Path, keys: dict[str, str]) -> dict[str, dict[str, Any]] | None:
    """Per-theorem axioms of the last passed audit at these content keys, or ``None``."""
    path = _cache_file(cache_dir, keys)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
