from pyverify.lean.audit import (
    disallowed_axioms,
    judge_diagnostics,
    parse_print_axioms,
    scan_source,
)
from pyverify.lean.messages import Diagnostic, parse_json_output


def test_scan_source_finds_words_outside_comments_only():
    src = (
        "/-- uses no sorry -/\n"
        "theorem a : True := by sorry\n"
        '-- axiom here is a comment\ndef s := "native_decide"\n'
        "axiom bad : False\n"
        "@[implemented_by foo] def g := 1\n"
        "theorem sorry_free : True := trivial\n"
    )
    found = [(f.line, f.reason) for f in scan_source("X.lean", src)]
    assert found == [
        (2, "audit: uses `sorry`"),
        (5, "audit: uses `axiom`"),
        (6, "audit: uses `implemented_by`"),
    ]


def test_parse_json_output_ignores_noise():
    out = (
        "[DEBUG:A] lean_main entered\nmodule\n\npublic section\n"
        "  - /tmp/lib/Init.olean\n"
        '{"caption":"","data":"declaration uses `sorry`","endPos":null,"fileName":"P/X.lean",'
        '"kind":"hasSorry","pos":{"column":8,"line":3},"severity":"warning"}\n'
        '{"data":"type mismatch\\n  h","fileName":"P/X.lean","kind":"[anonymous]",'
        '"pos":{"column":2,"line":7},"severity":"error"}\n'
    )
    diags, rest = parse_json_output(out)
    assert [d.format() for d in diags] == [
        "P/X.lean:3:8: warning: declaration uses `sorry`",
        "P/X.lean:7:2: error: type mismatch\n  h",
    ]
    assert diags[0].is_sorry and not diags[1].is_sorry
    assert "module" in rest
    findings = judge_diagnostics(diags)
    assert [f.reason for f in findings] == ["audit: declaration uses `sorry`", "type mismatch\n  h"]


def test_info_and_plain_warnings_pass_the_audit():
    d = [
        Diagnostic("X.lean", 1, 0, "info", "a : Nat"),
        Diagnostic("X.lean", 2, 0, "warning", "unused variable `h`"),
    ]
    assert judge_diagnostics(d) == []


def test_print_axioms_parsing():
    text = (
        "'Pldr.a' depends on axioms: [propext, Classical.choice,\n Quot.sound]\n"
        "'Pldr.b' does not depend on any axioms\n"
        "'Pldr.c' depends on axioms: [propext, sorryAx]\n"
    )
    used = parse_print_axioms(text)
    assert used == {
        "Pldr.a": ["propext", "Classical.choice", "Quot.sound"],
        "Pldr.b": [],
        "Pldr.c": ["propext", "sorryAx"],
    }
    assert disallowed_axioms(used) == {"Pldr.c": ["sorryAx"]}
