"""Find tolerance constants that carry no theorem ID: numeric literals in tolerance code.

Every tolerance of the suite is to be the evaluation of a theorem (``lean/Pldr/Float``,
:mod:`pyverify.fp.formulas`), named with its ID. This scanner reads Python sources (their
AST, and the ``#:`` comments above module constants) and reports each numeric literal
that sits in *tolerance code* outside an *ID-carrying formula*:

* tolerance code: every literal of a module named in :data:`BOUND_MODULES` (the modules
  that evaluate bounds); elsewhere, the literals of a function or a name that looks like
  a tolerance (:data:`TOLERANCE_NAME`: ``tol``, ``slack``, ``bound``, ``floor``,
  ``margin``, ``factor``), of a keyword argument ``rtol``/``atol``/``tol``/``rel``/
  ``abs``/``floor``/``slack``, and of an ordering comparison (``<``, ``<=``, ``>``,
  ``>=``) inside an ``assert`` or an ``if``; a float there counts, and an integer when
  it multiplies or divides (``4 * u``);
* also tolerance code: in a function, an assignment to a name that reaches an ordering
  comparison of an ``assert`` or ``if`` there (directly, or through other assignments)
  whose value is an error expression: it mentions a unit round-off or an error formula
  (:data:`ERROR_TERMS`: ``u_io``, ``U64``, ``gamma``, ``EVAL_SLACK``, ...), as in
  ``extra = 2 * u_io * M`` before ``assert err <= tol + extra``;
* an ID-carrying formula: a function whose docstring names a theorem ID in brackets
  (``[fp_dot_product]``), or a module constant whose ``#:`` comment (or trailing comment)
  does; every literal inside it is part of that theorem's statement or of its
  instantiation, and the docstring says which.

A module constant whose ``#:`` comment carries the tag ``[non-vacuity]`` is no tolerance
either: it is a threshold a measurement must *exceed* for a test to say something (a
mutant's error so many times its bound, a bound within so much of what it bounds), so it
can only make a test stricter; the comment says what it demands.

The literals ``0`` and ``1`` (and ``0.0``, ``1.0``, ``-1``) are not constants of a
tolerance (``excess <= 1``: "within the bound"). Everything else is a finding:
``path:line: literal in <context>``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pyverify.theorems import THEOREM_IDS

__all__ = [
    "BOUND_MODULES",
    "ERROR_TERMS",
    "NON_VACUITY",
    "NOT_SCANNED",
    "RESIDUE",
    "SCANNED",
    "TOLERANCE_NAME",
    "Finding",
    "scan_paths",
    "scan_source",
]

#: Modules whose every literal is tolerance code (relative to the repository root).
BOUND_MODULES: frozenset[str] = frozenset(
    {
        "pyverify/fp/attention.py",
        "pyverify/fp/exps.py",
        "pyverify/fp/formulas.py",
        "pyverify/fp/models.py",
        "pyverify/testing/bounds.py",
        "pyverify/testing/decoder_bounds.py",
        "pyverify/testing/fp.py",
        "pyverify/testing/learner_bounds.py",
        "pyverify/testing/rope_bounds.py",
        "pyverify/testing/softmax_bounds.py",
        "pyverify/testing/stage_bounds.py",
        "pyverify/crosscheck/bounds.py",
    }
)
#: What is scanned: these folders of the repository, recursively, but :data:`NOT_SCANNED`.
#: ``tests/`` is not: its kernel regression tests (``tests/kernels``, which also run on
#: CUDA, where no bound is proved) keep statistical tolerances, named as such in
#: ``tests/kernels/kernel_helpers.py``; they assert no theorem.
SCANNED: tuple[str, ...] = ("pyverify", "property_tests")
#: Packages of the other engineers (kernels and bench; collapse; claims; measure): their
#: thresholds are theirs to derive (the test prints what the scan would find there).
NOT_SCANNED: tuple[str, ...] = (
    "pyverify/kernels/",
    "pyverify/bench/",
    "pyverify/report/bench_load.py",
    "pyverify/collapse/",
    "pyverify/claims/",
    "pyverify/measure/",
)
#: The known residue: findings per file, and why each file still has them. The test holds
#: the scan to exactly these counts, so a new constant fails it and a removed one must be
#: struck from here.
RESIDUE: dict[str, tuple[int, str]] = {}
#: Names whose mention makes an expression an error expression (a unit round-off, an
#: underflow, an error formula).
ERROR_TERMS = re.compile(
    r"^(u|u_io|u_c|u_compute|u_out|u_rs|u64|U64|u32|eta|eta_c|eta_io|UNIT_ROUNDOFF|UNDERFLOW|"
    r"EVAL_SLACK|gamma|gm|_gm|_g|compute_roundoff)$"
)
#: A name that holds or computes a tolerance.
TOLERANCE_NAME = re.compile(
    r"(^|_)(tol|tols|tolerance|tolerances|slack|bound|bounds|floor|margin|factor|safety|fudge)($|_)",
    re.IGNORECASE,
)
_KWARGS = frozenset({"rtol", "atol", "tol", "tolerance", "rel", "abs", "floor", "slack"})
_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_TRIVIAL = (0, 1)
_ID = re.compile(r"\[(" + "|".join(re.escape(i) for i in THEOREM_IDS) + r")\]")
#: The tag of a module constant that is a non-vacuity threshold, not a tolerance.
NON_VACUITY = "[non-vacuity]"


@dataclass(frozen=True)
class Finding:
    """A tolerance constant without a theorem ID."""

    path: str
    line: int
    literal: str
    context: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.literal} in {self.context}"


def _carries_id(node: ast.AST) -> bool:
    doc = ast.get_docstring(node) if isinstance(node, ast.FunctionDef | ast.ClassDef) else None
    return bool(doc and _ID.search(doc))


def _constant_ids(lines: list[str], tree: ast.Module) -> set[int]:
    """Line spans of module constants whose comments name an ID or a non-vacuity tag."""
    spans: set[int] = set()
    for node in tree.body:
        if not isinstance(node, ast.Assign | ast.AnnAssign):
            continue
        first, last = node.lineno, node.end_lineno or node.lineno
        text = [lines[first - 1]]
        i = first - 2
        while i >= 0 and lines[i].lstrip().startswith("#:"):
            text.append(lines[i])
            i -= 1
        if any(_ID.search(t) or NON_VACUITY in t for t in text):
            spans.update(range(first, last + 1))
    return spans


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _mentions_error(value: ast.AST) -> bool:
    for n in ast.walk(value):
        name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
        if name and ERROR_TERMS.match(name):
            return True
    return False


def _flow_names(fn: ast.FunctionDef) -> set[str]:
    """Names that reach an ordering comparison of an ``assert``/``if`` in ``fn``."""
    flow: set[str] = set()
    assigns: list[tuple[set[str], ast.AST]] = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Assert | ast.If):
            for c in ast.walk(n.test):
                if isinstance(c, ast.Compare) and any(isinstance(o, _ORDER) for o in c.ops):
                    flow |= _names(c)
        elif isinstance(n, ast.Assign):
            assigns.append((set().union(*(_names(t) for t in n.targets)), n.value))
        elif isinstance(n, ast.AugAssign | ast.AnnAssign) and n.value is not None:
            assigns.append((_names(n.target), n.value))
    grown = True
    while grown:
        grown = False
        for targets, value in assigns:
            new = _names(value) - flow if targets & flow else set()
            if new:
                flow |= new
                grown = True
    return flow


def _is_literal(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
        and node.value not in _TRIVIAL
    )


class _Scan(ast.NodeVisitor):
    def __init__(self, path: str, whole: bool, exempt_lines: set[int]) -> None:
        self.path, self.whole, self.exempt_lines = path, whole, exempt_lines
        self.found: list[Finding] = []
        self.ctx: list[str] = []  # why the current subtree is tolerance code
        self.exempt = 0  # depth of ID-carrying definitions around the node
        self.flow: set[str] = set()  # names reaching a comparison in the current function

    def _within(self, why: str, nodes: Iterable[ast.AST]) -> None:
        self.ctx.append(why)
        for n in nodes:
            self.visit(n)
        self.ctx.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        ided = _carries_id(node)
        self.exempt += ided
        outer, self.flow = self.flow, _flow_names(node)
        if TOLERANCE_NAME.search(node.name) and not node.name.startswith("test") and not ided:
            self._within(f"function {node.name}", node.body)
        else:
            self.generic_visit(node)
        self.exempt -= ided
        self.flow = outer

    def _targets(self, targets: list[ast.expr]) -> list[str]:
        names = []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    names.append(n.id)
                elif isinstance(n, ast.Attribute):
                    names.append(n.attr)
        return names

    def visit_Assign(self, node: ast.Assign) -> None:
        self._assign(self._targets(node.targets), node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._assign(self._targets([node.target]), node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        names = self._targets([node.target])
        value = node.value
        if isinstance(node.op, ast.Mult | ast.Div) and isinstance(value, ast.Constant):
            # ``tol *= 2``: an integer that scales, like ``tol = tol * 2``
            value = ast.copy_location(ast.BinOp(ast.Name("_", ast.Load()), node.op, value), value)
        self._assign(names, value)

    def _assign(self, names: list[str], value: ast.expr) -> None:
        tol = [n for n in names if TOLERANCE_NAME.search(n)]
        if not tol and set(names) & self.flow and _mentions_error(value):
            tol = [next(n for n in names if n in self.flow)]
        if tol and isinstance(value, ast.Constant):  # ``slack = 4``: the literal is the tolerance
            self.ctx.append(f"assignment to {tol[0]}")
            self._literal(value, counted=True)
            self.ctx.pop()
        elif tol:
            self._within(f"assignment to {tol[0]}", [value])
        else:
            self.visit(value)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg in _KWARGS:
            self._within(f"keyword {node.arg}=", [node.value])
        else:
            self.generic_visit(node)

    def _test(self, test: ast.expr, what: str) -> None:
        for n in ast.walk(test):
            if isinstance(n, ast.Compare) and any(isinstance(o, _ORDER) for o in n.ops):
                self._within(f"comparison in {what}", [n])
                return
        self.visit(test)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._test(node.test, "assert")

    def visit_If(self, node: ast.If) -> None:
        self._test(node.test, "if")
        for n in node.body + node.orelse:
            self.visit(n)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        scaling = isinstance(node.op, ast.Mult | ast.Div | ast.Pow)
        for side in (node.left, node.right):
            if scaling and isinstance(side, ast.Constant) and isinstance(side.value, int):
                self._literal(side, counted=True)
            else:
                self.visit(side)

    def visit_Constant(self, node: ast.Constant) -> None:
        self._literal(node, counted=isinstance(node.value, float))

    def _literal(self, node: ast.Constant, counted: bool) -> None:
        if not (counted and _is_literal(node)) or self.exempt:
            return
        if not (self.whole or self.ctx) or node.lineno in self.exempt_lines:
            return
        ctx = self.ctx[-1] if self.ctx else "a bound module"
        self.found.append(Finding(self.path, node.lineno, repr(node.value), ctx))

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.generic_visit(node)


def scan_source(text: str, path: str = "<source>", whole: bool = False) -> list[Finding]:
    """The findings of one source text (``whole``: every literal is tolerance code)."""
    tree = ast.parse(text)
    scan = _Scan(path, whole, _constant_ids(text.splitlines(), tree))
    scan.visit(tree)
    return scan.found


def scan_paths(
    root: Path, folders: Iterable[str] = SCANNED, skip: Iterable[str] = NOT_SCANNED
) -> list[Finding]:
    """The findings of every ``.py`` file under ``root / folder`` (not under ``skip``)."""
    out: list[Finding] = []
    skip = tuple(skip)
    for folder in folders:
        for file in sorted((root / folder).rglob("*.py")):
            rel = file.relative_to(root).as_posix()
            if rel.startswith(skip) or "/.venv/" in rel:
                continue
            out += scan_source(file.read_text(), rel, rel in BOUND_MODULES)
    return out
