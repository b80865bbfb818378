"""The claims ledger: the paper's claims E1-E8, the author's newer statements, the study's findings.

Modules: :mod:`~pyverify.claims.verdict` (a row: outcome, scope, premise,
numbers, trend, caveat), :mod:`~pyverify.claims.stats` (min / median / max over
heads of the saved results), :mod:`~pyverify.claims.trends` (log-slopes per
1,000 steps with bootstrap intervals over heads, the signed-mean form's
conditioning), :mod:`~pyverify.claims.subject` (what a rule judges, the gate
against the best n-gram order, the order of a rule's checks),
:mod:`~pyverify.claims.rules` (one rule per claim E1-E8 and statement N1, N2,
N3, N7, thresholds in :mod:`~pyverify.claims.thresholds`: the saved study with
:func:`~pyverify.claims.rules.rules`, a checkpoint's measurements from
``pyverify diagnose --checkpoint`` with
:func:`~pyverify.claims.rules.checkpoint_rules`, the same rule functions),
:mod:`~pyverify.claims.findings` (F1 target exposure, F2 exposure and the
collapse trend), :mod:`~pyverify.claims.ledger` (read the saved results, build
and print the ledger: ``pyverify claims``).
"""

from pyverify.claims.ledger import build_ledger, format_ledger, load_ledger
from pyverify.claims.verdict import VERDICTS, Verdict

__all__ = ["VERDICTS", "Verdict", "build_ledger", "format_ledger", "load_ledger"]
