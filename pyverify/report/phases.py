"""The report's phases, each a function that can be replaced (for tests) or run alone.

Every phase returns a plain dict with a ``status`` (``passed``, ``failed``,
``error`` or ``skipped``); the cross-check phase returns a
:class:`pyverify.crosscheck.CrosscheckResult`. Nothing here writes into the
report folder: :func:`pyverify.report.generate_report` does that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path
from typing import Any

from pyverify.output import Progress
from pyverify.report.aggregate import aggregate_tests

__all__ = [
    "PROPERTY_TESTS_ARGS",
    "bench_phase",
    "crosscheck_phase",
    "diagnostics_phase",
    "lean_phase",
    "model_phase",
    "tests_phase",
]


#: The property-test run (plus ``--pyverify-results FILE``), from the repository root.
PROPERTY_TESTS_ARGS: tuple[str, ...] = tuple(
    "-m pytest property_tests -q -n 2 -p no:cacheprovider".split()
)


def lean_phase(repo: Path, progress: Progress) -> dict[str, Any]:
    """Build and audit the Lean library, then read the theorem manifest.

    Returns
    -------
    dict
        ``status`` (``passed``: built and audited; ``failed``; ``error``: no
        toolchain or the build could not run), ``toolchain``, ``version``,
        ``modules`` (``name``, ``rel``, ``status``, ``seconds``), ``findings``,
        ``manifest`` (or None), ``id_problems``, ``seconds``, ``error``.
    """
    from pyverify.lean import manifest as mf
    from pyverify.lean.build import build
    from pyverify.lean.install import find_toolchain
    from pyverify.lean.project import load_package

    project = repo / "lean"
    try:
        load_package(project)  # a broken project fails here, before any toolchain install
        tc = find_toolchain("auto", progress=progress)
        result = build(project, tc, progress=progress)
    except Exception as exc:  # no toolchain, no network, a broken project: report it
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}", "manifest": None}
    out: dict[str, Any] = {
        "status": "passed" if result.ok else "failed",
        "toolchain": result.toolchain,
        "version": tc.version(),
        "modules": [
            {"name": m.name, "rel": m.rel, "status": m.status, "seconds": m.seconds}
            for m in result.modules
        ],
        "findings": [f.format() for f in result.all_findings()],
        "manifest": None,
        "id_problems": [],
        "seconds": result.seconds,
        "error": None,
    }
    if result.ok:
        try:
            progress("lean: writing the theorem manifest")
            out["manifest"] = mf.manifest(project, tc, progress)
            out["id_problems"] = mf.id_problems(mf.parse_theorems(load_package(project)))
        except Exception as exc:
            out["status"] = "error"
            out["error"] = f"manifest: {type(exc).__name__}: {exc}"
    return out


def tests_phase(repo: Path, progress: Progress) -> dict[str, Any]:
    """Run the property tests in a subprocess and aggregate the plugin's results.

    ``python -m pytest property_tests -q -n 2 -p no:cacheprovider
    --pyverify-results FILE`` with ``HYPOTHESIS_PROFILE=ci`` (derandomised), from
    the repository root; every output line is passed to ``progress``.

    Returns
    -------
    dict
        ``status`` (``passed``, ``failed`` or ``error``), ``returncode``,
        ``aggregate`` (:func:`aggregate_tests`), ``results`` (the raw JSON),
        ``output_tail`` (last lines of pytest's output).
    """
    if not (repo / "property_tests").is_dir():
        return {"status": "error", "error": f"no property_tests/ folder in {repo}"}
    env = dict(os.environ)
    env["HYPOTHESIS_PROFILE"] = "ci"
    env.pop("PYTEST_ADDOPTS", None)
    tail: deque[str] = deque(maxlen=80)
    with tempfile.TemporaryDirectory(prefix="pyverify-report-") as tmp:
        results = Path(tmp) / "results.json"
        cmd = [sys.executable, *PROPERTY_TESTS_ARGS, f"--pyverify-results={results}"]
        progress("tests: " + " ".join(["python", *cmd[1:]]))
        proc = subprocess.Popen(
            cmd,
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            tail.append(line)
            if line.strip():
                progress(f"  pytest | {line}")
        rc = proc.wait()
        if not results.is_file():
            return {
                "status": "error",
                "returncode": rc,
                "error": f"pytest exited with {rc} and wrote no results",
                "output_tail": list(tail),
            }
        data = json.loads(results.read_text(encoding="utf-8"))
    agg = aggregate_tests(data)
    bad = agg["totals"]["failed"] + agg["totals"]["error"]
    status = "passed" if rc == 0 and bad == 0 and agg["totals"]["total"] > 0 else "failed"
    return {
        "status": status,
        "returncode": rc,
        "aggregate": agg,
        "results": data,
        "output_tail": list(tail),
    }


def crosscheck_phase(quick: bool, progress: Progress) -> Any:
    """The cross-check sweep on every available device and dtype.

    Returns
    -------
    pyverify.crosscheck.CrosscheckResult
        The sweep's result.
    """
    from pyverify.crosscheck import run_crosscheck

    return run_crosscheck(quick=quick, progress=progress)


def diagnostics_phase(progress: Progress) -> dict[str, dict[str, Any]]:
    """Diagnostics of the three released ``G_LM`` files (name -> dict).

    A missing or unreadable file gives ``{"status": "error", "error": ...}`` for
    that name; otherwise the :func:`pyverify.diagnose.run_diagnose` dict with
    ``status`` ``passed``.
    """
    from pyverify.diagnose import run_diagnose
    from pyverify.reference import KNOWN_FILES

    out: dict[str, dict[str, Any]] = {}
    for name in KNOWN_FILES:
        try:
            d = run_diagnose(name, progress)
            d["status"] = "passed"
        except (OSError, ValueError) as exc:
            d = {"status": "error", "name": name, "error": f"{type(exc).__name__}: {exc}"}
            progress(f"diagnose: {name}: {d['error']}")
        out[name] = d
    return out


def decoder_step_phase(progress: Progress) -> list[dict[str, Any]]:
    """The decoder step's proved / measured (:mod:`pyverify.testing.decoder_tightness`)."""
    from pyverify.testing.decoder_tightness import CASES, decoder_step_tightness

    progress(f"decoder step: the composed bound against mpmath on {CASES} seeded decoders")
    return decoder_step_tightness()


def model_phase(progress: Progress) -> dict[str, Any]:
    """Order parameter and ``eps_G`` of a small live reference model (seed 0)."""
    from pyverify.diagnose import run_model_diagnose

    d = run_model_diagnose(seed=0, progress=progress)
    d["status"] = "passed"
    return d


def bench_phase(progress: Progress) -> dict[str, Any]:
    """Quick benchmarks on CUDA when available, else CPU (timings: not reproducible)."""
    import torch

    from pyverify.bench import run_bench
    from pyverify.report.bench_load import settle_load

    device = "cuda" if torch.cuda.is_available() else "cpu"
    settle_load(progress)  # the property tests just ran on every core
    res = run_bench(device=device, quick=True, progress=progress)
    res["status"] = "passed"
    return res
