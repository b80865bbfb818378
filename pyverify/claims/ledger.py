"""Build, save and print the claims ledger from the saved study (``pyverify claims``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyverify.claims.rules import GATE_ORDER, gate, rules, scale_line
from pyverify.claims.verdict import CLAIMS, Verdict
from pyverify.collapse.merge import NotAStudyError, load_sources

__all__ = [
    "NotAStudyError",
    "build_ledger",
    "format_ledger",
    "ledger_json",
    "load_ledger",
    "load_study",
]


def load_study(
    src: Path | Sequence[Path],
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The saved study (``collapse.json``, ``timings.json``) or run folders, merged.

    ``src``: a study folder, or several folders (studies or the run folders of
    ``pyverify collapse --run NAME -o DIR``) merged into one study of the same
    shape (:mod:`pyverify.collapse.merge`: their settings must agree apart from
    the step count).

    Raises
    ------
    MissingInputError
        When a folder or its results are absent.
    NotAStudyError
        When ``collapse.json`` (or ``run.json``) is not an ablation study's.
    InputValueError
        When a file is not JSON, or the folders are not runs of one study.
    """
    return load_sources([src] if isinstance(src, Path) else list(src))


def build_ledger(result: dict[str, Any], timings: dict[str, Any] | None) -> list[Verdict]:
    """E1..E8 verdicts of a study's saved results."""
    return rules(result, timings)


def load_ledger(src: Path | Sequence[Path]) -> tuple[dict[str, Any], list[Verdict]]:
    """The saved study (or the merged run folders, :func:`load_study`) and its ledger."""
    result, timings = load_study(src)
    return result, build_ledger(result, timings)


def ledger_json(result: dict[str, Any], ledger: list[Verdict]) -> dict[str, Any]:
    """The float-free, byte-stable ledger record (verdicts, rules, caveats; no numbers)."""
    ok, _why = gate(result)
    return {
        "source": "reports/collapse/collapse.json (and timings.json for E5)",
        "gate_passed": ok,
        "gate_order": GATE_ORDER,
        "claims": [v.to_json() for v in ledger],
    }


def _fmt(x: float | int | str) -> str:
    if isinstance(x, float):
        return "0" if x == 0 else f"{x:.3g}"
    return str(x)


def format_ledger(result: dict[str, Any], ledger: list[Verdict]) -> str:
    """The ledger as plain text (``pyverify claims``)."""
    _ok, why = gate(result)
    lines = [f"claims ledger ({scale_line(result)})", f"gate: {why}", ""]
    for v in ledger:
        lines.append(f"{v.claim} {v.verdict.upper()} -- {CLAIMS[v.claim]}")
        lines.append(f"   decided by: {v.decided_by}")
        if v.numbers:
            lines.append("   numbers: " + "; ".join(f"{k} {_fmt(x)}" for k, x in v.numbers.items()))
        lines.append(f"   rule: {v.rule}")
        lines.append(f"   caveat: {v.caveat}")
    return "\n".join(lines)
