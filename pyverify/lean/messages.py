"""Lean diagnostics: parsing ``lean --json`` output and printing it plainly."""

from __future__ import annotations

import json
from dataclasses import dataclass

_SEVERITY = {"information": "info", "warning": "warning", "error": "error"}


@dataclass(frozen=True)
class Diagnostic:
    """One message Lean reported.

    Attributes
    ----------
    file, line, col
        Position (``line`` 1-based, ``col`` 0-based, as Lean prints them).
    severity
        ``"error"``, ``"warning"`` or ``"info"``.
    message
        The message text (may span lines).
    kind
        Lean's message tag, e.g. ``"hasSorry"`` for a ``sorry`` warning.
    """

    file: str
    line: int
    col: int
    severity: str
    message: str
    kind: str = ""

    def format(self) -> str:
        """Return ``file:line:col: severity: message``."""
        return f"{self.file}:{self.line}:{self.col}: {self.severity}: {self.message}"

    @property
    def is_sorry(self) -> bool:
        """Whether this is Lean's ``declaration uses 'sorry'`` warning."""
        return self.kind == "hasSorry" or "declaration uses `sorry`" in self.message


def parse_json_output(stdout: str) -> tuple[list[Diagnostic], list[str]]:
    """Split the output of ``lean --json`` into diagnostics and other lines.

    The WebAssembly build also prints ``[DEBUG:...]`` lines, an echo of the
    input file's first 200 characters and the paths of loaded ``.olean`` files;
    only JSON message objects are diagnostics.

    Parameters
    ----------
    stdout
        Everything the process wrote.

    Returns
    -------
    tuple
        The diagnostics in output order, and the remaining non-empty lines
        (noise included) for callers that want to show them on a crash.
    """
    diagnostics: list[Diagnostic] = []
    rest: list[str] = []
    for line in stdout.splitlines():
        text = line.strip()
        if text.startswith("{") and '"severity"' in text:
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                rest.append(line)
                continue
            pos = obj.get("pos") or {}
            diagnostics.append(
                Diagnostic(
                    file=str(obj.get("fileName", "?")),
                    line=int(pos.get("line", 0)),
                    col=int(pos.get("column", 0)),
                    severity=_SEVERITY.get(obj.get("severity", ""), str(obj.get("severity"))),
                    message=str(obj.get("data", "")),
                    kind=str(obj.get("kind", "")),
                )
            )
        elif text and not text.startswith("[DEBUG"):
            rest.append(line)
    return diagnostics, rest
