"""``generate_report``: run every phase and write ``reports/``."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyverify.output import Progress, json_text
from pyverify.output import progress as _stderr
from pyverify.output import write_text as _write
from pyverify.report import phases as _ph
from pyverify.report.bench_load import apply_load_policy
from pyverify.report.data import (
    environment_data,
    report_data,
    split_report,
)
from pyverify.report.measured import (
    MEASUREMENTS_FILE,
)
from pyverify.report.render import render_index
from pyverify.report.serialize import dumps, round_floats

__all__ = [
    "OUTPUT_FILES",
    "Phases",
    "generate_report",
]


#: Files the report writes (PNGs only when their data exist).
OUTPUT_FILES: tuple[str, ...] = (
    "index.md",
    "verification.json",
    "environment.json",
    MEASUREMENTS_FILE,
    "lean_manifest.json",
    "benchmarks.json",
    "commutant_residual.png",
    "error_by_dtype.png",
    "benchmark_ratios.png",
)


@dataclass
class Phases:
    """The phase functions ``generate_report`` calls (replace any of them in tests).

    Attributes
    ----------
    lean : callable
        ``(repo, progress) -> dict`` (:func:`pyverify.report.phases.lean_phase`).
    tests : callable
        ``(repo, progress) -> dict`` (:func:`pyverify.report.phases.tests_phase`).
    crosscheck : callable
        ``(quick, progress) -> CrosscheckResult``.
    decoder_step : callable
        ``(progress) -> [row]``: the decoder step's tightness (:func:`~pyverify.report.
        phases.decoder_step_phase`).
    diagnostics : callable
        ``(progress) -> {name: dict}`` for the released G-caches.
    model : callable
        ``(progress) -> dict``: order parameter / eps_G of a live model.
    bench : callable
        ``(progress) -> dict`` (:func:`pyverify.bench.run_bench` output).
    """

    lean: Callable[[Path, Progress], dict[str, Any]] = _ph.lean_phase
    tests: Callable[[Path, Progress], dict[str, Any]] = _ph.tests_phase
    crosscheck: Callable[[bool, Progress], Any] = _ph.crosscheck_phase
    decoder_step: Callable[[Progress], list[dict[str, Any]]] = _ph.decoder_step_phase
    diagnostics: Callable[[Progress], dict[str, dict[str, Any]]] = _ph.diagnostics_phase
    model: Callable[[Progress], dict[str, Any]] = _ph.model_phase
    bench: Callable[[Progress], dict[str, Any]] = _ph.bench_phase


def _error(exc: BaseException) -> dict[str, Any]:
    return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}


# --------------------------------------------------------------------------- data


def _existing_manifest(out: Path) -> dict[str, Any] | None:
    path = out / "lean_manifest.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _plots(out: Path, data: dict[str, Any], bench: dict[str, Any], say: Progress) -> list[str]:
    from pyverify.report import plots

    made = []
    diag = {n: d for n, d in data["diagnostics"].items() if d.get("status") == "passed"}
    steps = [
        ("commutant_residual.png", lambda p: plots.commutant_heatmaps(diag, p)),
        ("error_by_dtype.png", lambda p: plots.error_by_dtype(data["crosscheck"]["summary"], p)),
        ("benchmark_ratios.png", lambda p: plots.benchmark_ratios(bench, p)),
    ]
    if bench.get("status") == "refused":  # figures refused under load keep the earlier ones
        steps = steps[:-1]
    for name, fn in steps:
        path = out / name
        try:
            res = fn(path) if not (name.startswith("benchmark") and not bench.get("rows")) else None
        except Exception as exc:  # a plot must not sink the report
            say(f"report: plot {name} failed: {type(exc).__name__}: {exc}")
            res = None
        if res is None and path.exists():
            path.unlink()  # stale figure of an earlier run
        if res is not None:
            made.append(name)
    return made


def _run_collapse(out: Path, say: Progress) -> None:
    from pyverify.collapse import full_config, run_collapse
    from pyverify.report.collapse_plots import draw_all

    run_collapse(full_config(), out, restart=True, jobs=2, progress=False, log=say)  # rerun
    draw_all(out)


def generate_report(
    out_dir: Path,
    *,
    lean: bool = True,
    tests: bool = True,
    bench: bool = True,
    quick: bool = False,
    bench_anyway: bool = False,
    progress: Progress | None = None,
    phases: Phases | None = None,
    repo: Path | None = None,
    collapse: bool = False,
) -> int:
    """Regenerate the report folder.

    Phases, each with progress lines: (1) Lean build + audit + manifest
    (``lean_manifest.json``); (2) property tests in a subprocess, aggregated per
    theorem ID x implementation; (3) cross-check (quick or full sweep); (4)
    diagnostics of the three released ``G_LM`` files (with provenance) and of a
    live model; (5) quick benchmarks. Writes ``index.md``,
    ``verification.json`` (the verdicts: identical on every machine),
    ``measurements.json`` (the figures measured here: errors, diagnostics),
    ``environment.json``, ``benchmarks.json`` and the PNG figures.

    Parameters
    ----------
    out_dir : pathlib.Path
        The report folder (created if needed), normally ``<repo>/reports``.
    lean, tests, bench : bool, default True
        Run the Lean build, the property tests, the benchmarks. A skipped Lean
        phase reuses the names of an existing ``lean_manifest.json``.
    quick : bool, default False
        The quick cross-check sweep.
    bench_anyway : bool, default False
        Write benchmark figures even when they were taken under load
        (:mod:`pyverify.report.bench_load`); they are marked so.
    progress : callable, optional
        Progress lines (default: stderr).
    phases : Phases, optional
        Replacement phase functions (tests inject fakes here).
    repo : pathlib.Path, optional
        Repository root (default: :func:`pyverify.paths.repo_root`).
    collapse : bool, default False
        Rerun ``pyverify collapse`` into ``out_dir/collapse`` first; otherwise the
        "collapse" section shows the last saved run.

    Returns
    -------
    int
        0 when everything passed (Lean proved every theorem ID, every property
        test passed on each implementation, the cross-check passed, the
        diagnostics ran), 1 otherwise.
    """
    say = progress or _stderr
    ph = phases or Phases()
    if repo is None:
        from pyverify.paths import repo_root

        repo = repo_root()
    repo = Path(repo)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    options = {"lean": lean, "tests": tests, "bench": bench, "quick": quick}
    durations: dict[str, float] = {}
    start = time.perf_counter()

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return fn()
        except Exception as exc:  # a crashing phase is reported, not fatal
            say(f"report: {name} failed: {type(exc).__name__}: {exc}")
            return _error(exc)
        finally:
            durations[name] = time.perf_counter() - t0

    say(f"report: [1/5] Lean build, audit and manifest{'' if lean else ' (skipped)'}")
    if lean:
        lean_res = timed("lean", lambda: ph.lean(repo, say))
        if lean_res.get("manifest"):
            from pyverify.lean.manifest import dumps as manifest_dumps

            _write(out / "lean_manifest.json", manifest_dumps(lean_res["manifest"]))
    else:
        lean_res = {"status": "skipped", "manifest": _existing_manifest(out)}
    say(f"report: lean {lean_res.get('status')}")

    say(f"report: [2/5] property tests{'' if tests else ' (skipped)'}")
    tests_res = timed("tests", lambda: ph.tests(repo, say)) if tests else {"status": "skipped"}
    say(f"report: property tests {tests_res.get('status')}")

    say(f"report: [3/5] cross-check ({'quick' if quick else 'full'} sweep)")
    cc = timed("crosscheck", lambda: ph.crosscheck(quick, say))
    say(f"report: cross-check {'passed' if getattr(cc, 'ok', False) else 'FAILED'}")
    dec = timed("decoder_step", lambda: ph.decoder_step(say))

    say("report: [4/5] diagnostics of the released G_LM files and of a live model")
    diag = timed("diagnostics", lambda: ph.diagnostics(say))
    if diag.get("status") == "error":  # the whole phase crashed
        diag = {"trained": diag}
    model = timed("model_diagnostics", lambda: ph.model(say))

    say(f"report: [5/5] benchmarks{'' if bench else ' (skipped)'}")
    bench_res = timed("bench", lambda: ph.bench(say)) if bench else {"status": "skipped"}
    bench_res = apply_load_policy(bench_res, bench_anyway, say)

    phases = {"lean": lean_res, "tests": tests_res, "crosscheck": cc, "diagnostics": diag}
    phases |= {"bench": bench_res, "options": options}
    data = report_data(model=model, decoder_step=dec, **phases)
    verification, measurements = split_report(data)
    _write(out / "verification.json", dumps(verification))
    _write(out / MEASUREMENTS_FILE, dumps(measurements))
    bench_file = out / "benchmarks.json"
    if bench_res.get("status") == "passed":
        _write(
            bench_file,
            json_text(round_floats({k: v for k, v in bench_res.items() if k != "status"})),
        )
    elif bench_res.get("status") != "refused" and bench_file.exists():
        bench_file.unlink()  # stale (refused figures keep the earlier file, see _plots)
    say("report: writing figures")
    _plots(out, data, bench_res, say)
    repo_rel = os.path.relpath(repo, out)
    if collapse:
        say("report: rerunning pyverify collapse")
        timed("collapse", lambda: _run_collapse(out / "collapse", say))
    from pyverify.report.collapse_section import collapse_section

    index = render_index(data, lean=lean_res, tests=tests_res, bench=bench_res, repo_rel=repo_rel)
    try:
        collapse_lines = collapse_section(out)
    except Exception as exc:  # a malformed saved run must not sink the report
        collapse_lines = ["## Empirical collapse (measured)", "", f"**Error**: {exc!r}", ""]
    from pyverify.report.claims_section import claims_section

    try:  # the ledger E1-E8 (also writes claims.json, float-free)
        collapse_lines += claims_section(out)
    except Exception as exc:  # a malformed saved study must not sink the report
        collapse_lines += ["## The paper's empirical claims", "", f"**Error**: {exc!r}", ""]
    _write(out / "index.md", index + "\n" + "\n".join(collapse_lines).rstrip() + "\n")
    durations["total"] = time.perf_counter() - start
    env = environment_data(durations=durations, **phases)
    _write(out / "environment.json", json_text(env))
    verdict = "passed" if data["ok"] else "FAILED"
    say(f"report: {verdict}; wrote {out} in {durations['total']:.1f} s")
    return 0 if data["ok"] else 1
