"""One row of the claims ledger: a claim (E1-E8), a newer statement (N1-N7) or a finding (F1, F2).

Outcomes. A claim or statement row is **supported**, **not supported**,
**inconclusive** or **true by construction**; where the end point cannot decide
(the gate failed, the premise is absent, or the end point lies between the
cut-offs) but the trend's confidence interval excludes 0, it is **trending
toward** (the trend points the way the statement goes) or **trending away**.
A comparison row (N7, F2) **differs** or shows **no difference detected**; the
exposure finding (F1) is **present** (used: a loss gap), **open, not used** (prefix
logits move with the rest of the sequence, but no loss gap) or **absent**. Any row can be
inconclusive; an inconclusive row names why in ``reason``:
:data:`NOT_REPRODUCED` (a run it uses loses to the best n-gram order),
:data:`PREMISE_ABSENT` (what the statement is about is not there, e.g. no
collapse to test cache fidelity on), :data:`NOT_MEASURED` (the saved results
predate the measurement), :data:`UNDECIDED` (the numbers lie between the
cut-offs), :data:`HOLDS_AT_INIT` (what the rule would count as evidence
already holds at step 0, so it is not evidence of training) or
:data:`SEEDS_DISAGREE` (a row decided on several training seeds whose outcomes
differ: never a pooled verdict, :mod:`pyverify.claims.seeds`) or :data:`FEW_SEEDS`
(a decisive outcome measured on fewer training seeds than a verdict needs).

The row's JSON (:meth:`Verdict.to_json`) is float-free: outcomes, rules,
scopes, premises and caveats are text written from the thresholds and the
saved settings, never from a measured number; the measured numbers live in
``numbers`` and ``trend_numbers`` (shown by ``pyverify claims`` and the
report), so the JSON is byte-stable for the same outcomes on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ABSENT",
    "BY_CONSTRUCTION",
    "CLAIMS",
    "CLAIM_OUTCOMES",
    "COMPARISON_OUTCOMES",
    "DIFFERS",
    "FEW_SEEDS",
    "FINDINGS",
    "FINDING_OUTCOMES",
    "HOLDS_AT_INIT",
    "INCONCLUSIVE",
    "NOT_MEASURED",
    "NOT_REPRODUCED",
    "NOT_SUPPORTED",
    "NO_DIFFERENCE",
    "OPEN",
    "PREMISE_ABSENT",
    "PRESENT",
    "REASONS",
    "ROWS",
    "SEEDS_DISAGREE",
    "STATEMENTS",
    "SUPPORTED",
    "TRENDING_AWAY",
    "TRENDING_TOWARD",
    "UNDECIDED",
    "VERDICTS",
    "Verdict",
]

SUPPORTED = "supported"
NOT_SUPPORTED = "not supported"
INCONCLUSIVE = "inconclusive"
BY_CONSTRUCTION = "true by construction"
VERDICTS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, BY_CONSTRUCTION)
"""The four verdicts of a claim."""
TRENDING_TOWARD = "trending toward"
TRENDING_AWAY = "trending away"
CLAIM_OUTCOMES = (*VERDICTS, TRENDING_TOWARD, TRENDING_AWAY)
"""A claim's or statement's outcomes: the four verdicts and the two named trend outcomes."""
DIFFERS = "differs"
NO_DIFFERENCE = "no difference detected"
COMPARISON_OUTCOMES = (DIFFERS, NO_DIFFERENCE, INCONCLUSIVE)
PRESENT = "present"
OPEN = "open, not used"
ABSENT = "absent"
FINDING_OUTCOMES = (PRESENT, OPEN, ABSENT, INCONCLUSIVE)

NOT_REPRODUCED = "not reproduced at this scale"
PREMISE_ABSENT = "premise absent"
NOT_MEASURED = "not measured"
UNDECIDED = "between the cut-offs"
HOLDS_AT_INIT = "holds at init"
SEEDS_DISAGREE = "seeds disagree"
FEW_SEEDS = "fewer than 3 seeds"
REASONS = (
    "",
    NOT_REPRODUCED,
    PREMISE_ABSENT,
    NOT_MEASURED,
    UNDECIDED,
    HOLDS_AT_INIT,
    SEEDS_DISAGREE,
    FEW_SEEDS,
)

CLAIMS: dict[str, str] = {
    "E1": "invariance: after critical training A, A_LM, A_P, G are input-invariant",
    "E2": "cache fidelity: cached G gives (nearly) the uncached outputs, within margins",
    "E3": "learned singularity: A rank one with identical rows; A_LM near full rank",
    "E4": "criticality: critical runs collapse, subcritical runs do not",
    "E5": "speed-up: caching G gives about 3x faster inference",
    "E6": "mechanism: rotary twirl, concentration, contraction",
    "E7": "order parameter: the relative RMS fluctuation separates the phases",
    "E8": "same answers: cached and uncached inference give the same answers",
}
"""The paper's empirical claims (``docs/paper-claims.md``), IDs stable."""
STATEMENTS: dict[str, str] = {
    "N1": "mean-operator cache contract: a dataset-mean cache reproduces full recomputation "
    "(relative centred RMS <= 0.25, mean KL <= 0.03 nats); a stale initial cache fails",
    "N2": "row collapse and context invariance are separate (one does not imply the other)",
    "N3": "row energy is not monotone in training: increments re-open",
    "N7": "target-exposure ablation: the collapse trend with and without target exposure",
}
"""The author's newer statements (``docs/paper-claims.md``), IDs stable."""
FINDINGS: dict[str, str] = {
    "F1": "target exposure: G, formed from the whole window, lets a position read later tokens",
    "F2": "exposure and collapse: the collapse trend with and without target exposure",
}
"""Findings of the study itself (not claims of the paper), IDs stable."""
ROWS: dict[str, tuple[str, tuple[str, ...]]] = {
    **{k: (s, CLAIM_OUTCOMES) for k, s in CLAIMS.items()},
    **{k: (s, CLAIM_OUTCOMES) for k, s in STATEMENTS.items() if k != "N7"},
    "N7": (STATEMENTS["N7"], COMPARISON_OUTCOMES),
    "F1": (FINDINGS["F1"], FINDING_OUTCOMES),
    "F2": (FINDINGS["F2"], COMPARISON_OUTCOMES),
}
"""Every row: its statement and its possible outcomes."""


@dataclass(frozen=True)
class Verdict:
    """A row's outcome, what decided it, its scope, premise, numbers, trend and caveat.

    Attributes
    ----------
    claim : str
        The row's ID (:data:`ROWS`).
    verdict : str
        The outcome (one of the row's, :data:`ROWS`).
    decided_by : str
        The runs (or checkpoint) whose numbers decide.
    rule : str
        The rule with its thresholds (text).
    caveat : str
        What the outcome does not say.
    numbers : dict
        Measured numbers (display only; not in the JSON).
    scope : str
        What was measured on what.
    premise : str
        What must hold before the rule decides (the gate, and the statement's premise).
    premise_met : bool or None
        Whether it holds (None: not measured, or no premise beyond the gate's).
    reason : str
        Why an outcome is inconclusive (or trending): one of :data:`REASONS`.
    trend : str
        The trend in words (number-free), or "".
    trend_numbers : dict
        The trend's slopes and intervals (display only).
    seeds : dict
        Each training seed's outcome label, for a row decided over seeds
        (:mod:`pyverify.claims.seeds`); empty for a single-seed row.
    """

    claim: str
    verdict: str
    decided_by: str
    rule: str
    caveat: str
    numbers: dict[str, float | int | str] = field(default_factory=dict)
    scope: str = ""
    premise: str = ""
    premise_met: bool | None = None
    reason: str = ""
    trend: str = ""
    trend_numbers: dict[str, float | int | str] = field(default_factory=dict)
    seeds: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.claim not in ROWS:
            raise ValueError(f"unknown claim {self.claim!r}")
        if self.verdict not in ROWS[self.claim][1]:
            raise ValueError(f"unknown verdict {self.verdict!r} for {self.claim}")
        if self.reason not in REASONS:
            raise ValueError(f"unknown reason {self.reason!r}")

    @property
    def statement(self) -> str:
        """What the row tests."""
        return ROWS[self.claim][0]

    @property
    def label(self) -> str:
        """The outcome with its reason, e.g. ``inconclusive (premise absent)``."""
        return f"{self.verdict} ({self.reason})" if self.reason else self.verdict

    def to_json(self) -> dict[str, Any]:
        """The float-free record (byte-stable for the same saved results)."""
        return {
            "claim": self.claim,
            "statement": self.statement,
            "verdict": self.verdict,
            "reason": self.reason,
            "decided_by": self.decided_by,
            "scope": self.scope,
            "premise": self.premise,
            "premise_met": self.premise_met,
            "trend": self.trend,
            "rule": self.rule,
            "caveat": self.caveat,
            **({"seeds": dict(self.seeds)} if self.seeds else {}),
        }
