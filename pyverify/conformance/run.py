"""``pyverify check``: the theorem suite and the cross-check sweep on one implementation.

The property tests run in a pytest subprocess with ``PYVERIFY_IMPL`` set (the same tests,
through the same :class:`~pyverify.conformance.subject.Subject`, as the shipped
implementations); the sweep runs here. :func:`verdicts` turns the saved records into one
verdict per theorem ID by a rule (:mod:`pyverify.conformance.verdict`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyverify.conformance.collector import PREFIX
from pyverify.conformance.loading import ENV_DEVICES, ENV_DTYPES, ENV_IMPL, load
from pyverify.conformance.subject import Subject
from pyverify.conformance.sweep import run_sweep
from pyverify.crosscheck.results import CrosscheckRow
from pyverify.crosscheck.runners import OFF_CPU
from pyverify.errors import InputValueError
from pyverify.output import Progress
from pyverify.paths import repo_root
from pyverify.theorems import CHECK_IDS, SHIPPED_ONLY_IDS, SUITE_IDS

__all__ = ["CheckRun", "parse_ids", "run_check"]


@dataclass(frozen=True)
class CheckRun:
    """What one ``pyverify check`` measured (the verdict is derived from it).

    ``sweep`` is None where the sweep did not run (``--ids``, or no ``head``); ``left_out``
    names what it left out and why (a subject off the CPU, stages not compared).
    """

    spec: str
    name: str
    subjects: tuple[str, ...]
    capabilities: tuple[str, ...]
    ids: tuple[str, ...]
    quick: bool
    tests: list[dict]
    sweep: list[CrosscheckRow] | None
    seconds: float
    pytest_exit: int
    log_tail: str
    left_out: dict[str, str] = field(default_factory=dict)


def parse_ids(text: Sequence[str] | None) -> tuple[str, ...]:
    """``--ids a,b --ids c`` -> the IDs, in the spec's order (None: every checkable ID).

    Raises
    ------
    pyverify.errors.InputValueError
        An unknown ID, an ID about the suite's own measurements (not an implementation),
        or ``--ids`` given with no ID in it (``--ids ''``).
    """
    if text is None:
        return CHECK_IDS
    asked = {x.strip() for t in text for x in t.split(",") if x.strip()}
    if not asked:
        raise InputValueError("--ids: no theorem ID given (leave --ids out to check every ID)")
    for x in sorted(asked):
        if x in SUITE_IDS:
            raise InputValueError(f"--ids: {x!r} is about pyverify's own measurements, not an "
                                  "implementation (pyverify trace lists its tests)")  # fmt: skip
        if x in SHIPPED_ONLY_IDS:
            raise InputValueError(f"--ids: {x!r} bounds the shipped implementations' own stages "
                                  "and arithmetic, which a checked implementation does not "
                                  "expose (pyverify trace lists its tests)")  # fmt: skip
        if x not in CHECK_IDS:
            raise InputValueError(f"--ids: unknown theorem ID {x!r} (see pyverify trace)")
    return tuple(i for i in CHECK_IDS if i in asked)


class _Progress:
    """Turns the collector's lines into progress lines with an ETA."""

    def __init__(self, say: Progress) -> None:
        self.say = say
        self.start: float | None = None

    def __call__(self, line: str) -> None:
        head, _, rest = line[len(PREFIX) :].strip().partition(" ")
        if head == "shrinking":
            self.say(f"check: {rest}: a failing example found; Hypothesis is shrinking it")
            return
        done, _, total = head.partition("/")
        now = time.perf_counter()
        if self.start is None:  # the first test's time is unknown: count from here
            self.start = now
            self.first = int(done)
        n = int(done) - self.first
        eta = ""
        if n > 0:
            left = (now - self.start) / n * (int(total) - int(done))
            eta = f", ETA {int(left) // 60}:{int(left) % 60:02d}"
        self.say(f"check: [{head}{eta}] {rest}")


def _pytest(subjects: list[Subject], spec: str, ids: tuple[str, ...], quick: bool,
            progress: Progress | None) -> tuple[list[dict], int, str]:  # fmt: skip
    """Run ``property_tests`` on ``spec`` in a subprocess; its records, exit status, log tail.

    The subprocess works in a temporary folder (Hypothesis's storage directory, pytest's
    files, no bytecode): nothing is written into the checkout or the working directory.
    """
    root = repo_root()
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env[ENV_IMPL] = spec
    env[ENV_DEVICES] = ",".join(sorted({s.device for s in subjects}))
    env[ENV_DTYPES] = ",".join(sorted({s.dtype for s in subjects}))
    env["PYVERIFY_IDS"] = "" if ids == CHECK_IDS else ",".join(ids)
    env["HYPOTHESIS_PROFILE"] = "quick" if quick else "ci"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), *filter(None, [env.get("PYTHONPATH")])])
    lines = _Progress(progress) if progress else None
    with tempfile.TemporaryDirectory(prefix="pyverify-check-") as tmp:
        out = Path(tmp) / "records.json"
        env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(Path(tmp) / "hypothesis")
        cmd = [sys.executable, "-m", "pytest", str(root / "property_tests"), f"--rootdir={root}",
               "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:benchmark",
               "-p", "pyverify.conformance.collector", f"--pyverify-check={out}"]  # fmt: skip
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)  # fmt: skip
        tail: list[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(PREFIX):
                if lines:
                    lines(line)
            elif line.strip():
                tail = [*tail[-40:], line.rstrip()]
        code = proc.wait()
        tests = json.loads(out.read_text("utf-8"))["tests"] if out.exists() else []
    return tests, code, "\n".join(tail)


def run_check(
    spec: str,
    *,
    ids: tuple[str, ...] = CHECK_IDS,
    devices: Sequence[str] | None = None,
    dtypes: Sequence[str] | None = None,
    quick: bool = False,
    progress: Progress | None = None,
) -> CheckRun:
    """Run the property tests (and, for all IDs, the sweep) on ``spec``.

    Raises
    ------
    pyverify.errors.UserError
        The implementation cannot be loaded or breaks the protocol (one line).
    """
    t0 = time.perf_counter()
    subjects = load(spec, devices, dtypes)
    first = subjects[0]
    if progress:
        progress(f"check: {first.name}: {', '.join(map(str, subjects))}; "
                 f"capabilities {', '.join(sorted(first.capabilities))}")  # fmt: skip
    tests, code, tail = _pytest(subjects, spec, ids, quick, progress)
    sweep: list[CrosscheckRow] | None = None
    left_out: dict[str, str] = {}
    if ids == CHECK_IDS and "head" in first.capabilities:
        sweep = []
        for s in subjects:
            if s.device != "cpu":  # no proved bound there: named, never run
                left_out[str(s)] = OFF_CPU
            else:
                rows, skipped = run_sweep(s, quick=quick, progress=progress)
                sweep += rows
                left_out |= skipped
        if progress:
            for key, why in sorted(left_out.items()):
                progress(f"check: sweep: {key} left out ({why})")
    return CheckRun(
        spec=spec,
        name=first.name,
        subjects=tuple(map(str, subjects)),
        capabilities=tuple(sorted(first.capabilities)),
        ids=ids,
        quick=quick,
        tests=[t for t in tests if t.get("implementation") == first.name],
        sweep=sweep,
        seconds=time.perf_counter() - t0,
        pytest_exit=code,
        log_tail=tail,
        left_out=left_out,
    )
