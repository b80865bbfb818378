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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyverify.conformance.collector import PREFIX
from pyverify.conformance.loading import ENV_DEVICES, ENV_DTYPES, ENV_IMPL, load
from pyverify.conformance.subject import Subject
from pyverify.conformance.sweep import SweepRow, run_sweep
from pyverify.errors import InputValueError
from pyverify.output import Progress
from pyverify.paths import repo_root
from pyverify.theorems import CHECK_IDS, SUITE_IDS

__all__ = ["CheckRun", "parse_ids", "run_check"]


@dataclass(frozen=True)
class CheckRun:
    """What one ``pyverify check`` measured (the verdict is derived from it)."""

    spec: str
    name: str
    subjects: tuple[str, ...]
    capabilities: tuple[str, ...]
    ids: tuple[str, ...]
    quick: bool
    tests: list[dict]
    sweep: list[SweepRow] | None
    seconds: float
    pytest_exit: int
    log_tail: str


def parse_ids(text: Sequence[str] | None) -> tuple[str, ...]:
    """``--ids a,b --ids c`` -> the IDs, in the spec's order (unknown ID: user error)."""
    if not text:
        return CHECK_IDS
    asked = {x.strip() for t in text for x in t.split(",") if x.strip()}
    for x in sorted(asked):
        if x in SUITE_IDS:
            raise InputValueError(f"--ids: {x!r} is about pyverify's own measurements, not an "
                                  "implementation (pyverify trace lists its tests)")  # fmt: skip
        if x not in CHECK_IDS:
            raise InputValueError(f"--ids: unknown theorem ID {x!r} (see pyverify trace)")
    return tuple(i for i in CHECK_IDS if i in asked)


def _pytest(subjects: list[Subject], spec: str, ids: tuple[str, ...], quick: bool,
            progress: Progress | None) -> tuple[list[dict], int, str]:  # fmt: skip
    root = repo_root()
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env[ENV_IMPL] = spec
    env[ENV_DEVICES] = ",".join(sorted({s.device for s in subjects}))
    env[ENV_DTYPES] = ",".join(sorted({s.dtype for s in subjects}))
    env["PYVERIFY_IDS"] = "" if ids == CHECK_IDS else ",".join(ids)
    env["HYPOTHESIS_PROFILE"] = "quick" if quick else "ci"
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), *filter(None, [env.get("PYTHONPATH")])])
    with tempfile.TemporaryDirectory(prefix="pyverify-check-") as tmp:
        out = Path(tmp) / "records.json"
        cmd = [sys.executable, "-m", "pytest", "property_tests", "-q", "-p", "no:cacheprovider",
               "-p", "no:xdist", "-p", "pyverify.conformance.collector",
               f"--pyverify-check={out}"]  # fmt: skip
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)  # fmt: skip
        tail: list[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(PREFIX):
                if progress:
                    progress("check: " + line[len(PREFIX) :].strip())
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
    import time

    t0 = time.perf_counter()
    subjects = load(spec, devices, dtypes)
    first = subjects[0]
    if progress:
        progress(f"check: {first.name}: {', '.join(map(str, subjects))}; "
                 f"capabilities {', '.join(sorted(first.capabilities))}")  # fmt: skip
    tests, code, tail = _pytest(subjects, spec, ids, quick, progress)
    sweep = None
    if ids == CHECK_IDS and "head" in first.capabilities:
        sweep = [r for s in subjects for r in run_sweep(s, quick=quick, progress=progress)]
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
    )
