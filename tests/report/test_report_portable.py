"""One report on every machine: ``verification.json`` holds verdicts, no measured figure.

The byte comparison regenerates the report under two CPU dispatches of the same
machine, in subprocesses: the oldest every library offers (torch
``ATEN_CPU_CAPABILITY=default``, MKL ``SSE4_2``, OpenBLAS ``Nehalem``) on one thread,
and the CPU's own best (``avx512`` or ``avx2``: no variable set, whatever the test's
environment says) on the default threads. The measured
errors differ between the two in their last digits; the verdicts may not.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyverify.dispatch import REFUSALS_ENV
from pyverify.report.measured import (
    measured_floats,
    merge_measured,
    split_crosscheck,
    split_measured,
)

#: The report's real phases (cross-check, G_LM diagnostics, live model) with the Lean
#: build, the property tests and the benchmarks off, and a third of the quick sweep (all
#: four kinds of case, every dtype): the smallest report that still writes error figures.
_DRIVER = """
import sys
from pathlib import Path

import torch

from pyverify.crosscheck import run_crosscheck
from pyverify.report import Phases, generate_report

out = Path(sys.argv[1])
(out.parent / (out.name + ".capability")).write_text(torch.backends.cpu.get_cpu_capability())
third = lambda quick, say: run_crosscheck(quick=quick, shard=(1, 3), progress=say)
sweep = Phases(crosscheck=third)
rc = generate_report(
    out, lean=False, tests=False, bench=False, quick=True, phases=sweep, progress=lambda m: None
)
sys.exit(rc)
"""

#: The oldest x86-64 dispatch of each library that computes a figure of the report, and
#: one thread (another summation order).
_OLDEST = {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}
_OLDEST |= {"OPENBLAS_CORETYPE": "Nehalem", "OMP_NUM_THREADS": "1"}
_OLDEST |= {"MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _start(out: Path, env_extra: dict[str, str]) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in _OLDEST and k != REFUSALS_ENV}
    env |= env_extra
    return subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _refused_by_oldest() -> dict[str, str]:
    """What torch refuses under the oldest dispatch on this CPU (:mod:`pyverify.dispatch`).

    On an AMX Xeon torch's bfloat16 SDPA raises under ``default`` (a fact of torch there):
    both reports then leave that dtype out, so that they still compare.
    """
    env = {k: v for k, v in os.environ.items() if k not in _OLDEST and k != REFUSALS_ENV}
    out = subprocess.run(
        [sys.executable, "-m", "pyverify.dispatch"], env=env | _OLDEST, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout)["refusals"]


def test_verification_json_is_byte_identical_across_cpu_dispatches(tmp_path):
    refused = _refused_by_oldest()
    same = {REFUSALS_ENV: json.dumps(refused)} if refused else {}
    for dtype, message in refused.items():
        print(f"torch refuses {dtype} under the oldest dispatch ({message}): left out of both")
    # "best": the CPU's own (no capability variable set)
    runs = {"default": _OLDEST | same, "best": same}
    t0 = time.perf_counter()
    procs = {name: _start(tmp_path / name, env) for name, env in runs.items()}  # both at once
    ran = {}
    for name, proc in procs.items():
        output, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"{name}: report exited {proc.returncode}\n{output[-3000:]}"
        ran[name] = (tmp_path / f"{name}.capability").read_text().lower()
    seconds = time.perf_counter() - t0
    assert ran["default"] == "default", f"torch ignored ATEN_CPU_CAPABILITY=default: {ran}"
    if ran["best"] not in ("avx2", "avx512"):
        pytest.skip(f"this CPU's torch capability is {ran['best']!r}: no second x86 dispatch")
    a, b = ((tmp_path / cap / "verification.json").read_bytes() for cap in runs)
    if a != b:
        diff = difflib.unified_diff(
            a.decode().splitlines(), b.decode().splitlines(), *runs, lineterm="", n=1
        )
        pytest.fail("verification.json differs between dispatches:\n" + "\n".join(list(diff)[:60]))
    # the error-figure path ran: the cross-check's errors are in the measurements
    ma, mb = (json.loads((tmp_path / cap / "measurements.json").read_text()) for cap in runs)
    rows = ma["crosscheck"]["rows"]
    assert rows and all(isinstance(r["max_rel"], float) for r in rows)
    assert json.loads(a)["crosscheck"]["left_out"].keys() == {f"cpu {d}" for d in refused}
    moved = sum(x != y for x, y in zip(rows, mb["crosscheck"]["rows"], strict=True))
    print(
        f"{seconds:.1f} s for both ({ran['best']} vs default); {moved}/{len(rows)} "
        "cross-check rows measured differently"
    )


# --------------------------------------------------------------------------- the split
def test_split_keeps_declared_floats_and_moves_the_rest():
    data = {
        "ok": True,
        "tolerance": 1e-12,
        "summary": {"rank": {"min": 2, "median": 3.5, "max": 5}, "absorb_tol": 1e-5},
        "per_head": {"rank": [[1, 2]], "residual": [[0.5, None]]},
        "rows": [{"id": "a", "err": 1e-16}, {"id": "b"}],
        "all_measured": {"x": 0.25},
        "perron_gap": None,
    }
    kept, measured = split_measured(data)
    assert kept == {
        "ok": True,
        "tolerance": 1e-12,
        "summary": {"rank": {"min": 2, "max": 5}, "absorb_tol": 1e-5},
        "per_head": {"rank": [[1, 2]]},
        "rows": [{"id": "a"}, {"id": "b"}],
        "perron_gap": None,
    }
    assert measured == {
        "summary": {"rank": {"median": 3.5}},
        "per_head": {"residual": [[0.5, None]]},
        "rows": [{"err": 1e-16}, {}],
        "all_measured": {"x": 0.25},
    }
    assert merge_measured(kept, measured) == data
    assert measured_floats(kept) == [] and measured_floats(data) == [
        ".summary.rank.median",
        ".per_head.residual[0][0]",
        ".rows[0].err",
        ".all_measured.x",
    ]


def test_crosscheck_split_moves_proved_tolerances_and_keeps_rules():
    """A proved bound is evaluated on this machine's operands (measured); the tolerance 0
    of a row without one (or of a crash) is a constant and stays."""
    row = {
        "case": "c", "kind": "random", "path": "kernels.uncached", "against": "reference.float64",
        "shape": [1, 1, 2, 2], "device": "cpu", "dtype": "bfloat16", "stage": "output",
        "max_rel": 1e-3, "median_rel": 5e-4, "tolerance": 4e-3, "passed": True, "theorems": [],
        "note": "min entry 0.1", "tolerance_rule": "proved: fp_head_output",
        "proved": 4e-3, "proved_ratio": 0.25,
    }  # fmt: skip
    unbounded = row | {
        "dtype": "float64", "tolerance": 0.0, "passed": False,
        "tolerance_rule": "no proved bound", "proved": None, "proved_ratio": None,
    }  # fmt: skip
    crash = unbounded | {"stage": "error", "tolerance_rule": None}
    summary = {
        "dtype": "bfloat16", "path": "kernels.uncached", "stage": "output",
        "tolerance": 4e-3, "tolerance_rule": "no proved bound; proved: fp_head_output",
    }  # fmt: skip
    cc = {"ok": False, "rows": [row, unbounded, crash], "summary": [summary]}
    kept, measured = split_crosscheck(cc)
    assert [r["tolerance"] for r in kept["rows"]] == [None, 0.0, 0.0]
    assert kept["summary"][0]["tolerance"] is None  # any proved case: measured
    assert kept["rows"][0]["tolerance_rule"] == row["tolerance_rule"] and not kept["ok"]
    assert measured_floats(kept) == []
    for k in ("max_rel", "median_rel", "note"):
        assert k not in kept["rows"][0] and measured["rows"][0][k] == row[k]
    assert measured["rows"][0]["tolerance"] == 4e-3 and measured["rows"][0]["case"] == "c"
    assert merge_measured(kept, measured) == cc


def test_report_files_split_verdicts_from_measurements(tmp_path, fake):
    """The fake report: no measured float in verification.json; the two files merge back."""
    from pyverify.report import generate_report

    out = tmp_path / "r"
    generate_report(out, quick=True, progress=lambda m: None, phases=fake.phases(), repo=tmp_path)
    kept = json.loads((out / "verification.json").read_text())
    measured = json.loads((out / "measurements.json").read_text())
    assert measured_floats(kept) == [], "measured figures in verification.json"
    assert measured["crosscheck"]["rows"] and measured["diagnostics"]["trained"]["summary"]
    assert len(measured["crosscheck"]["rows"]) == len(kept["crosscheck"]["rows"])
    full = merge_measured(kept, measured)
    assert all(isinstance(r["max_rel"], float) for r in full["crosscheck"]["rows"])
    index = (out / "index.md").read_text()
    assert "measurements.json" in index and "Measured on this machine" in index
