"""Every rule fed the step-0 record and the ``frozen`` run: what each says, and why where the
same as for the trained model.

The trained data are a study whose ``author`` run collapsed (the paper's outcome) and
whose controls did not; ``at_step0`` hands a rule the first record alone (no end-of-run
measurement, no gate: what the rule itself says about an untrained model). A rule that
says the same for the step-0 record as for the trained run must say why in its rule
text (:data:`SAME_AT_INIT`); the table is printed (``pytest -s``).
"""

from __future__ import annotations

import math

from fake_study import every_row, record, study, timings, trending

from pyverify.claims.rules import study_subject
from pyverify.claims.verdict import NOT_SUPPORTED

SAME_AT_INIT = {
    "E5": "the step-0 model would time alike",  # wall time does not depend on the weights
}
"""Rules whose outcome does not depend on what was learned, and the words that say so."""


def _trained_study():
    """``author`` falls from 0.1 to 1e-8 over 1,000 steps and ends rank one; the exposure-free
    runs' G rises; the other controls stay at 1e-2."""
    r = study(author_op=1e-8, sub_op=1e-2, other_op=1e-2)
    rate = math.log(1e-8 / 0.1)  # per 1,000 steps
    end = {"ratio": 1e-9, "rows": 1e-9, "row_energy": 1e-13}
    a = [record(s, op=0.1 * math.exp(rate * s / 1000), a_lo=0.0, a_hi=0.0,
                **(end if s == 1000 else {})) for s in range(0, 1001, 100)]  # fmt: skip
    a[-1]["order_parameter"]["32"]["A"] = [[2e-9, 2e-9]]  # concentrates with length
    a[-1]["order_parameter"]["64"]["A"] = [[1e-9, 1e-9]]
    a[0]["commutant_residual_rho"] = [[0.5, 0.5]]  # the twirl is brought about by training
    r["runs"]["author"]["history"] = a
    for name in ("prompt-A", "last-only"):
        r["runs"][name]["history"] = trending((0.3, 0.4))
    return r


def test_every_rule_on_the_step_0_record_and_the_frozen_run():
    r = _trained_study()
    tim = timings(3.0, spread=0.5)
    runs = {n: study_subject(r, n) for n in r["runs"]}
    trained = every_row(runs, r, tim)
    init = every_row({n: s.at_step0() for n, s in runs.items()}, r, tim)
    as_frozen = every_row({**runs, "author": runs["frozen"]}, r, tim)  # frozen decides
    print(f"\n{'row':4} {'trained author':34} {'author at step 0':34} {'frozen deciding':34}")
    for claim in trained:
        print(f"{claim:4} {trained[claim].label:34} {init[claim].label:34} "
              f"{as_frozen[claim].label:34}")  # fmt: skip
    for claim, v in trained.items():
        if init[claim].label == v.label:
            assert claim in SAME_AT_INIT, f"{claim} says {v.label!r} for init and trained data"
            assert SAME_AT_INIT[claim] in v.rule
        # nothing from the untrained model or the control is "not supported" unless its
        # premise is met (the gate and the statement's premise)
        for other in (init[claim], as_frozen[claim]):
            if other.verdict == NOT_SUPPORTED:
                assert other.premise_met is True and other.reason == ""
    # what the trained run says (the data were built for the paper's outcome)
    assert {c: v.verdict for c, v in trained.items() if c.startswith("E")} == {
        "E1": "supported", "E2": "supported", "E3": "supported", "E4": "supported",
        "E5": "supported", "E6": "supported", "E7": "supported", "E8": "supported",
    }  # fmt: skip
    # step 0: G moves (0.1), so a claim about a collapsed model has no premise; the cache
    # measurements exist at the end of a run only
    assert init["E6"].reason == "premise absent"
    for claim in ("E2", "E8", "N1"):
        assert init[claim].reason == "not measured", claim
    assert init["E1"].verdict == "not supported"  # step 0 is not invariant (no gate here)
    assert init["N3"].reason == "premise absent"  # one record: no increment
    assert init["F1"].reason == "not measured"  # no end-of-run losses at step 0
    # frozen deciding: G at 1e-2, a moving operator
    assert as_frozen["E1"].verdict == "not supported"
    assert as_frozen["E2"].reason == "premise absent"
