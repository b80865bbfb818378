"""The ledger per regime: every seed judged by the same rules, then one row over seeds.

A regime (:mod:`pyverify.collapse.regimes`) saves one study per seed. Each is
judged alone (:func:`~pyverify.claims.ledger.build_ledger`: the gate of every run,
the premise, the end point, trends), then each row is combined over the seeds
(:func:`~pyverify.claims.seeds.combine_seeds`: the seeds' common outcome, else
"seeds disagree"; a decisive outcome needs 3 seeds). Every row's scope starts
with the regime's (task, model size, steps, seeds), so a verdict says what it was
measured on. :func:`regimes_json` is the ``regimes`` list of ``claims.json``: per
regime its ``name``, ``gate`` (``passed`` keyed by run, then by seed) and
``rows`` (row ID -> outcome), then the rows in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyverify.claims.ledger import build_ledger, format_row, load_study
from pyverify.claims.seeds import combine_seeds
from pyverify.claims.subject import gate_against, run_gate, scale_line
from pyverify.claims.verdict import Verdict
from pyverify.collapse.merge import RESULT_FILE
from pyverify.collapse.regimes import REGIMES, Regime, seed_folder

__all__ = [
    "RegimeLedger",
    "format_regimes",
    "load_regime",
    "regime_ledger",
    "regimes_json",
    "regimes_table",
    "saved_regimes",
]

Saved = dict[int, tuple[dict[str, Any], dict[str, Any] | None]]
"""A regime's saved studies: seed -> (``collapse.json``, ``timings.json`` or None)."""


@dataclass(frozen=True)
class RegimeLedger:
    """One regime's rows, gate and scope.

    Attributes
    ----------
    regime : Regime
        What was trained.
    scope : str
        The regime and the seeds saved (each row's own scope adds the task, model size
        and steps).
    scale : str
        The specimen's size beside the paper's (:func:`~pyverify.claims.subject.scale_line`).
    gate : dict
        ``{run: {seed: passed}}``.
    against : str
        What the gate compares with (number-free).
    rows : list of Verdict
        One per claim, statement and finding, combined over the seeds.
    saved : dict
        The per-seed studies the rows come from.
    base : pathlib.Path
        The regime's folder.
    """

    regime: Regime
    scope: str
    scale: str
    gate: dict[str, dict[str, bool]]
    against: str
    rows: list[Verdict]
    saved: Saved
    base: Path = Path()


def load_regime(root: Path, reg: Regime) -> Saved:
    """The saved studies of ``reg`` under ``root`` (``reports/``), by seed; {} if none."""
    out: Saved = {}
    for s in reg.seeds:
        d = seed_folder(root / reg.folder, reg, s)
        if (d / RESULT_FILE).is_file():
            out[s] = load_study(d)
    return out


def _scope(reg: Regime, saved: Saved) -> str:
    seeds = ", ".join(map(str, sorted(saved)))
    of = "" if len(saved) == len(reg.seeds) else f" of {', '.join(map(str, reg.seeds))}"
    return f"regime {reg.name}, seeds {seeds}{of}"


def regime_ledger(reg: Regime, saved: Saved, base: Path = Path()) -> RegimeLedger:
    """The rows of ``reg`` from its saved studies (module docstring)."""
    per_seed = {s: build_ledger(res, tim) for s, (res, tim) in saved.items()}
    scope = _scope(reg, saved)
    gate: dict[str, dict[str, bool]] = {}
    for s, (res, _tim) in sorted(saved.items()):
        for name in res["runs"]:
            gate.setdefault(name, {})[str(s)] = run_gate(res, name).passed
    first = saved[min(saved)][0]
    rows = combine_seeds(per_seed, scope)
    return RegimeLedger(reg, scope, scale_line(first), {n: gate[n] for n in sorted(gate)},
                        gate_against(first), rows, saved, base)  # fmt: skip


def saved_regimes(root: Path) -> list[RegimeLedger]:
    """The ledger of every regime with saved results under ``root``, in registry order."""
    out = []
    for reg in REGIMES.values():
        saved = load_regime(root, reg)
        if saved:
            out.append(regime_ledger(reg, saved, root / reg.folder))
    return out


def regimes_json(ledgers: list[RegimeLedger]) -> list[dict[str, Any]]:
    """The float-free ``regimes`` list of ``claims.json`` (module docstring)."""
    return [
        {
            "name": lg.regime.name,
            "what": lg.regime.what,
            "scope": lg.scope,
            "scale": lg.scale,
            "seeds": sorted(lg.saved),
            "gate": {"against": lg.against, "passed": lg.gate},
            "rows": {v.claim: v.label for v in lg.rows},
            "ledger": [v.to_json() for v in lg.rows],
        }
        for lg in ledgers
    ]


def regimes_table(ledgers: list[RegimeLedger]) -> tuple[list[str], list[list[str]]]:
    """The row x regime table: a header and, per row ID, each regime's outcome."""
    header = ["row", *(lg.regime.name for lg in ledgers)]
    ids: list[str] = []
    for lg in ledgers:
        ids += [v.claim for v in lg.rows if v.claim not in ids]
    by = [{v.claim: v.label for v in lg.rows} for lg in ledgers]
    return header, [[i, *(b.get(i, "–") for b in by)] for i in ids]


def format_regimes(ledgers: list[RegimeLedger]) -> str:
    """The ledger of every regime as plain text: the row x regime table, then each regime."""
    header, rows = regimes_table(ledgers)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["claims ledger, row x regime", ""]
    for r in [header, ["-" * w for w in widths], *rows]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for lg in ledgers:
        lines += [
            "",
            f"== regime {lg.regime.name}: {lg.regime.what}",
            f"scope: {lg.scope}; {lg.scale}",
        ]
        passed = [f"{n} (seeds {', '.join(s for s, ok in g.items() if ok)})"
                  for n, g in lg.gate.items() if any(g.values())]  # fmt: skip
        lines += [f"gate: beat {lg.against}; passed by: {'; '.join(passed) or 'none'}", ""]
        for v in lg.rows:
            lines += format_row(v)
            if v.seeds:
                lines.append("   per seed: " + "; ".join(f"{s}: {o}" for s, o in v.seeds.items()))
    return "\n".join(lines)


def given_regime(dirs: list[Path]) -> RegimeLedger:
    """The folders of ``pyverify claims -i`` as one regime of one seed (merged into one study)."""
    from dataclasses import replace

    from pyverify.collapse.config import RunConfig

    result, timings = load_study(dirs)
    seed = int(result["settings"].get("seed", 0))
    what = "the study or run folders given with -i: " + ", ".join(map(str, dirs))
    reg = Regime("given", "", tuple(result["runs"]), (seed,),
                 lambda: replace(RunConfig(), seed=seed), what)  # fmt: skip
    return regime_ledger(reg, {seed: (result, timings)})
