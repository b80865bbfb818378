"""The trust audit: what a module may not contain, and what Lean may not report."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyverify.lean.messages import Diagnostic
from pyverify.lean.project import strip_comments

#: Words that smuggle in unproved facts or untrusted code.
FORBIDDEN = (
    "sorry",
    "admit",
    "axiom",
    "native_decide",
    "implemented_by",
    "extern",
    "unsafe",
    "opaque",
)
_FORBIDDEN_RE = re.compile(r"(?<![\w.'])(" + "|".join(FORBIDDEN) + r")(?![\w'])")

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


def scan_source(rel: str, source: str) -> list[Finding]:
    """Find forbidden words outside comments and strings.

    Parameters
    ----------
    rel
        The file name to report.
    source
        The file's text.
    """
    findings = []
    for lineno, line in enumerate(strip_comments(source).splitlines(), start=1):
        for m in _FORBIDDEN_RE.finditer(line):
            findings.append(Finding(rel, lineno, m.start(), f"audit: uses `{m.group(1)}`"))
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
