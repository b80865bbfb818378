"""Build, save and print the claims ledger from the saved study (``pyverify claims``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyverify.claims.rules import GATE_ORDER, gate, rules, scale_line
from pyverify.claims.verdict import CLAIMS, Verdict
from pyverify.errors import InputValueError, MissingInputError

__all__ = [
    "NotAStudyError",
    "build_ledger",
    "format_ledger",
    "ledger_json",
    "load_ledger",
    "load_study",
]


class NotAStudyError(InputValueError):
    """``collapse.json`` is JSON but not an ablation study's result."""


def load_study(collapse_dir: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``collapse.json`` (required) and ``timings.json`` (optional) of a saved study.

    Raises
    ------
    MissingInputError
        When ``collapse.json`` is absent.
    NotAStudyError
        When ``collapse.json`` is not an ablation study's result.
    InputValueError
        When a file is not JSON.
    """
    src = collapse_dir / "collapse.json"
    if not src.is_file():
        raise MissingInputError(f"{src} not found: run `pyverify collapse` first")

    def read(p: Path) -> dict[str, Any]:
        try:
            return json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputValueError(f"{p}: unreadable ({exc})") from exc

    result = read(src)
    if result.get("study") != "ablation" or "runs" not in result:
        raise NotAStudyError(f"{src}: not an ablation study (rerun `pyverify collapse`)")
    tf = collapse_dir / "timings.json"
    return result, read(tf) if tf.is_file() else None


def build_ledger(result: dict[str, Any], timings: dict[str, Any] | None) -> list[Verdict]:
    """E1..E8 verdicts of a study's saved results."""
    return rules(result, timings)


def load_ledger(collapse_dir: Path) -> tuple[dict[str, Any], list[Verdict]]:
    """The saved study and its ledger."""
    result, timings = load_study(collapse_dir)
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
