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
from pathlib import Path
from typing import Any

import pytest

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


def failing_example(text: str) -> str:
    """Hypothesis's falsifying example (with its labelled draws) and the failed check."""
    elines = [ln[1:].rstrip() for ln in text.splitlines() if ln.startswith("E ")]
    width = min((len(ln) - len(ln.lstrip()) for ln in elines if ln.strip()), default=0)
    elines = [ln[width:] for ln in elines]
    start = next((i for i, ln in enumerate(elines) if "Falsifying example" in ln), None)
    body: list[str] = []
    if start is not None:
        for ln in elines[start:]:
            if ln.strip().startswith(("You can reproduce", "@reproduce_failure")):
                break
            if ln.strip():
                body.append(ln)
    head = elines[:start] if start is not None else elines
    err = next((ln.strip() for ln in head if ln.strip()), "")
    if len(body) > _MAX_LINES:
        body = [*body[: _MAX_LINES - 1], f"... ({len(body) - _MAX_LINES + 1} more lines)"]
    return "\n".join([*([f"failed: {err}"] if err else []), *body])


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
        if report.failed:
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
