"""Pytest plugin of ``pyverify check``: the results recorder plus what a verdict shows.

Loaded with ``-p pyverify.conformance.collector --pyverify-check PATH`` (next to the
theorem plugin, :mod:`pyverify.theorems.pytest_plugin`). :class:`Recorder` is that
plugin's :class:`~pyverify.theorems.pytest_plugin.ResultsRecorder` (attribution and one
outcome per test, written as ``{"schema", "tests": [...]}``) with two fields more per test:

``reason``
    the skip reason (a ``not applicable:`` one names the capability or method);
``example``
    for a failure: where it failed and what (pytest's own representation of the
    exception, :func:`failure_text`), then Hypothesis's shrunk, labelled example;
``violation``
    for a failure raised at the protocol boundary
    (:class:`~pyverify.conformance.subject.ProtocolViolation`), its one line.

A test whose every drawn example was rejected (``hypothesis.errors.Unsatisfiable``: all
outside the implementation's domain) is recorded as skipped, not applicable.

On stdout it prints, for the parent to turn into progress lines::

    ##pyverify-check DONE/TOTAL OUTCOME NODEID     (each finished test)
    ##pyverify-check shrinking NODEID              (a test's first failing example)
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pyverify.conformance.subject import NA_PREFIX, ProtocolViolation
from pyverify.theorems.pytest_plugin import ResultsRecorder

__all__ = ["PREFIX", "Recorder", "failure_text"]

PREFIX = "##pyverify-check"
_FAILURE = "pyverify-failure"
#: The fields the recorder adds to the results recorder's (see the module docstring).
_EXTRA = ("reason", "example", "violation")
_MAX_LINES = 60
_MAX_MESSAGE_LINES = 12
_MAX_LINE = 600


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


def _clip(line: str) -> str:
    return line if len(line) <= _MAX_LINE else line[:_MAX_LINE] + " ..."


def _unaddressed(text: str) -> str:
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)  # object addresses differ per run


def _first_leaf(exc: BaseException) -> BaseException:
    """The first exception of a (nested) exception group; ``exc`` itself otherwise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def failure_text(excinfo: pytest.ExceptionInfo[BaseException], test_file: Path, root: Path) -> str:
    """Where a test failed, what failed (with its values), and Hypothesis's example.

    * ``at:`` the statement of the test file that raised (or called what raised), from the
      exception's traceback, with its line number;
    * ``failed:`` pytest's representation of the exception (``ExceptionInfo.exconly``):
      for an ``assert``, the assertion with its values and pytest's ``where`` lines;
    * then the notes Hypothesis attached: the falsifying example with its labelled draws.

    Of several distinct failures (an exception group) the first is shown.
    """
    exc = _first_leaf(excinfo.value)
    info = excinfo if exc is excinfo.value else pytest.ExceptionInfo.from_exception(exc)
    notes = [str(n) for n in getattr(exc, "__notes__", ())]
    message = info.exconly(tryshort=True)
    for note in reversed(notes):  # exconly ends with the notes (Python >= 3.11)
        message = message.removesuffix("\n" + note)
    lines = message.splitlines() or [type(exc).__name__]
    if len(lines) > _MAX_MESSAGE_LINES:
        extra = len(lines) - _MAX_MESSAGE_LINES + 1
        lines = [*lines[: _MAX_MESSAGE_LINES - 1], f"... ({extra} more lines)"]
    out = []
    entries = [e for e in info.traceback if Path(e.path) == test_file] or list(info.traceback)
    if entries:
        e = entries[-1]
        try:
            where = Path(e.path).resolve().relative_to(root.resolve())
        except ValueError:
            where = Path(e.path)
        stmt = " ".join(ln.strip() for ln in str(e.statement).splitlines())
        out.append(_clip(f"at: {where}:{e.lineno + 1}: {stmt}"))
    out.append(_clip(f"failed: {lines[0]}"))
    out += [_clip(f"  {ln}") for ln in lines[1:]]
    for note in notes:
        for ln in note.splitlines():
            if ln.strip().startswith(("You can reproduce", "@reproduce_failure")):
                break
            out.append(_clip(ln))
    if len(out) > _MAX_LINES:
        out = [*out[: _MAX_LINES - 1], f"... ({len(out) - _MAX_LINES + 1} more lines)"]
    return _unaddressed("\n".join(ln.rstrip() for ln in out).rstrip())


class Recorder(ResultsRecorder):
    """The results recorder plus skip reasons, failures and progress lines."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.config: pytest.Config | None = None
        self.total = 0
        self.current: str | None = None
        self.shrinking: set[str] = set()
        self._observing = _observe_failures(self._on_failing_example)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Remember how many tests will run."""
        self.config = session.config
        self.total = len(session.items)

    def _say(self, line: str) -> None:
        """Print ``line`` on the real stdout, also while pytest captures a test's output."""
        capman = self.config.pluginmanager.getplugin("capturemanager") if self.config else None
        if capman is None:
            print(f"\n{PREFIX} {line}", flush=True)
            return
        with capman.global_and_fixture_disabled():
            print(f"\n{PREFIX} {line}", flush=True)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        """Remember the running test (for the shrinking line)."""
        self.current = nodeid

    def _on_failing_example(self, test: str) -> None:
        # ``test``: the nodeid of a @given test; a ``find()`` inside a test (searching for
        # an example that satisfies a condition: no failure) reports its own name
        here = self.current
        if here and here == test and here not in self.shrinking:
            self.shrinking.add(here)
            self._say(f"shrinking {here}")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        """Attach what failed to the report, read from the exception itself."""
        outcome = yield
        report = outcome.get_result()
        if report.failed and call.excinfo is not None:
            from hypothesis.errors import Unsatisfiable

            unsat = call.excinfo.errisinstance(Unsatisfiable)
            text = "" if unsat else failure_text(call.excinfo, item.path, item.config.rootpath)
            leaf = _first_leaf(call.excinfo.value)
            broke = str(leaf).splitlines()[0] if isinstance(leaf, ProtocolViolation) else ""
            report.user_properties.append((_FAILURE, json.dumps([unsat, text, broke])))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fold one phase (the base class), add reason and example; progress at teardown."""
        super().pytest_runtest_logreport(report)
        rec = self.results[report.nodeid]
        for key in _EXTRA:
            rec.setdefault(key, "")
        failure = next((json.loads(v) for k, v in report.user_properties if k == _FAILURE), None)
        if failure is not None and failure[0]:  # every drawn example was outside the domain
            rec["outcome"] = "skipped"
            rec["reason"] = (
                f"{NA_PREFIX} every drawn example was outside the implementation's domain"
            )
        elif report.failed:
            rec["example"] = failure[1] if failure else report.longreprtext
            rec["violation"] = failure[2] if failure else ""
        elif report.skipped and not rec["reason"]:
            lr = report.longrepr
            rec["reason"] = str(lr[2]).removeprefix("Skipped: ") if isinstance(lr, tuple) else ""
        if report.when == "teardown":
            done = sum(1 for r in self.results.values() if r["outcome"] is not None)
            self._say(f"{done}/{self.total} {rec['outcome']} {report.nodeid}")

    def pytest_sessionfinish(self) -> None:
        """Write the records (the base class) and stop observing Hypothesis."""
        if self._observing is not None:
            self._observing()
        for rec in self.results.values():
            for key in _EXTRA:
                rec.setdefault(key, "")
        super().pytest_sessionfinish()


def _observe_failures(on_failure: Any) -> Any:
    """Call ``on_failure(test)`` on every failing Hypothesis test case; returns the undo.

    Uses Hypothesis's observability callbacks, with its coverage collection off (it
    would trace every line of every example). None where this Hypothesis lacks them.
    """
    try:
        from hypothesis.internal import observability as obs
    except ImportError:  # pragma: no cover (older Hypothesis)
        return None
    add = getattr(obs, "add_observability_callback", None)
    remove = getattr(obs, "remove_observability_callback", None)
    if add is None or remove is None:  # pragma: no cover
        return None
    obs.OBSERVABILITY_COLLECT_COVERAGE = False

    def callback(observation: Any) -> None:
        if getattr(observation, "type", None) == "test_case" and observation.status == "failed":
            on_failure(str(observation.property))

    add(callback)
    return lambda: remove(callback)
