from dataclasses import dataclass

from pyverify.lean.audit import (
    compare_axioms,
    disallowed_axioms,
    judge_diagnostics,
    parse_print_axioms,
    scan_lakefile,
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
        (2, "audit: uses `sorry` (in `a`)"),
        (5, "audit: uses `axiom` (in `bad`)"),
        (6, "audit: uses `implemented_by` (in `g`)"),
    ]


def test_scan_source_widened_words_and_phrases_name_the_declaration():
    src = (
        "set_option warn.sorry false in\n"
        "theorem t1 : False := sorryAx False false\n"
        "set_option debug.skipKernelTC true in\n"
        "theorem t2 : 1 = 1 := rfl\n"
        "theorem t3 : 10 < 20 := by decide +native\n"
        "theorem t4 : True := Lean.ofReduceBool _ _ trivial\n"
        "private unsafe def t5 : Nat := 0\n"
        "partial def t6 (n : Nat) : Nat := t6 n\n"
        "theorem t7 : True := by\n  exact Lean.trustCompiler\n"
    )
    found = [(f.line, f.reason) for f in scan_source("X.lean", src)]
    assert found == [
        (1, "audit: uses `set_option warn.sorry` (in `t1`)"),
        (2, "audit: uses `sorryAx` (in `t1`)"),
        (3, "audit: uses `debug.skipKernelTC` (in `t2`)"),
        (5, "audit: uses `decide +native` (in `t3`)"),
        (6, "audit: uses `ofReduceBool` (in `t4`)"),
        (7, "audit: uses `unsafe` (in `t5`)"),
        (8, "audit: uses `partial` (in `t6`)"),
        (10, "audit: uses `trustCompiler` (in `t7`)"),
    ]


def test_a_keyword_prefix_is_no_declaration():
    """`classical` / `elaborate` start like `class` / `elab`: the theorem keeps its name."""
    src = "theorem foo_bar : True := by\n  classical\n  sorry\n"
    assert [(f.line, f.reason) for f in scan_source("X.lean", src)] == [
        (3, "audit: uses `sorry` (in `foo_bar`)")
    ]


def test_scan_lakefile_refuses_lean_options(tmp_path):
    (tmp_path / "lakefile.toml").write_text(
        'name = "P"\n# moreLeanArgs in a comment is fine\n'
        'leanOptions = { debug.skipKernelTC = true }\nmoreLeanArgs = ["-Dx=1"]\n'
    )
    found = [(f.line, f.reason.split(" in ")[0]) for f in scan_lakefile(tmp_path)]
    assert found == [(3, "audit: `leanOptions`"), (4, "audit: `moreLeanArgs`")]
    assert all(f.file.endswith("lakefile.toml") for f in scan_lakefile(tmp_path))
    (tmp_path / "lakefile.toml").write_text('name = "P"\n')
    assert scan_lakefile(tmp_path) == []


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


# `#print axioms` output as a native Lean 4.28 prints it (recorded text: no native toolchain
# can be installed here), compared with what the .olean reader found.
RECORDED_PRINT_AXIOMS = """\
'Pldr.softmax_shift' depends on axioms: [propext, Classical.choice, Quot.sound]
'Pldr.rope_group' depends on axioms: [propext]
'Pldr.trivial_fact' does not depend on any axioms
'Pldr.cheat' depends on axioms: [propext, sorryAx]
"""


@dataclass
class _Reader:
    axioms: list[str]
    exact: bool


def test_compare_axioms_with_recorded_print_axioms():
    printed = parse_print_axioms(RECORDED_PRINT_AXIOMS)
    names = ["Pldr.softmax_shift", "Pldr.rope_group", "Pldr.trivial_fact", "Pldr.cheat"]
    reader = {
        "Pldr.softmax_shift": _Reader(["Classical.choice", "Quot.sound", "propext"], True),
        "Pldr.rope_group": _Reader([], False),  # at least nothing: consistent
        "Pldr.trivial_fact": _Reader([], True),
        "Pldr.cheat": _Reader(["propext", "sorryAx"], True),
    }
    assert compare_axioms(names, printed, reader) == [
        "theorem `Pldr.cheat` depends on sorryAx (#print axioms)"
    ]
    reader["Pldr.rope_group"] = _Reader([], True)  # an exact answer must agree
    reader["Pldr.trivial_fact"] = _Reader(["Quot.sound"], False)  # never more than printed
    problems = compare_axioms([*names[:3], "Pldr.missing"], printed, reader)
    assert problems == [
        "Pldr.rope_group: #print axioms says ['propext'], the .olean reader []",
        "Pldr.trivial_fact: #print axioms says [], the .olean reader ['Quot.sound'] (at least)",
        "no `#print axioms` answer for Pldr.missing",
    ]
