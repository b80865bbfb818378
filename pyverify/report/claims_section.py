"""The report's ledger sections: the claims E1-E8 and statements N1-N7, then the findings F1, F2.

The outcomes come from :mod:`pyverify.claims` applied to the saved study in
``reports/collapse/``; :func:`claims_section` also writes the float-free,
byte-stable ``claims.json`` (outcomes, scopes, premises, rules, caveats) beside
the report. Each row shows its scope, its premise (met or not), the numbers,
the trend and the caveat.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyverify.claims.findings import LEAK_NATS
from pyverify.claims.ledger import ledger_json, load_ledger
from pyverify.claims.subject import best_ngram, run_gate, scale_line
from pyverify.claims.verdict import FINDINGS, Verdict
from pyverify.errors import UserError
from pyverify.output import write_json
from pyverify.report.markdown import num, table

__all__ = ["CLAIMS_FILE", "claims_section"]

CLAIMS_FILE = "claims.json"
TITLE = "## The paper's empirical claims: the ledger"
FINDINGS_TITLE = "## Findings of the study (not claims of the paper)"
MET = {True: "met", False: "**not met**", None: "not measured"}


def _nums(d: dict[str, Any]) -> str:
    return "; ".join(f"{k} {format(x, '.3g') if isinstance(x, float) else x}" for k, x in d.items())


def _rows(ledger: list[Verdict]) -> list[list[str]]:
    return [
        [
            f"{v.claim} {v.statement}",
            f"**{v.verdict}**" + (f" ({v.reason})" if v.reason else ""),
            v.decided_by,
            f"{v.scope}. Premise ({MET[v.premise_met]}): {v.premise}",
            _nums(v.numbers),
            (v.trend + (f" ({_nums(v.trend_numbers)})" if v.trend_numbers else "")) or "–",
            v.caveat or "–",
        ]
        for v in ledger
    ]


HEADER = ["row", "outcome", "decided by", "scope and premise", "numbers", "trend", "caveat"]


def _exposure_rows(result: dict[str, Any]) -> list[list[str]]:
    """F1 per run: the three validation losses and the online contract (the audit's form)."""
    rows = []
    for name, run in result["runs"].items():
        if not run.get("history"):
            continue
        tf = run.get("val_loss", run["history"][-1].get("val_loss"))
        causal, pa = run.get("causal_val_loss"), run.get("prompt_A_val_loss")
        o = run.get("online_contract")
        gap = None if causal is None or tf is None else causal - tf
        rows.append(
            [
                name,
                (run.get("spec") or {}).get("objective", "–"),
                num(tf),
                num(causal),
                num(pa),
                num(gap),
                "–" if gap is None else ("**yes**" if gap > LEAK_NATS else "no"),
                "not measured" if o is None else (
                    f"{o['changed']} of {o['entries']} ({o['fraction_changed']:.3g}), "
                    f"max {o['max_abs_change']:.3g}"
                ),
            ]
        )  # fmt: skip
    return rows


def claims_section(report_dir: Path, collapse_dir: str = "collapse") -> list[str]:
    """Markdown lines of the ledger; writes ``report_dir/claims.json`` when a study is saved."""
    lines = [TITLE, ""]
    try:
        result, ledger = load_ledger(report_dir / collapse_dir)
    except UserError as exc:
        return [*lines, f"No ledger: {exc}.", ""]
    write_json(report_dir / CLAIMS_FILE, ledger_json(result, ledger))
    order, best = best_ngram(result)
    passed = [n for n in result["runs"] if run_gate(result, n).passed]
    claims = [v for v in ledger if v.claim not in FINDINGS]
    found = [v for v in ledger if v.claim in FINDINGS]
    lines += [
        "Each claim of the paper's empirical half and each newer statement of the author "
        "(`docs/paper-claims.md`) gets an outcome computed from the saved study by a rule in "
        "`pyverify/claims/` (thresholds named there, fixed before the study's full run; "
        "`pyverify claims` prints the same). Every rule checks, in order, that what it needs "
        "was measured, the gate of every run it uses, its premise, and only then the end "
        "point; where the end point cannot decide, a trend whose interval excludes 0 may say "
        "'trending toward' or 'trending away'. Outcomes alone: "
        f"[{CLAIMS_FILE}]({CLAIMS_FILE}). Scale: {scale_line(result)}. Gate: the causal "
        f"validation loss must beat the best n-gram order (order {order}, {best:.3f} "
        f"nats/byte); runs that do: {', '.join(passed) or 'none'}.",
        "",
    ]
    lines += table(HEADER, _rows(claims))
    lines += ["", "<details><summary>rules</summary>", "", "```"]
    lines += [f"{v.claim}: {v.rule}" for v in ledger]
    lines += ["```", "", "</details>", "", FINDINGS_TITLE, ""]
    lines += [
        "What the study measured about its own specimen, decided by rules like the claims, "
        "without the gate (they describe the specimen whatever its quality; N7 above is F2 "
        "with the gate). Figures: [collapse/exposure.png](collapse/exposure.png), "
        "[collapse/trends.png](collapse/trends.png).",
        "",
    ]
    lines += table(HEADER, _rows(found))
    lines += [
        "",
        f"F1 per run (nats/byte; a run reads later tokens when its causal loss exceeds the "
        f"teacher-forced one by more than {LEAK_NATS:g}; online contract: prefix logits that "
        "change when the rest of the sequence is replaced, the author's audit constants):",
        "",
    ]
    lines += table(
        ["run", "objective", "teacher-forced", "causal", "prompt-A", "causal − teacher-forced",
         "reads later tokens", "online contract: changed (fraction), max change"],
        _exposure_rows(result),
    )  # fmt: skip
    return [*lines, ""]
