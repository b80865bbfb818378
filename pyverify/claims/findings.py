"""Findings of the study beside the claims: F1 target exposure, F2 exposure and the collapse trend.

Not claims of the paper: what the study measured about its own specimen, each
decided by a rule from the saved results like a claim, in the same row format
(:class:`~pyverify.claims.verdict.Verdict`). No gate applies (they describe the
specimen, whatever its quality); the gated form of F2 is the ledger's N7.

* **F1 target exposure.** In the author's model A, hence G, is formed from the
  query Gram of the WHOLE window, so a teacher-forced pass lets each position
  read later tokens through G. Per run: the teacher-forced, causal (each
  position from its prefix alone) and prompt-A (A from the first tokens only)
  validation losses, and the online contract in the author's audit form
  (fraction of prefix logits that change when the suffix is replaced, and the
  largest change).
* **F2 exposure and the collapse trend.** The trend of G's order parameter
  (:mod:`pyverify.claims.trends`) of ``author`` (trained with exposure) against
  ``prompt-A`` and ``last-only`` (trained without), by the bootstrap interval of
  the difference of mean slopes at every probe length.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pyverify.claims.subject import Subject, TrendCall, outcome
from pyverify.claims.trends import TREND_CI, difference, series_getters, trend
from pyverify.claims.verdict import (
    ABSENT,
    DIFFERS,
    INCONCLUSIVE,
    NO_DIFFERENCE,
    OPEN,
    PRESENT,
    Verdict,
)

__all__ = [
    "EXPOSED",
    "EXPOSURE_FREE",
    "LEAK_NATS",
    "Comparison",
    "comparison_row",
    "exposure_comparison",
    "exposure_finding",
    "findings",
]

LEAK_NATS = 0.05
"""F1: causal minus teacher-forced validation loss above this (nats per token): the model
reads later tokens through G (used by the report since the first study: about 3 % of the
loss of a run near the n-gram baselines, well above the difference of the two losses on a
model whose G cannot see the future, which is 0 up to rounding)."""
EXPOSED = "author"
EXPOSURE_FREE = ("prompt-A", "last-only")
Numbers = dict[str, float | int | str]


def _ungated(s: Subject) -> Subject:
    return dataclasses.replace(s, gate=None)


def exposure_finding(subjects: dict[str, Subject]) -> Verdict:
    """F1: per run the three validation losses and the online contract (module docstring)."""
    rule = (
        f"per run: the model uses later tokens through G if its causal validation loss "
        f"exceeds the teacher-forced one by more than {LEAK_NATS:g} nats/token; present if some "
        "run does; otherwise open, not used, if in some run prefix logits change when the rest "
        "of the sequence is replaced (the author's online contract: the channel exists), and "
        "absent if in no run any does; the prompt-A loss (A from the first tokens only) is "
        "leak-free; no gate: a finding about the specimen whatever its quality"
    )
    nums: Numbers = {}
    gaps: list[float] = []
    moved: list[bool] = []
    for name, s in subjects.items():
        f = s.final
        causal = f.get("causal_val_loss")
        tf = f.get("val_loss", s.last.get("val_loss") if s.history else None)
        pa = f.get("prompt_A_val_loss")
        if causal is not None and tf is not None:
            gaps.append(causal - tf)
            parts = [f"{tf:.4g}", f"{causal:.4g}", "–" if pa is None else f"{pa:.4g}"]
            nums[f"{name} loss teacher-forced / causal / prompt-A"] = " / ".join(parts)
        ans = f.get("answers")
        if ans is not None:  # the recall task: the answers in each inference (display only)
            nums[f"{name} answer accuracy teacher-forced / causal / prompt-cache"] = " / ".join(
                f"{ans[m]['accuracy']:.4g}" for m in ("teacher-forced", "causal", "prompt-cache")
            )
            nums[f"{name} answer exposure gap (teacher-forced - causal, - prompt-cache)"] = (
                f"{ans['exposure_gap']['causal']:+.4g}, {ans['exposure_gap']['prompt-cache']:+.4g}"
            )
        o = f.get("online_contract")
        if o is not None:
            moved.append(o["changed"] > 0)
            nums[f"{name} online contract"] = (
                f"{o['changed']} of {o['entries']} prefix logits change "
                f"({o['fraction_changed']:.3g}), max {o['max_abs_change']:.3g}"
            )
    one = next(iter(subjects.values())) if len(subjects) == 1 else None
    scope = (
        one.scope
        if one is not None
        else "every run: losses on the validation windows; "
        "online contract on validation text (the audit's constants)"
    )
    caveat = (
        "the released 110M-5 is prefix-consistent bitwise (0 of 2,048,000 logits change) and "
        "110M-1 is not (1,525,617 change, up to 9.4e-4) (docs/paper-claims.md)"
    )
    return outcome(
        "F1", [_ungated(s) for s in subjects.values()], rule=rule, scope=scope, caveat=caveat,
        numbers=nums, premise="a causal and a teacher-forced validation loss saved",
        premise_met=bool(gaps) or None, decide=lambda: _exposure(gaps, moved),
        by=one.by if one is not None else "all runs",
    )  # fmt: skip


def _exposure(gaps: list[float], moved: list[bool]) -> str:
    if max(gaps) > LEAK_NATS:
        return PRESENT
    return OPEN if any(moved) else ABSENT


@dataclass(frozen=True)
class Comparison:
    """F2's comparison, in the pieces a row needs (also N7's, gated)."""

    uses: list[Subject]
    by: str
    scope: str
    rule: str
    caveat: str
    premise: str
    premise_met: bool | None
    outcome: str
    trend_text: str
    numbers: Numbers = field(default_factory=dict)
    trend_numbers: Numbers = field(default_factory=dict)


def exposure_comparison(subjects: dict[str, Subject]) -> Comparison:
    """The G trend of ``author`` against each exposure-free run, at every probe length."""
    rule = (
        f"the mean log-slope per 1,000 steps of G's order parameter (per layer x head) of each "
        f"exposure-free run ({', '.join(EXPOSURE_FREE)}) minus {EXPOSED}'s, with its "
        f"{TREND_CI:.0%} bootstrap interval, at every S: a run differs if the interval excludes "
        "0 with the same sign at every S, shows no difference if it includes 0 at every S; "
        "differs if some exposure-free run differs, no difference detected if all show none, "
        "else inconclusive"
    )
    a = subjects.get(EXPOSED)
    free = [subjects[n] for n in EXPOSURE_FREE if n in subjects and subjects[n].history]
    uses = ([a] if a is not None else []) + free
    premise = (
        f"the {EXPOSED} run and every exposure-free run present, each with a G trend at every S"
    )
    lengths = ", ".join(f"{s.by} {s.last['step']}" for s in uses if s.history)
    caveat = (
        f"steps per run: {lengths}; each slope is fitted over its own run's window (the "
        "schedules are stretched with the run), so a longer run's slope per 1,000 steps is "
        "not the same stage of training; each seed's runs are compared alone (a regime of "
        "several seeds keeps the outcome only where they agree)"
    )
    scope = "the G order parameter of the specimen's runs over training"
    by = " vs ".join(s.by for s in uses) or EXPOSED
    base = dict(uses=uses, by=by, rule=rule, scope=scope, caveat=caveat, premise=premise)
    if a is None or not a.history or not free:
        return Comparison(
            **base,  # type: ignore[arg-type]
            premise_met=None,
            outcome=INCONCLUSIVE,
            trend_text="not measured",
        )
    keys = list(a.last["order_parameter"])
    S_all = sorted(keys, key=int) if all(k.isdigit() for k in keys) else keys
    getters = series_getters(a.history[0])
    names = [f"G (S={S})" for S in S_all]
    ta = {n: trend(a.history, n, getters[n]) for n in names}
    tnums: Numbers = {f"{EXPOSED} {n} log-slope": t.text() for n, t in ta.items()}
    verdicts: dict[str, str] = {}
    ok = all(t.status == "ok" for t in ta.values())
    for b in free:
        gb = series_getters(b.history[0])
        tb = {n: trend(b.history, n, gb[n]) if n in gb else None for n in names}
        ok = ok and all(t is not None and t.status == "ok" for t in tb.values())
        dirs = set()
        for n in names:
            t = tb[n]
            if t is None:
                dirs.add("not measured")
                continue
            tnums[f"{b.by} {n} log-slope"] = t.text()
            d = difference(ta[n], t)
            tnums[f"{b.by} - {EXPOSED}, {n}"] = d.text()
            dirs.add(d.direction)
        verdicts[b.by] = (
            DIFFERS if dirs in ({"higher"}, {"lower"})
            else NO_DIFFERENCE if dirs == {"same"}
            else INCONCLUSIVE
        )  # fmt: skip
    vals = set(verdicts.values())
    out = DIFFERS if DIFFERS in vals else NO_DIFFERENCE if vals == {NO_DIFFERENCE} else INCONCLUSIVE
    text = "; ".join(f"{n} against {EXPOSED}: {v}" for n, v in verdicts.items())
    return Comparison(
        **base,  # type: ignore[arg-type]
        premise_met=ok,
        outcome=out,
        trend_text=text,
        trend_numbers=tnums,
    )


def _comparison_row(claim: str, cmp: Comparison, gated: bool) -> Verdict:
    uses = cmp.uses if gated else [_ungated(s) for s in cmp.uses]
    rule = cmp.rule if gated else f"{cmp.rule}; no gate: a finding about the specimen"
    return outcome(
        claim, uses, rule=rule, scope=cmp.scope, caveat=cmp.caveat, numbers=cmp.numbers,
        premise=cmp.premise, premise_met=cmp.premise_met, decide=lambda: cmp.outcome,
        trend=TrendCall(None, cmp.trend_text, cmp.trend_numbers), by=cmp.by,
    )  # fmt: skip


def findings(subjects: dict[str, Subject]) -> list[Verdict]:
    """F1 and F2 of a study's runs (``{name: Subject}``)."""
    usable = {n: s for n, s in subjects.items() if s.history}
    return [exposure_finding(usable), _comparison_row("F2", exposure_comparison(usable), False)]


def comparison_row(claim: str, subjects: dict[str, Subject], gated: bool) -> Verdict:
    """The exposure comparison as row ``claim`` (F2 ungated, N7 gated)."""
    return _comparison_row(claim, exposure_comparison(subjects), gated)
