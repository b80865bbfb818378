"""Pytest plugin: which theorem and which implementation each test checks, and how it went.

Registered by ``property_tests/conftest.py``
(``pytest_plugins = ["pyverify.theorems.pytest_plugin"]``) or with
``-p pyverify.theorems.pytest_plugin``. A test is attributed to

* theorem IDs: every ``@pytest.mark.theorem("id", ...)`` on it (module, class or function);
* an implementation: the ``impl`` parameter (an object with ``name``, ``device`` and
  ``dtype`` attributes), or else ``@pytest.mark.implementation("reference", device=...,
  dtype=...)`` (device defaults to ``"cpu"``, dtype to ``"exact"``) for checks that run
  no implementation object (exact rational or symbolic arithmetic).

Options
-------
``--pyverify-results PATH``
    At the end of the session write, deterministically (sorted by node ID, no times)::

        {"schema": 1, "tests": [{"nodeid": ..., "theorems": [...], "implementation": ...,
                                 "device": ..., "dtype": ..., "outcome": ...}, ...]}

    ``outcome`` is ``"passed"``, ``"failed"``, ``"skipped"`` or ``"error"`` (setup or
    teardown failure, or a collection error). Works under pytest-xdist: workers attach the
    attribution to their reports and only the controller writes the file.
``--pyverify-collect PATH``
    After collection write ``{"schema": 1, "tests": [...]}`` with the same fields minus
    ``outcome`` (used with ``--collect-only`` by :func:`collect_matrix` and ``pyverify trace``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "RESULTS_SCHEMA",
    "CollectionError",
    "ResultsRecorder",
    "attribution",
    "collect_matrix",
    "pytest_addoption",
    "pytest_collection_finish",
    "pytest_configure",
    "pytest_itemcollected",
]

RESULTS_SCHEMA = 1
"""Version of the JSON written by ``--pyverify-results`` and ``--pyverify-collect``."""

_PROP = "pyverify"
_RECORDER = "pyverify-results-recorder"


class CollectionError(RuntimeError):
    """Collecting the tests for the trace matrix failed (e.g. a test file does not import)."""


def attribution(item: pytest.Item) -> dict[str, Any]:
    """Theorem IDs and implementation of a collected test.

    Parameters
    ----------
    item : pytest.Item
        A collected test.

    Returns
    -------
    dict
        ``theorems`` (sorted list of IDs), ``implementation``, ``device`` and ``dtype``
        (strings, or ``None`` when the test names no implementation).
    """
    ids: set[str] = set()
    for mark in item.iter_markers("theorem"):
        ids.update(str(a) for a in mark.args)
    impl_name = device = dtype = None
    callspec = getattr(item, "callspec", None)
    impl = callspec.params.get("impl") if callspec is not None else None
    if impl is not None:
        impl_name = str(impl.name)
        device = str(impl.device)
        dtype = str(impl.dtype)
    else:
        mark = item.get_closest_marker("implementation")
        if mark is not None and mark.args:
            impl_name = str(mark.args[0])
            device = str(mark.kwargs.get("device", "cpu"))
            dtype = str(mark.kwargs.get("dtype", "exact"))
    return {
        "theorems": sorted(ids),
        "implementation": impl_name,
        "device": device,
        "dtype": dtype,
    }


# --------------------------------------------------------------------------- hooks
def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--pyverify-results`` and ``--pyverify-collect``."""
    group = parser.getgroup("pyverify", "pyverify theorem traceability")
    group.addoption(
        "--pyverify-results",
        metavar="PATH",
        default=None,
        help="write per-test theorem IDs, implementation and outcome as JSON to PATH",
    )
    group.addoption(
        "--pyverify-collect",
        metavar="PATH",
        default=None,
        help="after collection, write per-test theorem IDs and implementation as JSON to PATH",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the markers the plugin reads; start recording for ``--pyverify-results``."""
    config.addinivalue_line("markers", "theorem(*ids): the theorem IDs a property test checks")
    config.addinivalue_line(
        "markers",
        "implementation(name, device='cpu', dtype='exact'): the implementation a test "
        "without an `impl` parameter checks",
    )
    path = config.getoption("pyverify_results", None)
    if path and not _is_worker(config) and not config.pluginmanager.has_plugin(_RECORDER):
        config.pluginmanager.register(ResultsRecorder(Path(path)), _RECORDER)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Attach the attribution to the item (it travels with its reports, also under xdist)."""
    item.user_properties.append((_PROP, json.dumps(attribution(item), sort_keys=True)))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Write the collected tests' attribution for ``--pyverify-collect``."""
    config = session.config
    path = config.getoption("pyverify_collect", None)
    if not path or _is_worker(config):
        return
    rows = [{"nodeid": it.nodeid, **attribution(it)} for it in session.items]
    Path(path).write_text(_dump(rows), encoding="utf-8")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _attr_from_report(report: pytest.TestReport) -> dict[str, Any]:
    for key, value in getattr(report, "user_properties", ()):
        if key == _PROP:
            return json.loads(value)
    return {"theorems": [], "implementation": None, "device": None, "dtype": None}


def _merge_outcome(previous: str | None, report: pytest.TestReport) -> str | None:
    """Fold the setup/call/teardown reports of one test into one outcome."""
    if report.when == "setup":
        if report.failed:
            return "error"
        if report.skipped:
            return "skipped"
        return previous
    if report.when == "call":
        if report.failed:
            return "failed"
        if report.skipped:  # includes xfail
            return "skipped"
        return "passed"
    # teardown: an error there spoils a passed (or skipped) test
    if report.failed and previous in (None, "passed", "skipped"):
        return "error"
    return previous


def _dump(tests: Iterable[dict[str, Any]]) -> str:
    rows = sorted(tests, key=lambda r: r["nodeid"])
    return json.dumps({"schema": RESULTS_SCHEMA, "tests": rows}, indent=2, sort_keys=True) + "\n"


class ResultsRecorder:
    """Collects test reports in the controlling process and writes ``--pyverify-results``.

    Parameters
    ----------
    path : pathlib.Path
        Where to write the JSON at the end of the session.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.results: dict[str, dict[str, Any]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fold each phase's report into the test's record."""
        rec = self.results.get(report.nodeid)
        if rec is None:
            rec = {"nodeid": report.nodeid, **_attr_from_report(report), "outcome": None}
            self.results[report.nodeid] = rec
        rec["outcome"] = _merge_outcome(rec["outcome"], report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Record a collection error (a test file that does not import) as ``error``."""
        if report.failed:
            self.results[report.nodeid] = {
                "nodeid": report.nodeid,
                "theorems": [],
                "implementation": None,
                "device": None,
                "dtype": None,
                "outcome": "error",
            }

    def pytest_sessionfinish(self) -> None:
        """Write the JSON file."""
        rows = [{**rec, "outcome": rec["outcome"] or "error"} for rec in self.results.values()]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(_dump(rows), encoding="utf-8")


# --------------------------------------------------------------------------- collection
def collect_matrix(
    paths: Sequence[str | os.PathLike[str]] = ("property_tests",),
    rootdir: str | os.PathLike[str] | None = None,
) -> list[dict[str, Any]]:
    """Collect tests (no run) and return their attribution.

    Runs ``python -m pytest --collect-only`` in a subprocess (so that the caller's
    interpreter, possibly itself a pytest session, is not touched).

    Parameters
    ----------
    paths : sequence of path-like, default ("property_tests",)
        Test paths, relative to ``rootdir``.
    rootdir : path-like, optional
        Working directory of the collection (the repository root); default the
        current directory.

    Returns
    -------
    list of dict
        One dict per test: ``nodeid``, ``theorems``, ``implementation``, ``device``,
        ``dtype``; sorted by ``nodeid``.

    Raises
    ------
    CollectionError
        If collection fails (the pytest output is in the message).
    """
    cwd = Path(rootdir) if rootdir is not None else Path.cwd()
    with tempfile.TemporaryDirectory(prefix="pyverify-collect-") as tmp:
        out = Path(tmp) / "collect.json"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-p",
            "pyverify.theorems.pytest_plugin",
            f"--pyverify-collect={out}",
            *(str(p) for p in paths),
        ]
        env = dict(os.environ)
        env.pop("PYTEST_ADDOPTS", None)
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode not in (0, 5) or not out.exists():
            tail = (proc.stdout + proc.stderr)[-4000:]
            raise CollectionError(
                f"collecting {', '.join(map(str, paths))} failed (pytest exit {proc.returncode}):"
                f"\n{tail}"
            )
        data = json.loads(out.read_text(encoding="utf-8"))
    return list(data["tests"])
