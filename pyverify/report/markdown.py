"""Markdown cells and tables shared by the report's sections."""

from __future__ import annotations

from typing import Any

__all__ = ["not_done", "num", "sci", "table", "verdict"]


def sci(x: Any) -> str:
    """``x`` in scientific notation (``–`` for None, strings as they are)."""
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    return f"{x:.2e}"


def num(x: Any, fmt: str = ".3g") -> str:
    """``x`` formatted with ``fmt`` (``–`` for None, strings as they are)."""
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    return format(x, fmt)


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table (``|`` in cells escaped)."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def verdict(status: str | None) -> str:
    """A status as the report shows it (failures in bold)."""
    return {
        "passed": "passed",
        "proved": "proved",
        "failed": "**FAILED**",
        "build failed": "**build failed**",
        "error": "**error**",
        "missing": "**missing**",
        "none": "**none**",
        "skipped": "skipped",
        "not run": "not run",
        "n/a": "–",
    }.get(str(status), str(status))


def not_done(lines: list[str], part: dict[str, Any], option: str, failed: bool) -> list[str]:
    """The whole section of a ``part`` skipped by ``option``, or failed without results; else []."""
    if part.get("status") == "skipped":
        return [*lines, f"Not run (`{option}`).", ""]
    return [*lines, f"**Error**: {part.get('error')}", ""] if failed else []
