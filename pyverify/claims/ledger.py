"""Build, save and print the claims ledger from the saved study (``pyverify claims``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyverify.claims.rules import rules, study_findings
from pyverify.claims.subject import gate_against, run_gate, scale_line
from pyverify.claims.verdict import CLAIMS, FINDINGS, STATEMENTS, Verdict
from pyverify.collapse.merge import NotAStudyError, load_sources

__all__ = [
    "NotAStudyError",
    "build_ledger",
    "format_ledger",
    "format_row",
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
    """The rows of a study's saved results: E1..E8, N1, N2, N3, N7, then the findings F1, F2."""
    return [*rules(result, timings), *study_findings(result)]


def load_ledger(src: Path | Sequence[Path]) -> tuple[dict[str, Any], list[Verdict]]:
    """The saved study (or the merged run folders, :func:`load_study`) and its ledger."""
    result, timings = load_study(src)
    return result, build_ledger(result, timings)


def ledger_json(result: dict[str, Any], ledger: list[Verdict]) -> dict[str, Any]:
    """The float-free, byte-stable ledger record (outcomes, rules, premises; no numbers)."""
    return {
        "source": "reports/collapse/collapse.json (and timings.json for E5)",
        "gate": {
            "against": gate_against(result),
            "passed": {n: run_gate(result, n).passed for n in result["runs"]},
        },
        "claims": [v.to_json() for v in ledger if v.claim in CLAIMS or v.claim in STATEMENTS],
        "findings": [v.to_json() for v in ledger if v.claim in FINDINGS],
    }


def _fmt(x: float | int | str) -> str:
    if isinstance(x, float):
        return "0" if x == 0 else f"{x:.3g}"
    return str(x)


def _nums(d: dict[str, float | int | str]) -> str:
    return "; ".join(f"{k} {_fmt(x)}" for k, x in d.items())


def format_row(v: Verdict) -> list[str]:
    """One row as plain text: outcome, scope, premise, numbers, trend, rule and caveat."""
    met = {True: "met", False: "NOT MET", None: "not measured"}[v.premise_met]
    lines = [
        f"{v.claim} {v.label.upper()} -- {v.statement}",
        f"   decided by: {v.decided_by}",
        f"   scope: {v.scope}",
        f"   premise ({met}): {v.premise}",
    ]
    if v.numbers:
        lines.append(f"   numbers: {_nums(v.numbers)}")
    if v.trend or v.trend_numbers:
        lines.append(f"   trend: {v.trend}" + (f" ({_nums(v.trend_numbers)})" if v.trend_numbers
                                               else ""))  # fmt: skip
    lines.append(f"   rule: {v.rule}")
    if v.caveat:
        lines.append(f"   caveat: {v.caveat}")
    return lines


def format_ledger(result: dict[str, Any], ledger: list[Verdict]) -> str:
    """The ledger as plain text (``pyverify claims``)."""
    passed = [n for n in result["runs"] if run_gate(result, n).passed]
    lines = [
        f"claims ledger ({scale_line(result)})",
        f"gate: {gate_against(result)}; runs that pass: {', '.join(passed) or 'none'}",
        "",
    ]
    for v in ledger:
        if v.claim == "F1":
            lines += ["", "findings of the study (not claims of the paper)", ""]
        lines += format_row(v)
    return "\n".join(lines)
