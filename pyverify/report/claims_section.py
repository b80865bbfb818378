"""The report's ledger sections: the claims E1-E8 and statements N1-N7, then the findings F1, F2.

The outcomes come from :mod:`pyverify.claims` applied to every regime's saved
studies (:mod:`pyverify.claims.regimes`): first the row x regime table, then each
regime's rows; :func:`claims_section` also writes the float-free,
byte-stable ``claims.json`` (outcomes, scopes, premises, rules, caveats) beside
the report. Each row shows its scope, its premise (met or not), the numbers,
the trend and the caveat.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyverify.claims.findings import LEAK_NATS
from pyverify.claims.regimes import RegimeLedger, regimes_json, regimes_table, saved_regimes
from pyverify.claims.verdict import FINDINGS, Verdict
from pyverify.errors import UserError
from pyverify.output import write_json
from pyverify.report.markdown import num, table
from pyverify.report.regime_plots import REGIME_FIGURES

__all__ = ["CLAIMS_FILE", "claims_section"]

CLAIMS_FILE = "claims.json"
TITLE = "## The paper's empirical claims: the ledger, per regime"
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


def _regime_lines(lg: RegimeLedger) -> list[str]:
    """One regime: its scope and gate, the rows, the rules, the findings, F1 per run."""
    rows = lg.rows
    claims = [v for v in rows if v.claim not in FINDINGS]
    found = [v for v in rows if v.claim in FINDINGS]
    passed = [f"{n} (seeds {', '.join(s for s, ok in g.items() if ok)})"
              for n, g in lg.gate.items() if any(g.values())]  # fmt: skip
    lines = [
        f"### Regime `{lg.regime.name}`",
        "",
        f"{lg.regime.what}. Scope: {lg.scope}; {lg.scale}. Gate: every run a row uses must "
        f"beat {lg.against}, in every seed it is judged on; passed by: "
        f"{'; '.join(passed) or 'none'}.",
        "",
    ]
    figs = [f for f in REGIME_FIGURES if (lg.base / f).is_file()]
    if figs:
        lines += [" ".join(f"![{f}]({lg.regime.folder}/{f})" for f in figs), ""]
    lines += table(HEADER, _rows(claims))
    lines += ["", "<details><summary>rules</summary>", "", "```"]
    lines += [f"{v.claim}: {v.rule}" for v in rows]
    lines += ["```", "", "</details>", ""]
    lines += [
        f"Findings of the study in regime `{lg.regime.name}` (not claims of the paper; they "
        "take no gate; N7 above is F2 with the gate):",
        "",
    ]
    lines += table(HEADER, _rows(found))
    for seed, (result, _tim) in sorted(lg.saved.items()):
        lines += [
            "",
            f"F1 per run, seed {seed} (validation loss per token; a run reads later tokens "
            f"when its causal loss exceeds the teacher-forced one by more than {LEAK_NATS:g}; "
            "online contract: prefix logits that change when the rest of the sequence is "
            "replaced, the author's audit constants):",
            "",
        ]
        lines += table(
            ["run", "objective", "teacher-forced", "causal", "prompt-A",
             "causal − teacher-forced", "reads later tokens",
             "online contract: changed (fraction), max change"],
            _exposure_rows(result),
        )  # fmt: skip
    return [*lines, ""]


def claims_section(report_dir: Path) -> list[str]:
    """Markdown lines of the ledger of every saved regime; writes ``report_dir/claims.json``."""
    lines = [TITLE, ""]
    try:
        ledgers = saved_regimes(report_dir)
    except UserError as exc:
        return [*lines, f"No ledger: {exc}.", ""]
    if not ledgers:
        return [*lines, f"No ledger: no saved study under {report_dir}.", ""]
    write_json(report_dir / CLAIMS_FILE, {"regimes": regimes_json(ledgers)})
    lines += [
        "Each claim of the paper's empirical half and each newer statement of the author "
        "(`docs/paper-claims.md`) gets an outcome per regime, computed from the saved "
        "studies by a rule in `pyverify/claims/` (thresholds named there, fixed before the "
        "studies' full runs; `pyverify claims` prints the same). Every rule checks, in order, "
        "that what it needs was measured, the gate of every run it uses, its premise, and only "
        "then the end point; where the end point cannot decide, a trend whose interval "
        "excludes 0 may say 'trending toward' or 'trending away'. A regime of several seeds "
        "judges each seed alone and keeps a row's outcome only where the seeds agree "
        "('seeds disagree' otherwise); a decisive outcome needs 3 seeds. Outcomes alone: "
        f"[{CLAIMS_FILE}]({CLAIMS_FILE}).",
        "",
    ]
    header, rows = regimes_table(ledgers)
    lines += table(header, rows)
    lines.append("")
    for lg in ledgers:
        lines += _regime_lines(lg)
    return lines
