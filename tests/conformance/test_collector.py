"""The check's collector records what failed: the assertion that failed, with its values.

A small test file runs under ``-p pyverify.conformance.collector`` in a subprocess: two
adjacent assertions where the second fails (the record names the second, never its
neighbour), a NaN comparison (the values are kept whole), a Hypothesis test with two
distinct failures (an exception group: the first is shown, with its falsifying example),
a protocol violation (its one line is kept apart), a skip (its reason) and a ``find()``
(a search, not a failure: no shrinking line).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

TESTS = """
import pytest
from hypothesis import find, given, settings, strategies as st
from pyverify.conformance.subject import ProtocolViolation


def test_second_of_two_adjacent_asserts():
    a = 1.0
    assert a <= 2.0
    assert a + 0.5 <= a


def test_nan_is_shown_whole():
    x = float("nan")
    assert x <= 1e-14


@settings(database=None, derandomize=True, max_examples=200)
@given(st.integers())
def test_two_distinct_failures(n):
    if n > 10:
        assert n < 5
    if n < -10:
        raise ValueError("negative")


def test_protocol_violation():
    raise ProtocolViolation("me-cpu-float64: plga(...).out has dtype int64; needs real floats")


def test_skipped():
    pytest.skip("not applicable: capability 'rope' not offered by me")


def test_find_is_no_failure():
    assert find(st.integers(), lambda n: n > 3, settings=settings(database=None)) == 4
"""


def _run(tmp_path) -> tuple[dict[str, dict], str]:
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(TESTS), "utf-8")
    out = tmp_path / "records.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "test_sample.py", "-q", "-p", "no:cacheprovider",
         "-p", "no:xdist", "-p", "pyverify.conformance.collector", f"--pyverify-check={out}"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
        env={"HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path / "hyp"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads(out.read_text("utf-8"))
    assert data["schema"] == 1  # the results recorder's file, with the check's fields added
    return {r["nodeid"].split("::")[1]: r for r in data["tests"]}, proc.stdout


def test_records_name_the_assertion_that_failed_with_its_values(tmp_path):
    recs, stdout = _run(tmp_path)
    second = recs["test_second_of_two_adjacent_asserts"]
    assert second["outcome"] == "failed"
    lines = second["example"].splitlines()
    assert lines[0] == "at: test_sample.py:10: assert a + 0.5 <= a", lines
    assert lines[1] == "failed: assert (1.0 + 0.5) <= 1.0", lines

    nan = recs["test_nan_is_shown_whole"]["example"].splitlines()
    assert nan[1] == "failed: assert nan <= 1e-14", nan

    group = recs["test_two_distinct_failures"]["example"]
    first = group.splitlines()[1]
    assert first.startswith("failed: ") and ("assert" in first or "ValueError" in first), group
    assert "test_two_distinct_failures(" in group and "n=" in group  # the example
    assert "@reproduce_failure" not in group and " at 0x" not in group
    assert f"##pyverify-check shrinking {recs['test_two_distinct_failures']['nodeid']}" in stdout

    pv = recs["test_protocol_violation"]
    assert pv["violation"] == "me-cpu-float64: plga(...).out has dtype int64; needs real floats"
    assert recs["test_second_of_two_adjacent_asserts"]["violation"] == ""
    skip = recs["test_skipped"]
    assert skip["outcome"] == "skipped"
    assert skip["reason"] == "not applicable: capability 'rope' not offered by me"
    # one progress line per test, counting up to the total
    done = [ln for ln in stdout.splitlines() if ln.startswith("##pyverify-check ") and "/6 " in ln]
    assert [ln.split()[1] for ln in done] == [f"{i}/6" for i in range(1, 7)]
    # a find() inside a passing test searches, it does not fail: no shrinking line
    assert recs["test_find_is_no_failure"]["outcome"] == "passed"
    assert stdout.count("##pyverify-check shrinking") == 1
