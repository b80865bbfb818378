"""The report's data: each phase's result as JSON, split into verdicts and measured figures."""

from __future__ import annotations

import os
import platform
import sys
from datetime import UTC, datetime
from typing import Any

from pyverify.report.aggregate import theorem_rows
from pyverify.report.measured import (
    merge_measured,
    split_crosscheck,
    split_measured,
)
from pyverify.report.serialize import round_floats

__all__ = [
    "CROSSCHECK_SIG",
    "environment_data",
    "report_data",
    "split_report",
    "verification_data",
]

#: Significant digits of cross-check errors in measurements.json (3 keep the magnitude).
CROSSCHECK_SIG = 3


def _lean_data(lean: dict[str, Any]) -> dict[str, Any]:
    """The build's verdicts (the toolchain and its version string: environment.json)."""
    man = lean.get("manifest") or {}
    return {
        "status": lean.get("status"),
        "modules": [
            {"name": m["name"], "ok": m["status"] in ("built", "cached")}
            for m in lean.get("modules") or []
        ],
        "findings": list(lean.get("findings") or []),
        "id_problems": list(lean.get("id_problems") or []),
        "theorems": len(man.get("theorems") or []),
        "error": lean.get("error"),
    }


def _tests_data(tests: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": tests.get("status"),
        "returncode": tests.get("returncode"),
        "aggregate": tests.get("aggregate"),
        "error": tests.get("error"),
    }


def _crosscheck_data(cc: Any) -> dict[str, Any]:
    from pyverify.crosscheck import CrosscheckResult, summarize

    if not isinstance(cc, CrosscheckResult):
        return {
            "status": "error",
            "error": (cc or {}).get("error"),
            "ok": False,
            "rows": [],
            "summary": [],
            "cases": [],
            "devices": [],
            "dtypes": [],
            "quick": None,
        }
    d = cc.to_dict()
    d["summary"] = summarize(cc)
    d["status"] = "passed" if cc.ok else "failed"
    return round_floats(d, CROSSCHECK_SIG)


def _diag_data(name: str, d: dict[str, Any]) -> dict[str, Any]:
    if d.get("status") == "error":
        return {"status": "error", "name": name, "error": d.get("error")}
    per_head = dict(d.get("per_head") or {})
    if name != "trained":
        per_head.pop("singular_values", None)
    prov = d.get("provenance") or {}
    return {
        "status": d.get("status", "passed"),
        "name": name,
        "provenance": {k: prov.get(k) for k in ("file", "sha256", "source")},
        "shape": d.get("shape"),
        "summary": d.get("summary"),
        "per_layer": d.get("per_layer"),
        "per_head": per_head,
    }


def _decoder_step_status(ran: bool, rows: list[dict[str, Any]]) -> str:
    """``error`` (the phase failed), ``skipped`` (no row), ``failed`` (a case over its bound)."""
    if not ran:
        return "error"
    if not rows:
        return "skipped"
    return "failed" if any(r.get("violations", 0) for r in rows) else "passed"


def report_data(
    *,
    lean: dict[str, Any],
    tests: dict[str, Any],
    crosscheck: Any,
    diagnostics: dict[str, dict[str, Any]],
    model: dict[str, Any],
    bench: dict[str, Any],
    options: dict[str, Any],
    decoder_step: list[dict[str, Any]] | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything the report shows: verdicts and measured figures (no times, hosts or paths).

    :func:`split_report` divides it into ``verification.json`` and
    ``measurements.json``; ``index.md`` and the plots read it whole.

    Parameters
    ----------
    lean, tests, crosscheck, diagnostics, model, bench : phase results
        As :class:`Phases` return them.
    options : dict
        The run's options (``lean``, ``tests``, ``bench``, ``quick``).
    decoder_step : list of dict, optional
        The decoder step's tightness rows (:mod:`pyverify.testing.decoder_tightness`),
        kept as ``crosscheck["decoder_step"]``; a phase error (a dict) fails the report.

    Returns
    -------
    dict
        Rounded (floats to 6 significant digits, cross-check errors to 3), JSON-ready.
    """
    cc = _crosscheck_data(crosscheck)
    dec_ok = not isinstance(decoder_step, dict)
    cc["decoder_step"] = list(decoder_step) if dec_ok and decoder_step else []
    if not dec_ok:
        cc["decoder_step_error"] = decoder_step.get("error")  # type: ignore[union-attr]
    diag = {n: _diag_data(n, d) for n, d in diagnostics.items()}
    rows = theorem_rows(lean, tests, cc["rows"])
    bench_status = bench.get("status", "skipped")
    status = {
        "lean": lean.get("status", "skipped"),
        "tests": tests.get("status", "skipped"),
        "crosscheck": cc["status"],
        "diagnostics": (
            "passed" if diag and all(d["status"] == "passed" for d in diag.values()) else "error"
        ),
        "model_diagnostics": model.get("status", "error") if model else "skipped",
        "bench": {"passed": "ran", "refused": "ran"}.get(bench_status, bench_status),
        "decoder_step": _decoder_step_status(dec_ok, cc["decoder_step"]),
    }
    ok = (
        status["lean"] in ("passed", "skipped")
        and status["tests"] in ("passed", "skipped")
        and status["crosscheck"] == "passed"
        and status["diagnostics"] == "passed"
        and status["model_diagnostics"] in ("passed", "skipped")
        and status["bench"] != "error"
        and all(r["ok"] for r in rows)
        and status["decoder_step"] in ("passed", "skipped")
    )
    model_data = {k: v for k, v in (model or {}).items() if k != "status"}
    data = {
        "schema": 2,
        "ok": bool(ok),
        "options": dict(options),
        "status": status,
        "theorems": rows,
        "lean": _lean_data(lean),
        "property_tests": _tests_data(tests),
        "crosscheck": cc,
        "diagnostics": diag,
        "model_diagnostics": model_data,
        # whether this run's figures were written (not under load) is a fact of the
        # machine's state, not a verdict: index.md says it
        "benchmarks": {
            "status": status["bench"],
            "note": "timings are not reproducible: see benchmarks.json and index.md",
        },
    }
    return round_floats(data)


def split_report(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(``verification.json``, ``measurements.json``) content of :func:`report_data` output.

    The first is identical on every machine for the same inputs: verdicts, counts,
    case lists, declared tolerances and thresholds, no measured float
    (:mod:`pyverify.report.measured`); the second holds the measured figures at the
    same places, and :func:`~pyverify.report.measured.merge_measured` of the two
    gives ``data`` back.
    """
    cc_kept, cc_measured = split_crosscheck(data["crosscheck"])
    kept, measured = split_measured({**data, "crosscheck": cc_kept})
    measured["crosscheck"] = merge_measured(measured.get("crosscheck", {}), cc_measured)
    measured = {
        "schema": 1,
        "about": "figures measured on this machine (they move with torch's CPU dispatch, "
        "the BLAS build and the thread count); the verdicts are in verification.json",
        **measured,
    }
    return kept, measured


def verification_data(**phases: Any) -> dict[str, Any]:
    """The content of ``verification.json``: :func:`report_data`'s verdicts alone.

    Same keyword arguments as :func:`report_data`; the result is identical on every
    machine for the same inputs.
    """
    return split_report(report_data(**phases))[0]


def _version(mod: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(mod)
    except Exception:
        return None


def _underflow(cuda: bool) -> dict[str, Any]:
    """What each device does with subnormal numbers, per dtype (:mod:`pyverify.fp.underflow`)."""
    from pyverify.fp.underflow import survey

    return survey(["cpu", *(["cuda"] if cuda else [])])


def environment_data(
    *,
    durations: dict[str, float],
    lean: dict[str, Any],
    tests: dict[str, Any],
    crosscheck: Any,
    diagnostics: dict[str, dict[str, Any]],
    bench: dict[str, Any],
    options: dict[str, Any],
) -> dict[str, Any]:
    """Host, time, versions and durations: everything kept out of ``verification.json``."""
    import torch

    cuda = torch.cuda.is_available()
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "versions": {
            m: _version(m)
            for m in (
                "pyverify",
                "numpy",
                "torch",
                "mpmath",
                "sympy",
                "hypothesis",
                "pytest",
                "matplotlib",
            )
        },
        "underflow": _underflow(cuda),
        "torch": {
            "threads": torch.get_num_threads(),
            "cuda_available": cuda,
            "cuda_device": torch.cuda.get_device_name(0) if cuda else None,
        },
        "lean": {
            "toolchain": lean.get("toolchain"),
            "version": lean.get("version"),
            "build_seconds": lean.get("seconds"),
            "modules": [
                {"name": m["name"], "status": m["status"], "seconds": m.get("seconds")}
                for m in lean.get("modules") or []
            ],
        },
        "tests_output_tail": list(tests.get("output_tail") or [])[-20:],
        "crosscheck_seconds": getattr(crosscheck, "seconds", None),
        "data_files": {n: (d.get("provenance") or {}).get("path") for n, d in diagnostics.items()},
        "bench_meta": bench.get("meta"),
        "durations_s": {k: round(v, 3) for k, v in durations.items()},
        "options": dict(options),
    }


# --------------------------------------------------------------------------- driver
