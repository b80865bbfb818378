"""The claims ledger: the paper's empirical claims E1-E8, each with a verdict computed by a rule.

Modules: :mod:`~pyverify.claims.verdict` (the verdict record and its four
values), :mod:`~pyverify.claims.stats` (min / median / max over heads of the
saved results), :mod:`~pyverify.claims.rules` (one rule per claim on records,
thresholds named there: the ablation study's ``collapse.json`` with
:func:`~pyverify.claims.rules.rules`, a checkpoint's measurements from
``pyverify diagnose --checkpoint`` with
:func:`~pyverify.claims.rules.checkpoint_rules`, the same rule functions),
:mod:`~pyverify.claims.ledger` (read the saved results, build and print the
ledger: ``pyverify claims``).
"""

from pyverify.claims.ledger import build_ledger, format_ledger, load_ledger
from pyverify.claims.verdict import VERDICTS, Verdict

__all__ = ["VERDICTS", "Verdict", "build_ledger", "format_ledger", "load_ledger"]
