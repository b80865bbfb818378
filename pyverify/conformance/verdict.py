"""The verdict of ``pyverify check``, derived from the saved records by a rule, and its files.

Per theorem ID, over the tests of that ID that ran on the implementation:

* ``failed`` -- any test failed (or errored); the smallest failing example is shown,
  labelled with its test;
* ``passed`` -- otherwise, at least one test passed;
* ``not applicable`` -- every test was skipped as not applicable (the missing capability
  or optional method is named);
* ``not run`` -- tests were skipped for another reason, or none of the ID's property
  tests takes a plugin (exact or kernel-internal checks only).

A result that broke the protocol (:class:`~pyverify.conformance.subject.ProtocolViolation`)
fails the tests that met it; its distinct one-line messages are listed as well
(``protocol_violations``). The sweep keeps each row's pass/fail (with why where the row
had no proved bound) and what it left out, named (a subject off the CPU, deductive stages
a plugin returns only in part: not failures; a sweep that left out every subject is
``not run``). The check fails (exit 1) when any ID failed, the sweep failed, or the suite
itself did not run cleanly. ``<name>.json`` is deterministic (no timings, no
error figures); those are in ``<name>.measured.json``. :func:`write_junit` gives CI the
same verdict as JUnit XML.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any

from pyverify.conformance.run import CheckRun
from pyverify.conformance.subject import NA_PREFIX
from pyverify.output import table, write_json, write_text
from pyverify.theorems import SUMMARIES

__all__ = ["format_table", "verdict", "write_junit", "write_reports"]

SCHEMA = 3


def _id_verdict(tests: list[dict]) -> dict[str, Any]:
    failed = [t for t in tests if t["outcome"] in ("failed", "error")]
    passed = [t for t in tests if t["outcome"] == "passed"]
    na = [t for t in tests if t["outcome"] == "skipped" and t["reason"].startswith(NA_PREFIX)]
    other = [t for t in tests if t not in failed and t not in passed and t not in na]
    reasons = sorted({t["reason"][len(NA_PREFIX) :].strip() for t in na})
    if failed:
        # a Hypothesis-shrunk example (labelled inputs) first, then the shortest
        def size(t: dict) -> tuple[bool, int, str]:
            shrunk = "Falsifying example" in t["example"] or "Failing test case" in t["example"]
            return (not shrunk, len(t["example"]), t["nodeid"])

        smallest = min(failed, key=size)
        verdict = "failed"
    else:
        smallest = None
        verdict = "passed" if passed else "not applicable" if na and not other else "not run"
    return {
        "verdict": verdict,
        "counts": {
            "passed": len(passed),
            "failed": len(failed),
            "not_applicable": len(na),
            "not_run": len(other),
        },
        "not_applicable": reasons,
        "failed_tests": sorted(t["nodeid"] for t in failed),
        "smallest_failing_example": None
        if smallest is None
        else {"test": smallest["nodeid"], "example": smallest["example"]},
    }


def _violations(tests: list[dict]) -> list[str]:
    """The distinct protocol violations, the first message (in test order) of each kind.

    Messages alike but for their numbers (shapes, counts) are one kind.
    """
    first: dict[str, str] = {}
    for t in sorted(tests, key=lambda t: t["nodeid"]):
        if t.get("violation"):
            first.setdefault(re.sub(r"\d+", "#", t["violation"]), t["violation"])
    return sorted(first.values())


def verdict(run: CheckRun) -> dict[str, Any]:
    """The deterministic verdict of a run (what ``<name>.json`` holds)."""
    theorems = {i: _id_verdict([t for t in run.tests if i in t["theorems"]]) for i in run.ids}
    # exit 5 (nothing collected) checks nothing; a failing test with no ID still fails the run
    unattributed = [
        t for t in run.tests if not t["theorems"] and t["outcome"] in ("failed", "error")
    ]
    checked = any(v["verdict"] in ("passed", "failed") for v in theorems.values())
    suite_ok = run.pytest_exit in (0, 1) and checked and not unattributed
    sweep = None
    if run.sweep is not None:
        rows = [
            {"case": r.case, "path": r.path, "stage": r.stage, "passed": r.passed}
            | ({"error": r.note} if r.stage == "error" else {})  # a crash: its message
            | ({"no_bound": r.proved_note} if r.tolerance_rule == "no proved bound" else {})
            for r in run.sweep
        ]
        ok = all(r["passed"] for r in rows)
        # every subject left out (off the CPU): nothing compared, named, not a failure
        status = "failed" if not ok else "passed" if rows else "not run"
        sweep = {"verdict": status, "rows": rows, "left_out": dict(sorted(run.left_out.items()))}
    ok = (
        suite_ok
        and all(v["verdict"] != "failed" for v in theorems.values())
        and (sweep is None or sweep["verdict"] != "failed")
    )
    return {
        "schema": SCHEMA,
        "implementation": run.name,
        "impl": run.spec,
        "subjects": list(run.subjects),
        "capabilities": list(run.capabilities),
        "hypothesis_profile": "quick" if run.quick else "ci",
        "suite": "ran"
        if suite_ok
        else f"pytest exited {run.pytest_exit}"
        if run.pytest_exit not in (0, 1)
        else "no test checked a theorem ID"
        if not checked
        else "a failing test names no theorem ID",
        "theorems": theorems,
        "crosscheck": sweep,
        "protocol_violations": _violations(run.tests),
        "ok": ok,
    }


def _failure(r: dict[str, Any]) -> str:
    """A failed sweep row: its case, path and stage, and why where it had no bound."""
    why = f" ({r['no_bound']})" if r.get("no_bound") else ""
    return f"{r['case']} {r['path']} {r['stage']}{why}"


def _detail(v: dict[str, Any]) -> str:
    c = v["counts"]
    if v["verdict"] == "failed":
        return f"{c['failed']} failed, {c['passed']} passed: {v['failed_tests'][0]}"
    if v["verdict"] == "passed":
        na = f", {c['not_applicable']} not applicable" if c["not_applicable"] else ""
        return f"{c['passed']} test{'s' if c['passed'] != 1 else ''} passed{na}"
    if v["verdict"] == "not applicable":
        return "; ".join(v["not_applicable"])
    if not any(c.values()):
        return "no property test of this ID takes a plugin (exact/kernel-internal checks)"
    return f"{c['not_run']} skipped"


def format_table(v: dict[str, Any]) -> str:
    """The per-ID table (plain text) with the smallest failing examples below it."""
    rows = [(i, d["verdict"], _detail(d)) for i, d in v["theorems"].items()]
    if v["crosscheck"] is not None:
        cc = v["crosscheck"]
        bad = [_failure(r) for r in cc["rows"] if not r["passed"]]
        rows.append(("(crosscheck vs float64 reference)", cc["verdict"],
                     f"{len(cc['rows']) - len(bad)}/{len(cc['rows'])} stages within their "
                     "proved bounds"
                     + (f"; first failure: {bad[0]}" if bad else "")))  # fmt: skip
    out = [table(("theorem ID", "verdict", "detail"), rows)]
    if v["crosscheck"] is not None and v["crosscheck"].get("left_out"):
        out += ["", "left out of the crosscheck sweep:"]
        out += [f"  {k}: {why}" for k, why in v["crosscheck"]["left_out"].items()]
    if v["protocol_violations"]:
        out += ["", "protocol violations (each fails the tests that met it):"]
        out += [f"  {x}" for x in v["protocol_violations"]]
    for i, d in v["theorems"].items():
        ex = d["smallest_failing_example"]
        if ex:
            out += ["", f"{i}: smallest failing example ({ex['test']}):", ex["example"]]
    if v["suite"] != "ran":
        out += ["", f"the property suite did not run cleanly: {v['suite']}"]
    out += ["", f"{v['implementation']}: {'PASSED' if v['ok'] else 'FAILED'}"]
    return "\n".join(out)


def _markdown(v: dict[str, Any]) -> str:
    lines = [
        f"# Conformance of `{v['implementation']}`",
        "",
        f"`pyverify check --impl {v['impl']}` (Hypothesis profile `{v['hypothesis_profile']}`)"
        f": **{'passed' if v['ok'] else 'FAILED'}**.",
        "",
        f"Checked: {', '.join(f'`{s}`' for s in v['subjects'])}; capabilities: "
        f"{', '.join(v['capabilities'])}.",
        "",
        "| theorem ID | statement | verdict | detail |",
        "| --- | --- | --- | --- |",
    ]
    for i, d in v["theorems"].items():
        detail = _detail(d).replace("|", "\\|")
        summary = SUMMARIES[i].replace("|", "\\|")
        lines.append(f"| `{i}` | {summary} | {d['verdict']} | {detail} |")
    if v["crosscheck"] is not None:
        cc = v["crosscheck"]
        n_ok = sum(r["passed"] for r in cc["rows"])
        lines += ["", f"Cross-check sweep against the float64 reference: **{cc['verdict']}** "
                  f"({n_ok}/{len(cc['rows'])} stages within their proved bounds; errors in "
                  f"`{v['implementation']}.measured.json`)."]  # fmt: skip
        bad = [_failure(r) for r in cc["rows"] if not r["passed"]]
        lines += ["", *(f"* FAILED `{x}`" for x in bad)] if bad else []
        left = cc.get("left_out") or {}
        lines += ["", *(f"* left out: `{k}`: {why}" for k, why in left.items())] if left else []
    if v["protocol_violations"]:
        lines += ["", "Protocol violations (each fails the tests that met it):", ""]
        lines += [f"* `{x}`" for x in v["protocol_violations"]]
    for i, d in v["theorems"].items():
        ex = d["smallest_failing_example"]
        if ex:
            lines += ["", f"## `{i}`: smallest failing example", "", f"`{ex['test']}`", "",
                      "```", ex["example"], "```"]  # fmt: skip
    return "\n".join(lines) + "\n"


def write_reports(run: CheckRun, v: dict[str, Any], folder: Path) -> list[Path]:
    """Write ``<name>.md``, ``<name>.json`` (deterministic) and ``<name>.measured.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    base = folder / v["implementation"]
    md, js, ms = (base.with_name(base.name + s) for s in (".md", ".json", ".measured.json"))
    write_text(md, _markdown(v))
    write_json(js, v)
    measured = {
        "seconds": round(run.seconds, 1),
        "host": {
            "machine": platform.machine(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "crosscheck": None
        if run.sweep is None
        else [
            {
                "case": r.case,
                "path": r.path,
                "stage": r.stage,
                "error": r.max_rel,
                "tolerance": r.tolerance,
                "rule": r.tolerance_rule,
                "note": r.note,
            }
            for r in run.sweep
        ],
    }
    write_json(ms, measured)
    return [md, js, ms]


def write_junit(v: dict[str, Any], path: Path) -> None:
    """Write the verdict as JUnit XML for CI: one test case per theorem ID, plus the sweep.

    ``failed`` IDs carry their smallest failing example, ``not applicable`` and ``not run``
    ones are skipped with the reason; a suite that did not run cleanly is an error. No
    timings: the file is as deterministic as ``<name>.json``.
    """
    import xml.etree.ElementTree as ET

    name = v["implementation"]
    suite = ET.Element("testsuite", name=f"pyverify check {name}")
    counts = {"tests": 0, "failures": 0, "skipped": 0, "errors": 0}

    def case(test: str, kind: str | None = None, message: str = "", text: str = "") -> None:
        el = ET.SubElement(suite, "testcase", classname=f"pyverify.check.{name}", name=test)
        counts["tests"] += 1
        if kind is not None:
            counts["failures" if kind == "failure" else "errors" if kind == "error" else kind] += 1
            sub = ET.SubElement(el, kind, message=message)
            sub.text = text or None

    for i, d in v["theorems"].items():
        if d["verdict"] == "failed":
            ex = d["smallest_failing_example"]
            case(i, "failure", _detail(d), f"{ex['test']}\n{ex['example']}")
        elif d["verdict"] == "passed":
            case(i)
        else:
            case(i, "skipped", f"{d['verdict']}: {_detail(d)}")
    if v["crosscheck"] is not None:
        bad = [r for r in v["crosscheck"]["rows"] if not r["passed"]]
        lines = [f"{_failure(r)} {r.get('error', '')}".rstrip() for r in bad]
        case(
            "crosscheck", "failure" if bad else None, f"{len(bad)} stages failed", "\n".join(lines)
        )
    if v["suite"] != "ran":
        case("property suite", "error", v["suite"])
    for key, n in counts.items():
        suite.set(key, str(n))
    ET.indent(suite)
    write_text(path, ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n")
