"""The trust audit: what a module may not contain, and what Lean may not report."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pyverify.lean.messages import Diagnostic
from pyverify.lean.project import strip_comments

#: Words that smuggle in unproved facts or untrusted code.
FORBIDDEN = (
    "sorry",
    "sorryAx",
    "admit",
    "axiom",
    "native_decide",
    "implemented_by",
    "extern",
    "unsafe",
    "opaque",
    "partial",
    "ofReduceBool",
    "ofReduceNat",
    "trustCompiler",
)
_FORBIDDEN_RE = re.compile(r"(?<![\w'])(" + "|".join(FORBIDDEN) + r")(?![\w'])")
#: Option settings and tactic flags that weaken checking (matched as phrases).
FORBIDDEN_PHRASES = {
    "set_option warn.sorry": re.compile(r"\bset_option\s+warn\.sorry\b"),
    "debug.skipKernelTC": re.compile(r"\bdebug\.skipKernelTC\b"),
    "decide +native": re.compile(r"\bdecide\s*\+\s*native\b"),
    "native := true": re.compile(r"\bnative\s*:=\s*true\b"),
}
#: ``lakefile.toml`` keys that pass options or arguments to Lean.
LAKEFILE_KEYS = ("leanOptions", "moreLeanArgs", "weakLeanArgs", "moreServerOptions")
_DECL_RE = re.compile(
    r"(?<![\w.'])(theorem|lemma|def|abbrev|instance|axiom|opaque|example|structure|inductive"
    r"|class|macro|notation|syntax|elab)(?![\w'])(?:\s+([^\s(:{\[⦃]+))?"
)

#: Axioms a theorem may depend on (checked with ``#print axioms`` on a native toolchain).
ALLOWED_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})


@dataclass(frozen=True)
class Finding:
    """One reason an audit fails."""

    file: str
    line: int
    col: int
    reason: str

    def format(self) -> str:
        """Return ``file:line:col: error: reason``."""
        return f"{self.file}:{self.line}:{self.col}: error: {self.reason}"


_HEADER_RE = re.compile(
    r"^(?:@\[|set_option\b|attribute\b|(?:private|protected|noncomputable|public|unsafe|partial"
    r"|nonrec|meta)\b)"
)


def _enclosing(stripped: str, pos: int, line_start: int) -> str | None:
    """The declaration a match at ``pos`` belongs to.

    The next declaration when the match is in its header (attributes,
    modifiers, ``set_option ... in``, or the keyword itself), else the
    declaration before it.
    """
    decls = [(m.start(), m.group(2) or m.group(1)) for m in _DECL_RE.finditer(stripped)]
    head = stripped[line_start:pos].lstrip()
    line_end = stripped.find("\n", pos)
    rest = stripped[pos : len(stripped) if line_end < 0 else line_end]
    own = _HEADER_RE.match(rest) or _DECL_RE.match(rest)
    if _HEADER_RE.match(head) or (head == "" and (own or _DECL_RE.search(rest))):
        after = [name for start, name in decls if start >= pos]
        if after:
            return after[0]
    before = [name for start, name in decls if start <= pos]
    return before[-1] if before else None


def scan_source(rel: str, source: str) -> list[Finding]:
    """Find forbidden words and phrases outside comments and strings.

    Parameters
    ----------
    rel
        The file name to report.
    source
        The file's text.
    """
    stripped = strip_comments(source)
    findings = []
    offset = 0
    for lineno, line in enumerate(stripped.splitlines(keepends=True), start=1):
        phrases = [
            (m.span(), what) for what, rx in FORBIDDEN_PHRASES.items() for m in rx.finditer(line)
        ]
        hits = [(start, what) for (start, _end), what in phrases]
        hits += [
            (m.start(), m.group(1))
            for m in _FORBIDDEN_RE.finditer(line)
            if not any(a <= m.start() < b for (a, b), _ in phrases)
        ]
        for col, what in sorted(hits):
            decl = _enclosing(stripped, offset + col, offset)
            where = f" (in `{decl}`)" if decl else ""
            findings.append(Finding(rel, lineno, col, f"audit: uses `{what}`{where}"))
        offset += len(line)
    return findings


def scan_lakefile(project: Path) -> list[Finding]:
    """Lake settings that pass options to Lean (``leanOptions``, ``moreLeanArgs``, ...)."""
    findings = []
    for name in ("lakefile.toml", "lakefile.lean"):
        path = project / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), start=1):
            code = line.split("#", 1)[0] if name.endswith(".toml") else line.split("--", 1)[0]
            for key in LAKEFILE_KEYS:
                col = code.find(key)
                if col >= 0:
                    findings.append(
                        Finding(
                            str(path),
                            lineno,
                            col,
                            f"audit: `{key}` in {name} changes how Lean checks the proofs; "
                            "remove it",
                        )
                    )
    return findings


def judge_diagnostics(diagnostics: list[Diagnostic]) -> list[Finding]:
    """Errors and ``sorry`` warnings, as audit findings."""
    out = []
    for d in diagnostics:
        if d.severity == "error":
            out.append(Finding(d.file, d.line, d.col, d.message))
        elif d.is_sorry:
            out.append(Finding(d.file, d.line, d.col, "audit: declaration uses `sorry`"))
    return out


_AXIOMS_RE = re.compile(r"'([^']+)' depends on axioms: \[([^\]]*)\]")
_NO_AXIOMS_RE = re.compile(r"'([^']+)' does not depend on any axioms")


def parse_print_axioms(text: str) -> dict[str, list[str]]:
    """Parse the output of ``#print axioms`` commands: declaration -> axioms used."""
    result: dict[str, list[str]] = {}
    flat = " ".join(text.split())
    for m in _AXIOMS_RE.finditer(flat):
        result[m.group(1)] = [a.strip() for a in m.group(2).split(",") if a.strip()]
    for m in _NO_AXIOMS_RE.finditer(flat):
        result[m.group(1)] = []
    return result


def disallowed_axioms(used: dict[str, list[str]]) -> dict[str, list[str]]:
    """The declarations that use an axiom outside :data:`ALLOWED_AXIOMS`."""
    return {
        name: sorted(set(axs) - ALLOWED_AXIOMS)
        for name, axs in sorted(used.items())
        if set(axs) - ALLOWED_AXIOMS
    }


class _ReaderAxioms(Protocol):
    axioms: list[str]

    @property
    def exact(self) -> bool: ...


def compare_axioms(
    names: list[str], printed: dict[str, list[str]], reader: dict[str, _ReaderAxioms]
) -> list[str]:
    """Problems found comparing ``#print axioms`` with the ``.olean`` reader, theorem by theorem.

    Every theorem must have a ``#print axioms`` answer using only allowed
    axioms; the reader's axioms must all be printed, and when the reader's
    answer is exact the two sets must be equal.
    """
    problems = []
    for name in names:
        got = printed.get(name)
        if got is None:
            problems.append(f"no `#print axioms` answer for {name}")
            continue
        bad = sorted(set(got) - ALLOWED_AXIOMS)
        if bad:
            problems.append(f"theorem `{name}` depends on {', '.join(bad)} (#print axioms)")
        mine = reader.get(name)
        if mine is None:
            problems.append(f"{name}: not found as a theorem constant in the compiled library")
        elif not set(mine.axioms) <= set(got) or (mine.exact and set(mine.axioms) != set(got)):
            problems.append(
                f"{name}: #print axioms says {sorted(got)}, the .olean reader "
                f"{sorted(mine.axioms)}{'' if mine.exact else ' (at least)'}"
            )
    return problems
