"""The report's "Claims ledger" section: E1-E8, each verdict computed by a rule.

The verdicts come from :mod:`pyverify.claims` applied to the saved study in
``reports/collapse/``; :func:`claims_section` also writes the float-free,
byte-stable ``claims.json`` (verdicts, rules, caveats) beside the report.
"""

from __future__ import annotations

from pathlib import Path

from pyverify.claims.ledger import ledger_json, load_ledger
from pyverify.claims.rules import gate, scale_line
from pyverify.claims.verdict import CLAIMS
from pyverify.errors import UserError
from pyverify.output import write_json
from pyverify.report.markdown import table

__all__ = ["CLAIMS_FILE", "claims_section"]

CLAIMS_FILE = "claims.json"
TITLE = "## The paper's empirical claims: the ledger"


def _numbers(v) -> str:
    return "; ".join(
        f"{k} {format(x, '.3g') if isinstance(x, float) else x}" for k, x in v.numbers.items()
    )


def claims_section(report_dir: Path, collapse_dir: str = "collapse") -> list[str]:
    """Markdown lines of the ledger; writes ``report_dir/claims.json`` when a study is saved."""
    lines = [TITLE, ""]
    try:
        result, ledger = load_ledger(report_dir / collapse_dir)
    except UserError as exc:
        return [*lines, f"No ledger: {exc}.", ""]
    write_json(report_dir / CLAIMS_FILE, ledger_json(result, ledger))
    _ok, why = gate(result)
    lines += [
        "Each claim of the paper's empirical half (`docs/paper-claims.md`) gets a verdict "
        "computed from the saved study by a rule in `pyverify/claims/rules.py` (thresholds "
        f"named there; `pyverify claims` prints the same). Verdicts alone: [{CLAIMS_FILE}]"
        f"({CLAIMS_FILE}). Scale: {scale_line(result)}. Gate: {why}.",
        "",
    ]
    lines += table(
        ["claim", "verdict", "decided by", "numbers", "caveat"],
        [
            [
                f"{v.claim} {CLAIMS[v.claim]}",
                f"**{v.verdict}**",
                v.decided_by,
                _numbers(v),
                v.caveat,
            ]
            for v in ledger
        ],
    )
    lines += ["", "<details><summary>rules</summary>", "", "```"]
    lines += [f"{v.claim}: {v.rule}" for v in ledger]
    return [*lines, "```", "", "</details>", ""]
