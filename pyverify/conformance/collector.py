"""Pytest plugin of ``pyverify check``: each test's outcome, skip reason and failing example.

Loaded with ``-p pyverify.conformance.collector --pyverify-check PATH`` (next to the
theorem plugin, whose attribution it reads from the report). It prints one line
``##pyverify-check DONE/TOTAL OUTCOME NODEID`` per finished test on stdout (the parent
turns it into progress) and writes at the end, sorted by node id::

    {"tests": [{"nodeid", "theorems", "implementation", "device", "dtype",
                "outcome", "reason", "example"}, ...]}

``reason``: the skip reason (a ``not applicable:`` one names the capability or method);
``example``: for a failure, Hypothesis's (shrunk, labelled) falsifying example and the
assertion that failed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pyverify.conformance.subject import NA_PREFIX

PREFIX = "##pyverify-check"
_MAX_LINES = 60


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--pyverify-check PATH``."""
    parser.getgroup("pyverify").addoption(
        "--pyverify-check", metavar="PATH", default=None, help="write pyverify check's records"
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the recorder when ``--pyverify-check`` is given."""
    path = config.getoption("pyverify_check", None)
    if path:
        config.pluginmanager.register(Recorder(Path(path)), "pyverify-check-recorder")


_PREFIX = re.compile(r"^(?:E |\s*\| ?)")


def _plain(line: str) -> str:
    """A report line without pytest's ``E`` and an exception group's ``|`` prefixes."""
    while True:
        m = _PREFIX.match(line)
        if not m:
            return line.rstrip()
        line = line[m.end() :]


def failing_example(text: str) -> str:
    """Hypothesis's falsifying example (with its labelled draws) and the failed check.

    With several distinct failures (an exception group) the first one is taken.
    """
    lines = [_plain(ln) for ln in text.splitlines()]
    marks = ("Falsifying example", "Failing test case")
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith(marks)), None)
    body: list[str] = []
    if start is not None:
        for ln in lines[start:]:
            if ln.strip().startswith(("You can reproduce", "@reproduce_failure", "+---")):
                break
            if ln.strip():
                body.append(ln)
    head = lines[:start] if start is not None else lines
    err = next(
        (
            ln.strip()
            for ln in head
            if re.match(r"\s*(\w*(Error|Exception)\b|assert\b|Failed\b)", ln)
        ),
        "",
    )
    raw = text.splitlines()
    first_e = next((i for i, ln in enumerate(raw) if ln.startswith("E ")), len(raw))
    src = next((ln[1:].strip() for ln in reversed(raw[:first_e]) if ln.startswith(">")), "")
    width = min((len(ln) - len(ln.lstrip()) for ln in body), default=0)
    body = [ln[width:] for ln in body]
    if len(body) > _MAX_LINES:
        body = [*body[: _MAX_LINES - 1], f"... ({len(body) - _MAX_LINES + 1} more lines)"]
    text = "\n".join(
        [*([f"at: {src[:300]}"] if src else []), *([f"failed: {err[:300]}"] if err else []), *body]
    )
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)  # object addresses differ per run


class Recorder:
    """Folds setup/call/teardown reports into one record per test."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[str, dict[str, Any]] = {}
        self.total = 0

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Remember how many tests will run."""
        self.total = len(session.items)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Record one phase; print the progress line after teardown."""
        rec = self.records.setdefault(report.nodeid, self._new(report))
        if report.failed and "hypothesis.errors.Unsatisfiable" in report.longreprtext:
            rec["outcome"] = "skipped"  # every drawn example was outside the domain
            rec["reason"] = (
                f"{NA_PREFIX} every drawn example was outside the implementation's domain"
            )
        elif report.failed:
            rec["outcome"] = "failed" if report.when == "call" else "error"
            rec["example"] = failing_example(report.longreprtext)
        elif report.skipped and rec["outcome"] is None:
            rec["outcome"] = "skipped"
            lr = report.longrepr
            rec["reason"] = str(lr[2]).removeprefix("Skipped: ") if isinstance(lr, tuple) else ""
        elif report.when == "call" and rec["outcome"] is None:
            rec["outcome"] = "passed"
        if report.when == "teardown":
            done = sum(1 for r in self.records.values() if r["outcome"] is not None)
            print(f"\n{PREFIX} {done}/{self.total} {rec['outcome']} {report.nodeid}", flush=True)

    @staticmethod
    def _new(report: pytest.TestReport) -> dict[str, Any]:
        att: dict[str, Any] = {"theorems": [], "implementation": None}
        for key, value in getattr(report, "user_properties", ()):
            if key == "pyverify":
                att = json.loads(value)
        return {"nodeid": report.nodeid, **att, "outcome": None, "reason": "", "example": ""}

    def pytest_sessionfinish(self) -> None:
        """Write the records."""
        rows = sorted(self.records.values(), key=lambda r: r["nodeid"])
        for r in rows:
            r["outcome"] = r["outcome"] or "error"
        self.path.write_text(json.dumps({"tests": rows}, indent=1, sort_keys=True), "utf-8")
