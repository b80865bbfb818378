"""The ledger's rules on hand-made results: every outcome reachable, premises checked first.

Each rule is driven by a study written to the boundary it tests (``fake_study``): the
gate against the best n-gram order on every run a row uses, the collapsed-model premise
of E2, E8, E6, N1, the step-wise margin certificate, E5's spread, the density-operator
twirl, and the rows N1-N3, N7.
"""

from __future__ import annotations

import json

import pytest
from fake_study import legacy, record, study, timings, trending

from pyverify.claims.ledger import build_ledger, format_ledger, ledger_json
from pyverify.claims.rules import (
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
    n1,
    n2,
    n3,
    n7,
    study_subject,
)
from pyverify.claims.thresholds import COLLAPSED, MOVING, N1_KL, ROW_COLLAPSED
from pyverify.claims.trends import SIGNED_MEAN_FLOOR
from pyverify.claims.verdict import (
    ABSENT,
    BY_CONSTRUCTION,
    DIFFERS,
    HOLDS_AT_INIT,
    INCONCLUSIVE,
    NO_DIFFERENCE,
    NOT_MEASURED,
    NOT_REPRODUCED,
    NOT_SUPPORTED,
    OPEN,
    PREMISE_ABSENT,
    PRESENT,
    SUPPORTED,
    TRENDING_AWAY,
    TRENDING_TOWARD,
    UNDECIDED,
    VERDICTS,
    Verdict,
)

BETWEEN = (COLLAPSED * MOVING) ** 0.5  # neither collapsed nor moving


def rows(result, t=None) -> dict[str, Verdict]:
    return {v.claim: v for v in build_ledger(result, t)}


def author(result) -> Subject:
    return study_subject(result, "author")


def subjects(result) -> dict[str, Subject]:
    return {n: study_subject(result, n) for n in result["runs"]}


# --- E1 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"author_op": 1e-8}, SUPPORTED),
        ({"author_op": 1e-2}, NOT_SUPPORTED),
        ({"author_op": BETWEEN}, INCONCLUSIVE),
    ],
)
def test_e1(kwargs, expected):
    v = e1(author(study(**kwargs)))
    assert v.verdict == expected and v.premise_met is True
    assert "every run used passes the regime's gate" in v.premise


def test_e1_needs_the_pairwise_form_too():
    r = study(author_op=1e-8)
    r["runs"]["author"]["history"][-1]["pairwise_order"]["G"]["signed_mean"] = [[1e-3], [1e-3]]
    r["runs"]["author"]["history"][-1]["pairwise_order"]["G"]["rms"] = [[1e-3], [1e-3]]
    assert e1(author(r)).verdict == INCONCLUSIVE  # suite form collapsed, author's form not


def test_e1_reports_an_ill_conditioned_signed_mean_form_instead_of_using_it():
    """A signed-mean form whose denominator is below SIGNED_MEAN_FLOOR of the RMS scale (A, a
    LayerNorm output, at step 0: 1.9e17 in the first study) is counted as ill-conditioned
    and does not decide; a well-conditioned one does."""
    r = study(author_op=1e-8)
    r["runs"]["author"]["history"][-1] = record(
        100,
        op=1e-8,
        pair=1e-8,
        pair_scale=SIGNED_MEAN_FLOOR / 10,
        ratio=1e-9,
        rows=1e-9,
        a_lo=0.0,
        a_hi=0.0,
    )  # fmt: skip  (signed-mean 1e-4: above COLLAPSED, but ill-conditioned)
    v = e1(author(r))
    assert v.verdict == SUPPORTED
    assert v.numbers["pairwise signed-mean ill-conditioned (all tensors)"] == "8 of 8"
    # RMS form 1e-8, signed-mean 5e-6: denominator 2e-3 of the RMS scale (well-conditioned)
    # and above COLLAPSED: it decides, and E1 is no longer supported
    g = r["runs"]["author"]["history"][-1]["pairwise_order"]["G"]
    g["signed_mean"], g["signed_mean_denominator"] = [[5e-6], [5e-6]], [[2e-3], [2e-3]]
    v = e1(author(r))
    assert v.verdict == INCONCLUSIVE
    assert v.numbers["pairwise signed-mean ill-conditioned (all tensors)"] == "6 of 8"


# --- the gate ------------------------------------------------------------------------


def test_gate_is_the_best_ngram_order_on_every_row_that_uses_a_failing_run():
    r = study(author_op=1e-8, val_loss=1.6)  # beats the 4-gram (1.7), not the 5-gram (1.5)
    ok, why = gate(r)
    assert ok is False and "does not beat the best n-gram" in why and "1.500" in why
    ledger = rows(r, timings(3.0))
    for claim, v in ledger.items():
        if claim in ("E5", "E7", "F1", "F2"):
            continue  # E5: wall time; E7: the passing runs; findings: ungated
        assert v.verdict == INCONCLUSIVE and v.reason == NOT_REPRODUCED, claim
        assert v.premise_met is False and "gate failed" in v.caveat, claim
        assert v.verdict != NOT_SUPPORTED
    assert ledger["E5"].verdict == SUPPORTED  # wall time is exempt from the gate
    e1_row = ledger["E1"]
    assert "would say 'supported'" in e1_row.caveat
    assert e1_row.numbers["author causal val loss"] == 1.6
    assert e1_row.numbers["best n-gram val loss (order 5)"] == 1.5
    assert "1.6" not in e1_row.caveat  # the caveat goes into the float-free JSON
    assert rows(study(author_op=1e-8, val_loss=1.4))["E1"].verdict == SUPPORTED


def test_the_gate_applies_to_every_run_a_verdict_uses():
    """E4 uses subcritical too: a subcritical run that loses to the best n-gram makes E4
    inconclusive even where author passes (the first study's subcritical: 2.50)."""
    r = study(author_op=1e-8, sub_op=1e-2)
    assert rows(r)["E4"].verdict == SUPPORTED
    r["runs"]["subcritical"]["causal_val_loss"] = 2.5
    v = rows(r)["E4"]
    assert (v.verdict, v.reason) == (INCONCLUSIVE, NOT_REPRODUCED)
    assert "subcritical: causal validation loss does not beat" in v.caveat


def test_gate_uses_the_causal_loss_and_says_why_not():
    r = study(val_loss=1.6)
    assert r["runs"]["author"]["history"][-1]["val_loss"] < 1.5  # teacher-forced: leaks
    assert gate(r)[0] is False
    del r["runs"]["author"]["causal_val_loss"]
    assert gate(r) == (False, "author: no causal validation loss saved")
    r["runs"]["author"]["diverged"] = "run author: training loss is nan"
    assert gate(r) == (False, "author: the run diverged")
    assert rows(r)["E3"].reason == NOT_REPRODUCED


# --- E2, E8: collapsed-model premise, margins vs tokens ------------------------------


@pytest.mark.parametrize(
    ("fid", "exceeded", "expected_e2", "expected_e8"),
    [
        ((20, 20), 0, SUPPORTED, SUPPORTED),
        ((19, 15), 1, NOT_SUPPORTED, NOT_SUPPORTED),
        ((20, 12), 0, INCONCLUSIVE, SUPPORTED),  # tokens equal, margins do not certify
        ((20, 12), 2, NOT_SUPPORTED, SUPPORTED),  # a gap as large as a margin, no flip
        ((18, 12), 0, INCONCLUSIVE, NOT_SUPPORTED),  # flips, but no gap >= its margin
    ],
)
def test_e2_decides_on_margins_and_e8_on_tokens(fid, exceeded, expected_e2, expected_e8):
    r = study(fid=fid)
    r["runs"]["author"]["fidelity"]["prompt_G"]["gap_exceeds_margin"] = exceeded
    assert e2(author(r)).verdict == expected_e2 and e8(author(r)).verdict == expected_e8
    v8 = e8(author(r))
    assert v8.numbers["certified by E2 (not counted again)"] == fid[1]
    assert v8.numbers["uncertified prompts with identical tokens"] == (
        f"{fid[0] - fid[1]} of {20 - fid[1]}"
    )


def test_e2_e8_kv_a_is_not_counted_again():
    r = study(fid=(20, 20))
    r["runs"]["author"]["fidelity"]["kv_A"]["tokens_identical"] = 3  # ignored: equal by
    assert e8(author(r)).verdict == SUPPORTED  # construction to prompt_G
    assert "not counted again" in e2(author(r)).caveat


def test_e2_e8_need_a_collapsed_model():
    """On a model whose G moves the mismatch only restates E1: premise absent."""
    r = study(author_op=1e-2, fid=(10, 2))
    for rule in (e2, e8):
        v = rule(author(r))
        assert (v.verdict, v.reason, v.premise_met) == (INCONCLUSIVE, PREMISE_ABSENT, False)
        assert v.numbers["prompt_G tokens identical" if rule is e2 else "tokens identical"] == 10
        assert "G collapsed" in v.premise


def test_e2_e8_by_construction_when_g_is_bitwise_invariant():
    r = study(fid=(20, 12))
    rec = r["runs"]["author"]["history"][-1]
    rec["eps_G"] = {"32": [[0.0, 0.0]], "64": [[0.0, 0.0]]}
    assert e2(author(r)).verdict == e8(author(r)).verdict == BY_CONSTRUCTION
    assert "test_any_stack_a_cached_decoding_equals_g_cached_decoding" in e2(author(r)).caveat
    assert "FULL RECOMPUTATION" in e2(author(r)).rule


# --- E3, E4 --------------------------------------------------------------------------


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


def test_e3_inherited_singularity_is_not_supported_as_learned_and_frozen_is_shown():
    r = study()
    r["runs"]["author"]["history"][0]["sigma2_over_sigma1_A"] = [[1e-9, 1e-9]]
    assert e3(author(r)).verdict == INCONCLUSIVE
    v = rows(r)["E3"]
    assert v.numbers["control frozen: sigma2/sigma1 A end median"] == 0.7


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"author_op": 1e-8, "sub_op": 1e-2}, SUPPORTED),
        ({"author_op": 1e-8, "sub_op": 1e-9}, NOT_SUPPORTED),  # subcritical collapsed too
        ({"author_op": 1e-8, "sub_op": BETWEEN}, INCONCLUSIVE),
    ],
)
def test_e4(kwargs, expected):
    r = study(**kwargs)
    assert e4(author(r), study_subject(r, "subcritical")).verdict == expected


def test_e4_is_not_e1_again_premise_absent_when_author_did_not_collapse():
    """The first study's E4 said "not supported" because author's median was >= 1e-3 (E1
    again); now the critical run's collapse is E4's premise."""
    r = study(author_op=0.083, sub_op=0.141)
    v = e4(author(r), study_subject(r, "subcritical"))
    assert (v.verdict, v.reason) == (INCONCLUSIVE, PREMISE_ABSENT)


def test_e4_trends():
    r = study()
    sub = study_subject(r, "subcritical")
    a = author(r)
    falling, rising = trending((-1.0, -1.2)), trending((0.5, 0.6))
    a = Subject("author", falling, a.final, a.dk, a.scope, True, a.gate)
    sub = Subject("subcritical", rising, sub.final, sub.dk, sub.scope, True, sub.gate)
    v = e4(a, sub)
    assert (v.verdict, v.reason) == (TRENDING_TOWARD, PREMISE_ABSENT)
    assert "subcritical - author, G (S=64)" in v.trend_numbers
    up = Subject("author", rising, a.final, a.dk, a.scope, True, a.gate)
    down = Subject("subcritical", falling, sub.final, sub.dk, sub.scope, True, sub.gate)
    v = e4(up, down)
    assert v.verdict == TRENDING_AWAY


def test_e4_without_subcritical_is_not_measured():
    r = study()
    del r["runs"]["subcritical"]
    assert e4(author(r), None).reason == NOT_MEASURED
    assert rows(r)["E4"].verdict == INCONCLUSIVE


# --- E5 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("speedup", "spread", "expected"),
    [
        (3.0, 0.5, SUPPORTED),  # every repeat >= 2
        (3.0, 1.5, INCONCLUSIVE),  # the spread reaches below the cut-off
        (1.0, 0.2, NOT_SUPPORTED),  # every repeat < 1.25
        (1.3, 0.02, INCONCLUSIVE),  # the first study's 1.29x: between the cut-offs
    ],
)
def test_e5_decides_only_where_the_spread_clears_the_cut_off(speedup, spread, expected):
    v = e5(study(), timings(speedup, spread=spread, runs=("author", "frozen")))
    assert v.verdict == expected
    assert v.numbers["repeats pooled"] == 14


def test_e5_needs_five_repeats():
    v = e5(study(), timings(3.0, repeats=3))
    assert (v.verdict, v.reason) == (INCONCLUSIVE, PREMISE_ABSENT)
    old = {"runs": {"author": {"speedup_g_over_kv_a": 3.0, "speedup": 9.0}}}  # best of 3
    assert e5(study(), old).reason == PREMISE_ABSENT
    assert e5(study(), None).reason == NOT_MEASURED


# --- E6 ------------------------------------------------------------------------------


def _e6_study(end: dict, init: dict | None = None):
    r = study(author_end={"jac": 0.5, **end})
    hist = r["runs"]["author"]["history"]
    hist[-1]["order_parameter"]["32"]["A"] = [[2e-9, 2e-9]]  # concentrates with length
    hist[-1]["order_parameter"]["64"]["A"] = [[1e-9, 1e-9]]
    hist[0] = record(0, op=0.1, **(init or {}))
    return r


@pytest.mark.parametrize(
    ("end", "init", "expected", "reason"),
    [
        ({}, {"rho_comm": 0.5, "jac": 2.0, "a_lo": 0.1, "a_hi": 0.2}, SUPPORTED, ""),
        ({"jac": 2.0}, None, NOT_SUPPORTED, ""),  # collapsed without contraction
        ({"rho_comm": 0.3}, None, NOT_SUPPORTED, ""),  # the density operator is not twirled
        ({}, {}, INCONCLUSIVE, HOLDS_AT_INIT),  # every stage already held at step 0
    ],
)
def test_e6_legs_at_step_0_and_end(end, init, expected, reason):
    v = e6(author(_e6_study(end, init)))
    assert (v.verdict, v.reason) == (expected, reason)
    if reason == HOLDS_AT_INIT:
        assert {v.numbers[f"stage {k}"] for k in ("twirl", "concentration", "contraction")} == {
            "holds at init"
        }


def test_e6_twirl_leg_is_the_density_operator_not_g():
    r = _e6_study({"comm": 0.99}, {"rho_comm": 0.5})  # G off the commutant, rho on it
    assert e6(author(r)).verdict == SUPPORTED
    assert "DENSITY OPERATOR" in e6(author(r)).rule


def test_e6_needs_collapse_and_the_density_measurement():
    assert e6(author(study(author_op=1e-2))).reason == PREMISE_ABSENT
    assert e6(author(legacy(_e6_study({})))).reason == NOT_MEASURED


# --- E7 ------------------------------------------------------------------------------


def test_e7():
    assert e7(subjects(study(author_op=1e-8, sub_op=1e-2))).verdict == SUPPORTED
    v = e7(subjects(study(author_op=1e-2, sub_op=1e-2)))  # one phase: nothing to separate
    assert (v.verdict, v.reason) == (INCONCLUSIVE, PREMISE_ABSENT)
    r = study(author_op=1e-8)
    r["runs"]["author"]["history"][-1]["pairwise_order"]["G"]["rms"] = [[1e-2], [1e-2]]
    assert e7(subjects(r)).verdict == NOT_SUPPORTED  # the two forms disagree


def test_e7_counts_only_the_runs_that_pass_the_gate():
    r = study(author_op=1e-8, sub_op=1e-2, other_op=1e-2)
    r["runs"]["author"]["history"][-1]["pairwise_order"]["G"]["rms"] = [[1e-2], [1e-2]]
    r["runs"]["author"]["causal_val_loss"] = 2.0  # the disagreeing run loses to the n-gram
    v = e7(subjects(r))
    assert v.verdict != NOT_SUPPORTED and "left out" in v.caveat


# --- N1, N2, N3 ----------------------------------------------------------------------


def test_n1_kl_decides_only_the_not_supported_side_and_the_rms_premise_is_absent():
    r = study(author_op=1e-8)
    v = n1(author(r))
    assert (v.verdict, v.reason) == (INCONCLUSIVE, PREMISE_ABSENT)
    assert "replicas" in v.premise and "replicas" in v.caveat
    assert v.numbers["stale initial cache"] == "fails the KL target"
    assert "NOT N1's statistic" in " ".join(v.numbers)
    r["runs"]["author"]["cache_contract"]["own"]["mean_kl"] = 2 * N1_KL
    assert n1(author(r)).verdict == NOT_SUPPORTED
    r = study(author_op=1e-2)  # a model whose G moves: not the contract's collapsed state
    r["runs"]["author"]["cache_contract"]["own"]["mean_kl"] = 2 * N1_KL
    assert n1(author(r)).reason == PREMISE_ABSENT
    assert n1(author(legacy(study()))).reason == NOT_MEASURED


def test_n2_row_collapse_apart_from_context_invariance():
    r = study(author_op=1e-2, author_end={"rows": 1e-9})  # rows collapse, context moves
    v = n2(author(r))
    assert v.verdict == SUPPORTED and v.numbers["head-states with one without the other"] == 2
    r = study(author_op=1e-8)  # both collapse together in every head
    assert n2(author(r)).verdict == INCONCLUSIVE
    r = study(author_op=1e-2, author_end={"rows": 0.9})  # neither
    assert n2(author(r)).reason == PREMISE_ABSENT
    assert ROW_COLLAPSED == pytest.approx(1e-12)
    assert n2(author(legacy(study()))).reason == NOT_MEASURED


def test_n3_reopening_increments():
    r = study()
    hist = r["runs"]["author"]["history"]
    hist[:] = [record(s, op=0.1, row_energy=e) for s, e in ((0, 0.5), (100, 0.4), (200, 0.45))]
    v = n3(author(r))
    assert v.verdict == SUPPORTED and v.numbers["re-opening increments"] == "2 of 4"
    assert v.numbers["largest relative re-opening"] == pytest.approx(0.125)
    hist[2] = record(200, op=0.1, row_energy=0.3)
    assert n3(author(r)).verdict == NOT_SUPPORTED  # monotone on this grid
    hist[:] = hist[:1]
    assert n3(author(r)).reason == PREMISE_ABSENT  # one record: no increment


# --- N7, F1, F2 ----------------------------------------------------------------------


def _exposure_study(author_rates, free_rates, *, free_loss=1.4):
    r = study(run_loss=free_loss)
    r["runs"]["author"]["history"] = trending(author_rates)
    for name in ("prompt-A", "last-only"):
        r["runs"][name]["history"] = trending(free_rates)
    return r


def test_n7_and_f2_compare_the_collapse_trend_with_and_without_exposure():
    r = _exposure_study((-1.0, -1.1), (0.3, 0.4))
    ledger = rows(r)
    assert ledger["F2"].verdict == ledger["N7"].verdict == DIFFERS
    assert "prompt-A against author: differs" in ledger["F2"].trend
    r = _exposure_study((-1.0, 0.5), (-1.1, 0.6))  # the heads disagree: intervals hold 0
    assert rows(r)["F2"].verdict == NO_DIFFERENCE
    r = _exposure_study((-1.0, -1.1), (0.3, 0.4), free_loss=2.0)  # free runs lose to n-gram
    ledger = rows(r)
    assert ledger["F2"].verdict == DIFFERS  # a finding about the specimen: no gate
    assert (ledger["N7"].verdict, ledger["N7"].reason) == (INCONCLUSIVE, NOT_REPRODUCED)
    assert ledger["N7"].trend == ledger["F2"].trend  # the comparison is still shown
    assert n7({"author": author(r)}).reason == NOT_MEASURED


def test_f1_target_exposure():
    r = study()  # author: teacher-forced 1.0, causal 1.4 (reads later tokens); others do not
    v = rows(r)["F1"]
    assert v.verdict == PRESENT and v.decided_by == "all runs"
    assert v.numbers["author loss teacher-forced / causal / prompt-A"] == "1 / 1.4 / 1.5"
    assert v.numbers["prompt-A online contract"].startswith("100 of 16384 prefix logits change")
    r["runs"]["author"]["val_loss"] = 1.38  # no loss gap left, but prefix logits move
    assert rows(r)["F1"].verdict == OPEN
    for run in r["runs"].values():  # and no prefix logit moves either
        run["online_contract"] = {**run["online_contract"], "changed": 0}
    assert rows(r)["F1"].verdict == ABSENT
    assert rows(legacy(study()))["F1"].verdict == PRESENT  # the teacher-forced loss of the record


# --- the ledger ----------------------------------------------------------------------


def _walk_no_float(x):
    assert not isinstance(x, float)
    if isinstance(x, dict):
        for v in x.values():
            _walk_no_float(v)
    elif isinstance(x, list):
        for v in x:
            _walk_no_float(v)


def test_ledger_json_is_float_free_and_byte_stable():
    r = study()
    a = json.dumps(ledger_json(r, build_ledger(r, timings(3.0))), sort_keys=True)
    b = json.dumps(ledger_json(r, build_ledger(r, timings(2.9))), sort_keys=True)
    assert a == b  # timing figures change, the outcomes do not: no number in the record
    _walk_no_float(json.loads(a))
    saved = json.loads(a)
    assert [c["claim"] for c in saved["claims"]] == [
        *(f"E{i}" for i in range(1, 9)), "N1", "N2", "N3", "N7"]  # fmt: skip
    assert [c["claim"] for c in saved["findings"]] == ["F1", "F2"]
    for c in saved["claims"] + saved["findings"]:
        assert {"scope", "premise", "premise_met", "trend", "reason", "caveat"} <= set(c)
    assert saved["gate"]["passed"]["author"] is True


def test_printed_ledger_shows_scope_premise_numbers_trend_caveat_per_row():
    r = study(val_loss=1.6)
    text = format_ledger(r, build_ledger(r, timings(3.0)))
    for claim in (*(f"E{i}" for i in range(1, 9)), "N1", "N2", "N3", "N7", "F1", "F2"):
        assert f"\n{claim} " in text
    blocks = text.split("\nE")[1:]
    for block in blocks:
        assert "   scope: " in block and "   premise (" in block and "   rule: " in block
    assert "E1 INCONCLUSIVE (NOT REPRODUCED AT THIS SCALE)" in text
    assert "paper 110M parameters" in text and "findings of the study" in text


def test_no_not_supported_from_a_failing_or_premise_absent_run():
    """Across studies built to fail each way, "not supported" only comes from rows whose
    runs pass the gate and whose premise is met."""
    cases = [
        study(val_loss=1.6, author_op=1e-2),
        study(author_op=1e-2, fid=(10, 2)),
        study(author_op=1e-8, sub_op=1e-9, run_loss=2.0),
        legacy(study(author_op=1e-2)),
    ]
    for r in cases:
        for v in build_ledger(r, timings(1.0)):
            if v.verdict == NOT_SUPPORTED:
                assert v.premise_met is True and v.reason == "", (v.claim, v.reason)


def test_legacy_study_gives_not_measured_never_a_crash():
    r = legacy(study(author_op=1e-8))
    ledger = rows(r, None)
    assert ledger["N2"].reason == ledger["N3"].reason == ledger["E5"].reason == NOT_MEASURED
    assert ledger["E6"].numbers["stage twirl"] == "not measured"
    assert ledger["E2"].verdict == SUPPORTED  # the conservative certificate was saved
    r["runs"]["author"]["fidelity"]["prompt_G"]["margin_covers_gap"] = 12
    assert rows(r)["E2"].reason == NOT_MEASURED  # no step-wise gap >= margin count saved


def test_a_checkpoint_is_judged_by_the_study_rules():
    """``diagnose --checkpoint``'s rows come from the same rule functions: the author run's
    last record and final measurements, handed over as a checkpoint's, get the study's
    outcome and rule (less what needs a step 0: E3's learned-vs-inherited leg, E6's
    holds-at-init, trends)."""
    r = study(author_op=1e-8, fid=(19, 15))
    r["runs"]["author"]["history"][0]["sigma2_over_sigma1_A"] = [[1e-9, 1e-9]]  # inherited
    run = r["runs"]["author"]
    final = {k: v for k, v in run.items() if k not in ("spec", "history")}
    d = {
        "model": {"checkpoint": "ck.pt", "dk": 32, "n_prompts": 20, "tokens": None},
        "record": run["history"][-1],
        "final": final,
    }
    ck = {v.claim: v for v in checkpoint_rules(d)}
    assert list(ck) == ["E1", "E2", "E3", "E6", "E8", "N1", "N2", "F1"]
    s = author(r)
    for claim, rule in (("E1", e1), ("E2", e2), ("E8", e8), ("N1", n1)):
        mine, theirs = ck[claim], rule(s)
        assert (mine.verdict, mine.rule) == (theirs.verdict, theirs.rule), claim
        study_only = ("step 0", "author ", "n-gram")  # step 0 and the gate: the study's only
        shared = {k: x for k, x in theirs.numbers.items() if not any(w in k for w in study_only)}
        assert {k: x for k, x in mine.numbers.items() if k in shared} == shared, claim
        assert mine.decided_by == "checkpoint ck.pt" and "on 20 prompts" in mine.scope
        assert "beats the best n-gram" not in mine.premise  # no gate for a checkpoint
    assert e3(s).verdict == INCONCLUSIVE  # the study sees step 0: inherited, not learned
    assert ck["E3"].verdict == SUPPORTED  # one checkpoint cannot tell
    assert "learned vs inherited: not decidable here" in ck["E3"].caveat
    assert ck["F1"].verdict == PRESENT and ck["F1"].decided_by == "checkpoint ck.pt"


def test_verdict_values_are_checked():
    with pytest.raises(ValueError, match="unknown verdict"):
        Verdict("E1", "probably", "author", "r", "c")
    with pytest.raises(ValueError, match="unknown verdict"):
        Verdict("E1", DIFFERS, "author", "r", "c")  # a comparison outcome is not a claim's
    with pytest.raises(ValueError, match="unknown claim"):
        Verdict("E9", SUPPORTED, "author", "r", "c")
    assert len(VERDICTS) == 4 and UNDECIDED
