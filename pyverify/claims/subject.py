"""What a rule judges (a :class:`Subject`), the gate, and how a rule's outcome is assembled.

The gate: a run that does not beat the **best** order of the n-gram baseline
(:mod:`pyverify.collapse.ngram`: the lowest validation loss over orders 1..N of
the same split) has not learned its corpus as well as a count model, and cannot
speak for or against the paper. The gate applies to EVERY run a verdict uses;
a verdict using a run that fails it is "inconclusive -- not reproduced at this
scale", with the numbers (or a named trend outcome, where the rule reads one).
The gate compares the CAUSAL validation loss (each position predicted from its
prefix alone, :func:`pyverify.measure.loss.causal_val_loss`): G is formed from
the whole window, so the teacher-forced loss can read later tokens through G.
(History: the first full run gated on the trigram; the study's own docstrings
named the best order, which is the gate since.)

:func:`outcome` assembles a row in a fixed order, so every rule checks its
premise before deciding: (0) what the rule needs is measured (else "not
measured": the saved results predate it); (1) the gate of every run used; (2)
the statement's premise (met / absent); (3) only then the end-point rule.
Where (1) or (2) fails, or (3) lands between the cut-offs, a trend whose
interval excludes 0 may give "trending toward" / "trending away".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pyverify.claims.verdict import (
    INCONCLUSIVE,
    NOT_MEASURED,
    NOT_REPRODUCED,
    PREMISE_ABSENT,
    UNDECIDED,
    Verdict,
)

__all__ = [
    "RECALL_ACCURACY",
    "RECALL_CHANCE",
    "RECALL_GATE_MODES",
    "Gate",
    "Subject",
    "TrendCall",
    "best_ngram",
    "gate_against",
    "is_recall",
    "outcome",
    "recall_gate",
    "run_gate",
    "scale_line",
    "study_subject",
]

Numbers = dict[str, float | int | str]

RECALL_ACCURACY = 0.9
"""The recall gate's bar: answer accuracy at least this (fixed before the regime's first
full run, with chance <= :data:`RECALL_CHANCE`; the issue's example bar)."""
RECALL_CHANCE = 0.1
"""The recall gate's premise on the task: chance accuracy (the layout-aware guesser) and
the best n-gram's accuracy at most this, so clearing the bar is learning the binding,
not the layout or the counts."""
RECALL_GATE_MODES = ("prompt-cache",)
"""The inference the recall gate holds to the bar (:mod:`pyverify.measure.answers`): the
author's deployed decoding, A (hence G) cached from the prompt (the kv section, which
holds no answer), ``A=kvcache[2]``: the one inference both objectives meet without
exposure. The causal accuracy with A recomputed from each prefix is reported beside it
(``answers`` in every record); teacher-forced is no inference."""


@dataclass(frozen=True)
class Gate:
    """Whether a run beats the best n-gram order; ``why`` is number-free, ``figures`` not."""

    passed: bool
    why: str
    figures: Numbers = field(default_factory=dict)


@dataclass(frozen=True)
class Subject:
    """What a rule judges: one model's records and final measurements.

    Attributes
    ----------
    by : str
        What decides (a run's name, or ``checkpoint FILE``).
    history : list of dict
        Records (:func:`pyverify.measure.measure_record` keys); a checkpoint has one.
    final : dict
        Final measurements (:func:`pyverify.measure.measure_final` keys; ``{}``: none).
    dk : int
        Head width.
    scope : str
        What was measured (the specimen's scale, the prompts).
    from_init : bool
        Whether ``history[0]`` is the step-0 record of a training run.
    gate : Gate or None
        The run's gate (None: not gated, a checkpoint).
    objective : str
        The run's training objective (``all``, ``last``, ``prompt-A``; "" unknown).
    """

    by: str
    history: list[dict[str, Any]]
    final: dict[str, Any] = field(default_factory=dict)
    dk: int = 0
    scope: str = ""
    from_init: bool = False
    gate: Gate | None = None
    objective: str = ""

    @property
    def last(self) -> dict[str, Any]:
        """The last record."""
        return self.history[-1]

    def at_step0(self) -> Subject:
        """The run's step-0 record alone: what a rule says about the initial model.

        No final measurements (they are taken at the end of a run) and no gate.
        """
        scope = f"{self.scope}, at step 0"
        return Subject(f"{self.by} at step 0", self.history[:1], {}, self.dk, scope,
                       self.from_init, None, self.objective)  # fmt: skip


@lru_cache(maxsize=8)
def _n_params(model_items: tuple[tuple[str, Any], ...]) -> int:
    from pyverify.trainable.decoder import ModelConfig, PLDRDecoder

    cfg = ModelConfig(**dict(model_items))
    return sum(p.numel() for p in PLDRDecoder(cfg, init=False).parameters())


def scale_line(result: dict[str, Any]) -> str:
    """One line: the specimen's size and tokens beside the paper's (from the settings alone)."""
    s = result["settings"]
    n = _n_params(tuple(sorted(s["model"].items())))
    steps = [r["history"][-1]["step"] for r in result["runs"].values() if r.get("history")]
    most = max(steps) if steps else s["steps"]
    tokens = most * s["batch"] * s["seq"]
    t = s.get("recall")
    if t:
        task = f"{t['n_pairs']} key-value pairs, {t['n_queries']} queries"
        what = (f"in-context recall ({task}, vocabulary {s['model']['vocab']}), up to "
                f"{tokens / 1e6:.3g}M tokens seen")  # fmt: skip
    else:
        what = f"up to {tokens / 1e6:.3g}M {_token_kind(s)} tokens seen"
    return (
        f"specimen {n / 1e6:.3g}M parameters, {what}, context {s['seq']}, "
        f"{most:,} steps at most; paper 110M parameters, about 8e9 tokens, context 1024"
    )


def _token_kind(settings: dict[str, Any]) -> str:
    c = settings.get("corpus")
    return "byte" if c is None else "BPE" if c == "bpe" else "corpus"


def is_recall(result: dict[str, Any]) -> bool:
    """Whether the study trained the recall task (its gate is on answers, not on loss)."""
    return result["baseline"].get("task") == "recall"


def best_ngram(result: dict[str, Any]) -> tuple[int, float]:
    """``(order, validation loss)`` of the best n-gram order of the study's baseline."""
    base = result["baseline"]["val_loss_by_order"]
    best = min(range(len(base)), key=base.__getitem__)
    return best + 1, base[best]


def gate_against(result: dict[str, Any]) -> str:
    """What the study's gate compares each run with (number-free but for the n-gram order)."""
    if is_recall(result):
        return (
            f"the recall gate: answer accuracy >= {RECALL_ACCURACY:g} in the inference "
            f"{', '.join(RECALL_GATE_MODES)} (G cached from the prompt), above the best "
            f"n-gram's (order {result['baseline']['best_order']}), with chance and the "
            f"n-gram <= {RECALL_CHANCE:g}"
        )
    order, _ = best_ngram(result)
    return f"the best n-gram order ({order}), causal validation loss"


def _refused(run: dict[str, Any] | None, name: str, key: str, what: str) -> Gate | None:
    """The failed gate of run ``name`` if it has no records, diverged or lacks ``key``."""
    if run is None or not run.get("history"):
        return Gate(False, f"{name}: no records")
    if "diverged" in run:
        return Gate(False, f"{name}: the run diverged")
    if key not in run:
        return Gate(False, f"{name}: no {what} saved")
    return None


def recall_gate(result: dict[str, Any], name: str) -> Gate:
    """The recall task's gate of run ``name`` (:func:`gate_against`): on the answers."""
    run, b = result["runs"].get(name), result["baseline"]
    if (failed := _refused(run, name, "answers", "answer accuracy")) is not None:
        return failed
    acc = {m: run["answers"][m]["accuracy"] for m in RECALL_GATE_MODES}
    fails = [m for m, a in acc.items() if not (a >= RECALL_ACCURACY and a > b["accuracy"])]
    if max(b["chance"], b["accuracy"]) > RECALL_CHANCE:
        why = f"{name}: chance or the n-gram is above {RECALL_CHANCE:g}: the task does not separate"
    elif fails:
        why = f"{name}: answer accuracy below the bar or the n-gram in {', '.join(fails)}"
    else:
        why = f"{name}: answer accuracy clears the bar and the n-gram in every gated inference"
    figures: Numbers = {f"{name} answer accuracy ({m})": a for m, a in acc.items()}
    figures[f"best n-gram answer accuracy (order {b['best_order']})"] = b["accuracy"]
    figures["chance (layout-aware guesser)"] = b["chance"]
    ok = max(b["chance"], b["accuracy"]) <= RECALL_CHANCE and not fails
    causal = run["answers"].get("causal", {}).get("accuracy")
    if causal is not None and "causal" not in RECALL_GATE_MODES:
        figures[f"{name} answer accuracy (causal, reported)"] = causal
    return Gate(ok, why, figures)


def run_gate(result: dict[str, Any], name: str) -> Gate:
    """The gate of run ``name``: its causal validation loss below the best n-gram's.

    A recall study's gate is on its answers (:func:`recall_gate`).
    """
    if is_recall(result):
        return recall_gate(result, name)
    run = result["runs"].get(name)
    order, best = best_ngram(result)
    if (failed := _refused(run, name, "causal_val_loss", "causal validation loss")) is not None:
        return failed
    v = run["causal_val_loss"]
    ok = v < best
    why = f"{name}: causal validation loss {'beats' if ok else 'does not beat'} the best n-gram"
    if ok and order == len(result["baseline"]["val_loss_by_order"]):
        why += " (its best order is the highest computed: a higher one may be lower still)"
    figures: Numbers = {
        f"{name} causal val loss": v,
        f"{name} teacher-forced val loss": run["history"][-1]["val_loss"],
        f"best n-gram val loss (order {order})": best,
    }
    return Gate(ok, why, figures)


def _dk(result: dict[str, Any]) -> int:
    m = result["settings"]["model"]
    return m["d_model"] // m["num_heads"]


def study_subject(result: dict[str, Any], name: str) -> Subject:
    """The study run ``name`` as a :class:`Subject` (final measurements from the run entry)."""
    run = result["runs"][name]
    final = {k: v for k, v in run.items() if k not in ("spec", "history", "diverged")}
    objective = (run.get("spec") or {}).get("objective", "all")
    scope = f"run {name} ({scale_line(result)})"
    return Subject(name, run.get("history", []), final, _dk(result), scope, True,
                   run_gate(result, name), objective)  # fmt: skip


@dataclass(frozen=True)
class TrendCall:
    """What a rule reads from a trend: an outcome (or None), its words and its numbers."""

    outcome: str | None
    text: str
    numbers: Numbers = field(default_factory=dict)


GATE_PREMISE = (
    "every run used passes the regime's gate (its 'gate:' line: the n-gram or the recall bar)"
)

Decision = str | tuple[str, str]


def outcome(
    claim: str,
    uses: Sequence[Subject],
    *,
    rule: str,
    scope: str,
    caveat: str,
    numbers: Numbers,
    premise: str = "",
    premise_met: bool | None = True,
    decide: Callable[[], Decision],
    trend: TrendCall | None = None,
    by: str | None = None,
) -> Verdict:
    """A row, its checks in order (module docstring).

    ``premise_met``: the statement's premise beyond the gate (True when there is
    none; None when the saved results do not measure it). ``decide`` is called
    only when the gate and the premise hold; it returns an outcome, or
    ``(outcome, reason)`` for an inconclusive one with a reason other than
    "between the cut-offs".
    """
    failing = [s.by for s in uses if s.gate is not None and not s.gate.passed]
    gated = [s for s in uses if s.gate is not None]
    nums: Numbers = {}
    for s in gated:
        nums.update(s.gate.figures)  # type: ignore[union-attr]
    nums.update(numbers)
    full_premise = "; ".join(p for p in (GATE_PREMISE if gated else "", premise) if p)
    notes: list[str] = []
    reason = ""
    if failing:
        notes.append(
            "gate failed: " + "; ".join(s.gate.why for s in gated if not s.gate.passed)  # type: ignore[union-attr]
        )
    if premise_met is None:
        met, verdict, reason = None, INCONCLUSIVE, NOT_MEASURED
    elif failing:
        met, verdict, reason = False, INCONCLUSIVE, NOT_REPRODUCED
        if premise_met:
            end = decide()
            end_v = end[0] if isinstance(end, tuple) else end
            notes.append(f"the end point alone would say {end_v!r}, not a verdict at this scale")
    elif not premise_met:
        met, verdict, reason = False, INCONCLUSIVE, PREMISE_ABSENT
    else:
        met = True
        end = decide()
        verdict, reason = end if isinstance(end, tuple) else (end, "")
        if verdict == INCONCLUSIVE and not reason:
            reason = UNDECIDED
    if verdict == INCONCLUSIVE and reason != NOT_MEASURED and trend and trend.outcome:
        verdict = trend.outcome
    return Verdict(
        claim,
        verdict,
        by if by is not None else " vs ".join(s.by for s in uses),
        rule,
        "; ".join([*notes, caveat]) if caveat else "; ".join(notes),
        nums,
        scope=scope,
        premise=full_premise,
        premise_met=met,
        reason=reason,
        trend=trend.text if trend else "",
        trend_numbers=dict(trend.numbers) if trend else {},
    )
