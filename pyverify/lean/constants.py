"""The constants of compiled Lean modules, read from their ``.olean`` files.

The root object of an ``.olean`` is ``ModuleData`` (``Lean/Environment.lean``):
``imports, constNames, constants, extraConstNames, entries`` (pointer fields).
``ConstantInfo`` (``Lean/Declaration.lean``) has one field, a value record
whose first field is ``ConstantVal = {name, levelParams, type}``; its tag is
the kind (see :data:`KINDS`). Scalar ``Bool``/enum fields follow the pointers.

With the module system a module is three files: ``X.olean`` (public part:
theorems and unexposed definitions appear there as *axioms*, their real kind
recorded in the ``privateConstKindsExt`` entries), ``X.olean.server`` and
``X.olean.private`` (every constant with its value). :func:`load_module` reads
all that exist and takes the constants from the most private part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pyverify.lean.olean import Region
from pyverify.lean.toolchain import ToolchainError

KINDS = (
    "axiom",
    "definition",
    "theorem",
    "opaque",
    "quotient",
    "inductive",
    "constructor",
    "recursor",
)
PARTS = (".olean", ".olean.server", ".olean.private")
#: ``DefinitionSafety``: ``unsafe``, ``safe``, ``partial``.
SAFETY = ("unsafe", "safe", "partial")

# Expr constructor tags (``Lean/Expr.lean``) and the fields that are sub-terms.
EXPR_CONST = 4
_EXPR_CHILDREN: dict[int, tuple[int, ...]] = {
    5: (0, 1),  # app f a
    6: (1, 2),  # lam name type body
    7: (1, 2),  # forallE name type body
    8: (1, 2, 3),  # letE name type value body
    10: (1,),  # mdata data expr
    11: (2,),  # proj typeName idx struct
}

_PRIVATE_KINDS_EXT = "_private.Lean.AddDecl.0.Lean.privateConstKindsExt"
_IMPLEMENTED_BY_EXT = "Lean.Compiler.implementedByAttr"
_EXTERN_EXT = "Lean.externAttr"
_DECL_RANGE_EXT = "Lean.declRangeExt"
_PROJECTION_EXT = "Lean.projectionFnInfoExt"


@dataclass
class Constant:
    """One constant as the kernel sees it (pointers into its module's region)."""

    name: str
    kind: str
    module: str
    region: Region = field(repr=False)
    type_ptr: int = field(repr=False)
    value_ptr: int | None = field(default=None, repr=False)
    safety: str = "safe"
    ctors: tuple[str, ...] = ()
    hidden: bool = False  # an axiom in a public part only because its body is private

    def references(self) -> set[str]:
        """Constants used as ``#print axioms`` follows them (``Lean.collectAxioms``).

        Definitions, theorems and opaques: type and value; inductives: type and
        constructors; constructors and recursors: type; axioms and quotients: none.
        """
        if self.kind in ("axiom", "quotient"):
            return set()
        roots = [self.type_ptr]
        if self.value_ptr is not None:
            roots.append(self.value_ptr)
        found = used_constants(self.region, roots)
        found.update(self.ctors)
        return found


def used_constants(region: Region, roots: list[int]) -> set[str]:
    """Names of the ``Expr.const`` nodes reachable from ``roots`` (a shared DAG, walked once)."""
    seen: set[int] = set()
    out: set[str] = set()
    stack = list(roots)
    kind, fields, name = region.kind, region.fields, region.name
    while stack:
        ptr = stack.pop()
        if ptr & 1 or ptr in seen:
            continue
        seen.add(ptr)
        tag = kind(ptr)[0]
        if tag == EXPR_CONST:
            out.add(name(fields(ptr)[0]))
            continue
        children = _EXPR_CHILDREN.get(tag)
        if children:
            f = fields(ptr)
            stack.extend(f[i] for i in children)
    return out


class ModuleView:
    """A compiled module.

    Imports and constant names are read at once; constants and the extension
    entries this audit reads (hidden kinds, attributes, lines) on demand.
    """

    def __init__(self, name: str, region: Region) -> None:
        self.name = name
        self.region = region
        self.imports: list[str] = []
        self.const_ptrs: dict[str, int] = {}
        self.entries_ptr = 1
        self.private = False  # whether the ``.olean.private`` part was read
        self.is_module = True  # written with the module system (bodies may be private)
        self._cache: dict[str, Constant] = {}
        self._ext: dict[str, tuple[int, ...]] | None = None
        self._hidden: set[str] | None = None
        self._projections: set[str] | None = None
        self._lines: dict[str, int] | None = None

    def constant(self, name: str) -> Constant:
        """The constant ``name`` of this module (``KeyError`` if it has none)."""
        const = self._cache.get(name)
        if const is None:
            hidden = self.hidden
            const = _decode_constant(self.region, self.const_ptrs[name], self.name, hidden)
            self._cache[name] = const
        return const

    def constants(self) -> list[Constant]:
        """Every constant, in the module's order."""
        return [self.constant(n) for n in self.const_ptrs]

    def extension(self, ext: str) -> tuple[int, ...]:
        """The entries the module stored for environment extension ``ext``."""
        if self._ext is None:
            region, self._ext = self.region, {}
            try:
                for entry in region.array(self.entries_ptr):
                    ext_ptr, items_ptr = region.fields(entry)[:2]
                    self._ext[region.name(ext_ptr)] = region.array(items_ptr)
            except (IndexError, ValueError, TypeError) as exc:
                raise ToolchainError(f"{self.name}: malformed extension entries ({exc})") from exc
        return self._ext.get(ext, ())

    @property
    def hidden(self) -> set[str]:
        """Names that are axioms here only because their bodies are private (public parts)."""
        if self._hidden is None:
            if self.private:
                self._hidden = set()  # the private part holds every constant's real kind
            else:
                region = self.region
                items = self.extension(_PRIVATE_KINDS_EXT)
                self._hidden = {region.name(region.fields(x)[0]) for x in items}
        return self._hidden

    @property
    def implemented_by(self) -> list[str]:
        """Constants carrying ``@[implemented_by]``."""
        return _entry_names(self.region, self.extension(_IMPLEMENTED_BY_EXT))

    @property
    def extern(self) -> list[str]:
        """Constants carrying ``@[extern]``."""
        return _entry_names(self.region, self.extension(_EXTERN_EXT))

    @property
    def lines(self) -> dict[str, int]:
        """Declaration start lines, from ``declRangeExt``."""
        if self._lines is None:
            self._lines = _decl_lines(self.region, self.extension(_DECL_RANGE_EXT))
        return self._lines

    @property
    def projections(self) -> set[str]:
        """Structure projection functions (``projectionFnInfoExt``)."""
        if self._projections is None:
            self._projections = set(_entry_names(self.region, self.extension(_PROJECTION_EXT)))
        return self._projections


def _decode_constant(region: Region, ptr: int, module: str, hidden: set[str]) -> Constant:
    tag = region.kind(ptr)[0]
    if tag >= len(KINDS):
        raise ToolchainError(f"{module}: constant with unknown kind tag {tag}")
    kind = KINDS[tag]
    val = region.fields(ptr)[0]
    vf = region.fields(val)
    name_ptr, _levels, type_ptr = region.fields(vf[0])[:3]
    name = region.name(name_ptr)
    const = Constant(name, kind, module, region, type_ptr, hidden=name in hidden)
    if kind in ("definition", "theorem", "opaque"):
        const.value_ptr = vf[1]
    if kind == "definition":
        safety = region.scalar_u8(val, 0)
        const.safety = SAFETY[safety] if safety < len(SAFETY) else f"safety {safety}"
    elif kind == "opaque" or kind == "axiom":
        const.safety = "unsafe" if region.scalar_u8(val, 0) else "safe"
    elif kind == "inductive":
        const.ctors = tuple(region.name(c) for c in region.list(vf[4]))
        const.safety = "unsafe" if region.scalar_u8(val, 1) else "safe"
    elif kind == "constructor":
        const.safety = "unsafe" if region.scalar_u8(val, 0) else "safe"
    elif kind == "recursor":
        const.safety = "unsafe" if region.scalar_u8(val, 1) else "safe"
    return const


def _entry_names(region: Region, entries: tuple[int, ...]) -> list[str]:
    """Declaration names of parametric-attribute entries, each a pair ``(Name, data)``."""
    out = []
    for e in entries:
        try:
            out.append(region.name(region.fields(e)[0]))
        except (ToolchainError, IndexError, ValueError):
            out.append("<unreadable entry>")
    return out


def _decl_lines(region: Region, items: tuple[int, ...]) -> dict[str, int]:
    """Start lines from ``declRangeExt`` entries ``(name, {range := {pos := {line, ..}}})``."""
    lines = {}
    for item in items:
        try:
            name_ptr, ranges = region.fields(item)[:2]
            pos = region.fields(region.fields(ranges)[0])[0]
            lines[region.name(name_ptr)] = region.nat(region.fields(pos)[0])
        except (ToolchainError, IndexError, ValueError):
            continue
    return lines


def read_module_data(region: Region, module: str) -> ModuleView:
    """Decode the ``ModuleData`` root of the last image added to ``region``."""
    view = ModuleView(module, region)
    try:
        imports_ptr, names_ptr, consts_ptr, _extra, entries_ptr = region.fields(region.root())[:5]
        view.imports = [region.name(region.fields(i)[0]) for i in region.array(imports_ptr)]
        names = [region.name(n) for n in region.array(names_ptr)]
        ptrs = region.array(consts_ptr)
        if len(names) != len(ptrs):
            raise ToolchainError(f"{module}: constant names and constants disagree in number")
        view.const_ptrs = dict(zip(names, ptrs, strict=True))
        view.entries_ptr = entries_ptr
        view.is_module = region.scalar_u8(region.root(), 0) != 0  # ModuleData.isModule
    except (IndexError, ValueError, TypeError) as exc:  # struct.error is a ValueError
        raise ToolchainError(f"{module}: malformed module data ({exc})") from exc
    return view


def load_module(stem: Path, module: str) -> ModuleView:
    """Read ``stem.olean`` and, when present, its ``.olean.server`` and ``.olean.private``.

    Raises
    ------
    ToolchainError
        When ``stem.olean`` is missing or any part is malformed.
    """
    region = Region()
    present = [s for s in PARTS if Path(f"{stem}{s}").is_file()]
    if ".olean" not in present:
        raise ToolchainError(f"{stem}.olean not found: is module {module} built?")
    for suffix in present:
        region.add_file(Path(f"{stem}{suffix}"))
    view = read_module_data(region, module)
    view.private = ".olean.private" in present
    return view
