"""The verdict rules: one function per claim (E1-E8) and newer statement (N1-N3, N7).

A rule judges :class:`~pyverify.claims.subject.Subject` s (a study run, the
step-0 record of a run, or the single record of ``pyverify diagnose
--checkpoint``) in the schema of :mod:`pyverify.measure`. :func:`rules` judges
the saved study (``collapse.json``; ``timings.json`` for E5);
:func:`checkpoint_rules` judges a checkpoint with the same functions, without
a gate (a checkpoint's training is not the suite's to judge) and without step
0 or trends. Every outcome is computed from the thresholds of
:mod:`~pyverify.claims.thresholds`; nothing is typed in. Each rule states its
scope and checks, in order (:func:`~pyverify.claims.subject.outcome`): the
gate of every run it uses, its premise, then the end point; trends
(:mod:`pyverify.claims.trends`) may name the direction where the end point
cannot decide.

The rules live by claim family: :mod:`~pyverify.claims.collapse_rules` (G's
order parameter: E1, E4, E7), :mod:`~pyverify.claims.cache_rules` (caches and
decoding: E2, E8, E5, N1), :mod:`~pyverify.claims.structure_rules` (A's
structure and the mechanism: E3, E6, N2, N3) and N7 here; their thresholds,
each with its reason, in :mod:`~pyverify.claims.thresholds`, what they share in
:mod:`~pyverify.claims.common`.

A rule that gives the same outcome on the step-0 record as on a trained model
says why in its rule text (``tests/claims/test_init_and_frozen.py`` feeds every
rule both).
"""

from __future__ import annotations

from typing import Any

from pyverify.claims.cache_rules import e2, e5, e8, n1
from pyverify.claims.collapse_rules import e1, e4, e7
from pyverify.claims.common import AUTHOR, FROZEN, ROW_ORDER, SUB, gate
from pyverify.claims.findings import LEAK_NATS, comparison_row, exposure_finding, findings
from pyverify.claims.structure_rules import e3, e6, n2, n3, reopenings
from pyverify.claims.subject import Gate, Subject, best_ngram, run_gate, scale_line, study_subject
from pyverify.claims.verdict import INCONCLUSIVE, NOT_MEASURED, Verdict

__all__ = [
    "LEAK_NATS",
    "Gate",
    "Subject",
    "best_ngram",
    "checkpoint_rules",
    "e1",
    "e2",
    "e3",
    "e4",
    "e5",
    "e6",
    "e7",
    "e8",
    "findings",
    "gate",
    "n1",
    "n2",
    "n3",
    "n7",
    "reopenings",
    "rules",
    "run_gate",
    "scale_line",
    "study_findings",
    "study_subject",
]


def n7(subjects: dict[str, Subject]) -> Verdict:
    """N7: the collapse trend with and without target exposure (F2 with the gate)."""
    return comparison_row("N7", subjects, gated=True)


def _usable(result: dict[str, Any], name: str) -> Subject | None:
    run = result["runs"].get(name)
    if run is None or not run.get("history"):
        return None
    return study_subject(result, name)


def rules(result: dict[str, Any], timings: dict[str, Any] | None) -> list[Verdict]:
    """Every claim's and statement's row on the saved study: E1..E8, N1, N2, N3, N7."""
    subjects = {n: s for n in result["runs"] if (s := _usable(result, n)) is not None}
    author = subjects.get(AUTHOR)
    if author is None:  # every row the author run decides is not measured
        other = {"E5": e5(result, timings), "E7": e7(subjects), "N7": n7(subjects)}
        return [
            other.get(c)
            or Verdict(c, INCONCLUSIVE, AUTHOR, "no author run saved", "", reason=NOT_MEASURED)
            for c in ROW_ORDER
        ]
    frozen = subjects.get(FROZEN)
    others = [s for n, s in subjects.items() if n != AUTHOR]
    return [
        e1(author, frozen),
        e2(author),
        e3(author, frozen),
        e4(author, subjects.get(SUB)),
        e5(result, timings),
        e6(author),
        e7(subjects),
        e8(author),
        n1(author),
        n2(author),
        n3(author, others),
        n7(subjects),
    ]


def study_findings(result: dict[str, Any]) -> list[Verdict]:
    """The findings F1, F2 of the saved study (:mod:`pyverify.claims.findings`)."""
    subjects = {n: s for n in result["runs"] if (s := _usable(result, n)) is not None}
    return findings(subjects)


def checkpoint_rules(d: dict[str, Any]) -> list[Verdict]:
    """The rows a checkpoint can decide, from :func:`run_checkpoint_diagnose`'s result.

    The same rule functions as the study's, on the checkpoint's one record (no
    step 0, no trend) and final measurements; no gate (the checkpoint's training
    is not the suite's to judge): E1, E2, E3, E6, E8, N1 (the own cache), N2,
    and F1 (target exposure: teacher-forced vs causal loss, the online contract).
    """
    m = d["model"]
    if m.get("tokens"):
        src = f"from {m['tokens']}"
    else:
        src = f"the study's inputs {m['inputs']}" if m.get("inputs") else "random ids"
    s = Subject(
        f"checkpoint {m['checkpoint']}",
        [d["record"]],
        d["final"],
        m["dk"],
        f"checkpoint {m['checkpoint']} on {m['n_prompts']} prompts ({src})",
        False,
    )
    return [e1(s), e2(s), e3(s), e6(s), e8(s), n1(s), n2(s), exposure_finding({s.by: s})]
