"""One row of the claims ledger."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BY_CONSTRUCTION",
    "CLAIMS",
    "INCONCLUSIVE",
    "NOT_SUPPORTED",
    "SUPPORTED",
    "VERDICTS",
    "Verdict",
]

SUPPORTED = "supported"
NOT_SUPPORTED = "not supported"
INCONCLUSIVE = "inconclusive"
BY_CONSTRUCTION = "true by construction"
VERDICTS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, BY_CONSTRUCTION)

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


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict, what decided it, the numbers and the caveat.

    ``numbers`` are for display (Markdown, ``pyverify claims``); the
    deterministic JSON of :meth:`to_json` leaves them out, so it holds no float.
    """

    claim: str
    verdict: str
    decided_by: str
    rule: str
    caveat: str
    numbers: dict[str, float | int | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.claim not in CLAIMS and not self.claim.startswith("online"):
            raise ValueError(f"unknown claim {self.claim!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")

    def to_json(self) -> dict[str, Any]:
        """The float-free record (byte-stable for the same saved results)."""
        return {
            "claim": self.claim,
            "statement": CLAIMS.get(self.claim, self.claim),
            "verdict": self.verdict,
            "decided_by": self.decided_by,
            "rule": self.rule,
            "caveat": self.caveat,
        }
