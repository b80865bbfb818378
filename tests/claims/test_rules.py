"""The ledger's rules on hand-made results: every verdict of every rule is reachable."""

from __future__ import annotations

import json

import pytest
from fake_study import study, timings

from pyverify.claims.ledger import format_ledger, ledger_json
from pyverify.claims.rules import (
    COLLAPSED,
    MOVING,
    Subject,
    checkpoint_rules,
    e1,
    e2,
    e3,
    e4,
    e5,
    e6,
    e7,
    e8,
    gate,
    rules,
    study_subject,
)
from pyverify.claims.verdict import (
    BY_CONSTRUCTION,
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SUPPORTED,
    VERDICTS,
    Verdict,
)

BETWEEN = (COLLAPSED * MOVING) ** 0.5  # neither collapsed nor moving


def verdict_of(claim: str, result, t=None) -> str:
    return {v.claim: v for v in rules(result, t)}[claim].verdict


def author(result) -> Subject:
    return study_subject(result, "author")


def runs(result) -> dict[str, Subject]:
    return {n: study_subject(result, n) for n in result["runs"]}


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"author_op": 1e-8}, SUPPORTED),
        ({"author_op": 1e-2}, NOT_SUPPORTED),
        ({"author_op": BETWEEN}, INCONCLUSIVE),
    ],
)
def test_e1(kwargs, expected):
    assert e1(author(study(**kwargs))).verdict == expected


def test_e1_needs_the_pairwise_form_too():
    r = study(author_op=1e-8)
    r["runs"]["author"]["history"][-1]["pairwise_order"]["G"]["signed_mean"] = [[1e-3]]
    assert e1(author(r)).verdict == INCONCLUSIVE  # suite form collapsed, author's form not


def test_gate_makes_every_author_claim_inconclusive_but_keeps_the_numbers():
    r = study(author_op=1e-8, val_loss=2.5)  # the 3-gram is at 2.2
    assert gate(r)[0] is False and "does not beat the 3-gram" in gate(r)[1]
    ledger = rules(r, timings(3.0))
    for v in ledger:
        if v.claim == "E5":
            assert v.verdict == SUPPORTED  # wall time is exempt from the gate
        else:
            assert v.verdict == INCONCLUSIVE, v.claim
            assert "gate failed" in v.caveat
    assert "would say 'supported'" in {v.claim: v for v in ledger}["E1"].caveat
    e1_row = {v.claim: v for v in ledger}["E1"]
    assert e1_row.numbers["author causal val loss"] == 2.5
    assert e1_row.numbers["3-gram val loss"] == 2.2
    assert "2.5" not in e1_row.caveat  # the caveat goes into the float-free JSON
    assert verdict_of("E1", study(author_op=1e-8, val_loss=2.1)) == SUPPORTED


def test_gate_uses_the_causal_loss():
    r = study(val_loss=2.5)
    assert r["runs"]["author"]["history"][-1]["val_loss"] < 2.2  # teacher-forced: leaks via G
    assert gate(r)[0] is False
    del r["runs"]["author"]["causal_val_loss"]
    assert gate(r) == (
        False,
        "no causal validation loss saved (rerun `pyverify collapse --resume`)",
    )


def test_diverged_author_fails_the_gate():
    r = study()
    r["runs"]["author"]["diverged"] = "run author: training loss is nan"
    assert gate(r)[0] is False
    assert verdict_of("E3", r) == INCONCLUSIVE


@pytest.mark.parametrize(
    ("fid", "expected_e2", "expected_e8"),
    [
        ((20, 20), SUPPORTED, SUPPORTED),
        ((19, 15), NOT_SUPPORTED, NOT_SUPPORTED),
        ((20, 12), INCONCLUSIVE, SUPPORTED),
    ],
)
def test_e2_e8(fid, expected_e2, expected_e8):
    r = study(fid=fid)
    assert e2(author(r)).verdict == expected_e2 and e8(author(r)).verdict == expected_e8
    r["runs"]["author"]["history"][-1]["eps_G"] = {"32": [[0.0, 0.0]], "64": [[0.0, 0.0]]}
    assert e2(author(r)).verdict == e8(author(r)).verdict == BY_CONSTRUCTION  # constant G
    assert "test_any_stack_a_cached_decoding_equals_g_cached_decoding" in e2(author(r)).caveat
    assert "FULL RECOMPUTATION" in e2(author(r)).rule


@pytest.mark.parametrize(
    ("end", "expected"),
    [
        ({}, SUPPORTED),
        ({"ratio": 0.5}, NOT_SUPPORTED),
        ({"ratio": 1e-4}, INCONCLUSIVE),
        ({"rank_lm": 3.0}, INCONCLUSIVE),
    ],
)
def test_e3(end, expected):
    assert e3(author(study(author_end=end))).verdict == expected


def test_e3_inherited_singularity_is_not_supported_as_learned():
    r = study()
    r["runs"]["author"]["history"][0]["sigma2_over_sigma1_A"] = [[1e-9, 1e-9]]
    assert e3(author(r)).verdict == INCONCLUSIVE


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"author_op": 1e-8, "sub_op": 1e-2}, SUPPORTED),
        ({"author_op": 1e-8, "sub_op": 1e-9}, NOT_SUPPORTED),
        ({"author_op": 1e-2, "sub_op": 1e-1}, NOT_SUPPORTED),
        ({"author_op": BETWEEN, "sub_op": 1e-2}, INCONCLUSIVE),
    ],
)
def test_e4(kwargs, expected):
    r = study(**kwargs)
    assert e4(author(r), study_subject(r, "subcritical")).verdict == expected


def test_e4_without_subcritical_is_inconclusive():
    r = study()
    del r["runs"]["subcritical"]
    assert e4(author(r), None).verdict == INCONCLUSIVE
    assert verdict_of("E4", r) == INCONCLUSIVE


@pytest.mark.parametrize(
    ("speedup", "expected"), [(3.0, SUPPORTED), (1.0, NOT_SUPPORTED), (1.5, INCONCLUSIVE)]
)
def test_e5(speedup, expected):
    assert e5(study(), timings(speedup)).verdict == expected
    assert e5(study(), None).verdict == INCONCLUSIVE


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"author_end": {}}, SUPPORTED),
        ({"author_end": {"jac": 2.0}}, NOT_SUPPORTED),  # collapsed without contraction
        ({"author_op": 1e-2, "author_end": {"comm": 0.9}}, INCONCLUSIVE),
    ],
)
def test_e6(kwargs, expected):
    r = study(**kwargs)
    if kwargs["author_end"] == {}:
        rec = r["runs"]["author"]["history"][-1]
        rec["order_parameter"]["32"]["A"] = [[2e-9, 2e-9]]  # concentrates with length
        rec["order_parameter"]["64"]["A"] = [[1e-9, 1e-9]]
    assert e6(author(r)).verdict == expected


def test_e7():
    assert e7(runs(study(author_op=1e-8, sub_op=1e-2))).verdict == SUPPORTED
    assert e7(runs(study(author_op=1e-2, sub_op=1e-2))).verdict == INCONCLUSIVE  # one phase
    r = study(author_op=1e-8)
    r["runs"]["author"]["history"][-1]["pairwise_order"]["G"]["rms"] = [[1e-2]]
    assert e7(runs(r)).verdict == NOT_SUPPORTED  # the two forms disagree


def test_ledger_json_is_float_free_and_byte_stable():
    r = study()
    a = json.dumps(ledger_json(r, rules(r, timings(3.0))), sort_keys=True)
    b = json.dumps(ledger_json(r, rules(r, timings(2.9))), sort_keys=True)
    assert a == b  # timing figures change, the verdicts do not: no float in the record

    def walk(x):
        assert not isinstance(x, float)
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(json.loads(a))
    text = format_ledger(r, rules(r, timings(3.0)))
    assert all(f"E{i} " in text for i in range(1, 9)) and "paper 110M parameters" in text


def test_a_checkpoint_is_judged_by_the_study_rules():
    """``diagnose --checkpoint``'s rows come from the same rule functions: the author run's
    last record and final measurements, handed over as a checkpoint's, get the study's
    verdict, rule and numbers (less what needs a step 0: E3's learned-vs-inherited leg)."""
    r = study(author_op=1e-8, fid=(19, 15))
    r["runs"]["author"]["history"][0]["sigma2_over_sigma1_A"] = [[1e-9, 1e-9]]  # inherited
    run = r["runs"]["author"]
    online = {"changed": 0, "entries": 64, "max_abs_change": 0.0}
    d = {
        "model": {"checkpoint": "ck.pt", "dk": 32, "n_prompts": 20, "tokens": None},
        "record": run["history"][-1],
        "final": {"fidelity": run["fidelity"], "online_contract": online},
    }
    ck = {v.claim: v for v in checkpoint_rules(d)}
    assert list(ck) == ["E1", "E2", "E3", "E8", "online contract"]
    s = author(r)
    for mine, theirs in ((ck["E1"], e1(s)), (ck["E2"], e2(s)), (ck["E8"], e8(s))):
        assert (mine.verdict, mine.rule) == (theirs.verdict, theirs.rule), mine.claim
        shared = {k: x for k, x in theirs.numbers.items() if not k.startswith("step 0")}
        assert mine.numbers == shared, mine.claim
        assert mine.decided_by == "checkpoint ck.pt" and "on 20 prompts" in mine.caveat
    assert e3(s).verdict == INCONCLUSIVE  # the study sees step 0: inherited, not learned
    assert ck["E3"].verdict == SUPPORTED  # one checkpoint cannot tell
    assert "learned vs inherited: not decidable here" in ck["E3"].caveat
    assert ck["online contract"].verdict == SUPPORTED


def test_verdict_values_are_checked():
    with pytest.raises(ValueError, match="unknown verdict"):
        Verdict("E1", "probably", "author", "r", "c")
    assert len(VERDICTS) == 4
