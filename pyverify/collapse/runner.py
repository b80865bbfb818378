"""``pyverify collapse`` without ``--run``: the whole study on one machine, one job per run.

Each run is one job (:mod:`~pyverify.collapse.job`), the command a cluster would
run: ``pyverify collapse --run NAME -o DIR/runs/NAME --settings DIR/settings.json
--threads T``. Here the jobs run as subprocesses, ``jobs`` at a time, the longest
first; nothing else is scheduled. Then their folders are merged
(:mod:`~pyverify.collapse.merge`) into ``out_dir`` (default ``reports/collapse/``; the
CLI then draws the figures from ``collapse.json`` alone,
:func:`pyverify.report.collapse_plots.draw_all`):

* ``collapse.json`` -- settings, the n-gram baseline and every deterministic
  number of every run (byte-identical for the same settings and thread count);
* ``timings.json`` -- wall times, decoding speed, host and load (not deterministic);
* ``settings.json`` -- the settings every job reads;
* ``runs/<name>/`` -- the jobs' folders: ``run.json``, ``timing.json``,
  ``checkpoint.pt`` (the author's checkpoint format), ``init.pt``,
  ``inputs.json`` (for ``pyverify diagnose --checkpoint ... --inputs``) and
  ``settings.json`` (git-ignored).

A run's numbers do not depend on ``jobs``: every job is its own process of
``threads`` threads.
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from pyverify.collapse.config import RUNS, STUDY_RUNS, RunConfig
from pyverify.collapse.job import SETTINGS_FILE, baseline, folder_work, is_finished
from pyverify.collapse.merge import RESULT_FILE, RUNS_DIR, TIMINGS_FILE, load_sources
from pyverify.errors import InputValueError
from pyverify.host import load_averages
from pyverify.output import Progress, read_json, write_json

__all__ = [
    "RESULT_FILE",
    "RUNS_DIR",
    "TIMINGS_FILE",
    "JobFailedError",
    "baseline",
    "job_command",
    "run_collapse",
    "run_studies",
]

POLL_S = 0.2


class JobFailedError(RuntimeError):
    """A run's job exited with an error (its own output says why); ``status``: exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def job_command(
    name: str,
    out_dir: Path,
    *,
    threads: int = 1,
    device: str = "cpu",
    resume: bool = False,
    restart: bool = False,
    progress: bool = True,
) -> list[str]:
    """The job command of run ``name`` in the study ``out_dir`` (``python -m pyverify.cli``)."""
    cmd = [
        sys.executable,
        "-m",
        "pyverify.cli",
        "collapse",
        "--run",
        name,
        "-o",
        str(out_dir / RUNS_DIR / name),
        "--settings",
        str(out_dir / SETTINGS_FILE),
        "--threads",
        str(threads),
        "--device",
        device,
        "--no-estimate",
    ]  # fmt: skip  (the study printed its estimate once)
    if resume:
        cmd.append("--resume")
    if restart:
        cmd.append("--restart")
    if not progress:
        cmd.append("--no-progress")
    return cmd


def _launch(cmds: dict[str, list[str]], jobs: int, say: Progress) -> dict[str, int]:
    """Run the commands ``jobs`` at a time, in the given order; the exit status of each."""
    env = {k: v for k, v in os.environ.items()}
    pending, running, status = list(cmds), {}, {}
    try:
        while pending or running:
            while pending and len(running) < jobs:
                name = pending.pop(0)
                say(f"collapse: start {name}: {shlex.join(cmds[name])}")
                # the job's stdout (a "wrote" line) goes to stderr: stdout stays the result
                running[name] = subprocess.Popen(cmds[name], env=env, stdout=2)
            time.sleep(POLL_S)
            for name, proc in list(running.items()):
                rc = proc.poll()
                if rc is None:
                    continue
                del running[name]
                status[name] = rc
                word = "done" if rc == 0 else f"FAILED (exit status {rc})"
                say(f"collapse: {name} {word} ({len(status)}/{len(cmds)})")
    finally:  # interrupted: stop the jobs (their checkpoints are written atomically)
        for proc in running.values():
            proc.terminate()
        for proc in running.values():
            proc.wait()
    return status


Study = tuple[RunConfig, Path, tuple[str, ...]]
"""One study of a run: its settings, its folder and its named runs."""


# keyword options repeated in run_studies on purpose: each public entry types its own
def run_collapse(
    cfg: RunConfig,
    out_dir: Path,
    *,
    runs: tuple[str, ...] = STUDY_RUNS,
    resume: bool = False,
    restart: bool = False,
    jobs: int = 2,
    threads: int = 1,
    device: str = "cpu",
    progress: bool = True,
    log: Progress | None = None,
) -> dict[str, Any]:
    """Run the study (one job per run, ``jobs`` at a time); return ``collapse.json``'s content.

    Parameters
    ----------
    cfg : RunConfig
        Settings (:func:`~pyverify.collapse.config.full_config` by default in the CLI).
    out_dir : pathlib.Path
        The study folder (see the module docstring).
    runs : tuple of str
        Names from :data:`~pyverify.collapse.config.RUNS`.
    resume, restart : bool
        Continue the runs' saved work (finished runs are kept) / discard it.
        Without either, a run folder holding work is refused.
    jobs : int
        Jobs at once.
    threads : int
        ``torch.set_num_threads`` of each job.
    device : str
        ``cpu`` or ``cuda``, for every job.
    progress : bool
        The jobs' progress lines.
    log : callable, optional
        Receives this function's lines (launches, completions, the result).

    Raises
    ------
    JobFailedError
        When a job fails (after the others have finished; nothing is merged).
    """
    opts = {"resume": resume, "restart": restart, "jobs": jobs, "threads": threads}
    return run_studies([(cfg, out_dir, runs)], device=device, progress=progress, log=log,
                       **opts)[0]  # fmt: skip


# keyword options of run_collapse repeated on purpose: each public entry types its own
def run_studies(
    studies: list[Study],
    *,
    resume: bool = False,
    restart: bool = False,
    jobs: int = 2,
    threads: int = 1,
    device: str = "cpu",
    progress: bool = True,
    log: Progress | None = None,
) -> list[dict[str, Any]]:
    """Run several studies' jobs in one schedule (``jobs`` at a time, the longest first).

    A regime's seeds are such studies (:mod:`~pyverify.collapse.regimes`): one folder
    per seed, each merged into its own ``collapse.json`` exactly as
    :func:`run_collapse` merges one study. Options as :func:`run_collapse`'s.
    """
    for cfg, _d, runs in studies:
        cfg.validate()
        for r in runs:
            if r not in RUNS:
                raise InputValueError(f"--run: unknown run {r!r} (known: {', '.join(RUNS)})")
    if jobs < 1 or threads < 1:
        raise InputValueError("--jobs and --threads must be >= 1")
    if resume and restart:
        raise InputValueError("--resume and --restart exclude each other")
    if "WORLD_SIZE" in os.environ:
        raise InputValueError(
            "the whole study does not run under torchrun: launch one job per run "
            "(pyverify collapse --run NAME -o DIR) and merge with pyverify claims -i DIR ..."
        )
    say = log or (lambda _m: None)
    several = len(studies) > 1
    key = {(d, n): f"{d.name}/{n}" if several else n for _c, d, runs in studies for n in runs}
    run_dirs = {(d, n): d / RUNS_DIR / n for _c, d, runs in studies for n in runs}
    if not (resume or restart):
        for d in run_dirs.values():
            held = folder_work(d) if d.is_dir() else None
            if held is not None:
                raise InputValueError(
                    f"{d} holds {held}: --resume continues the study, --restart discards it"
                )
    for cfg, d, _runs in studies:
        d.mkdir(parents=True, exist_ok=True)
        write_json(d / SETTINGS_FILE, cfg.to_dict())
    t0 = time.perf_counter()
    load_before = load_averages()
    todo: list[tuple[RunConfig, Path, str]] = []
    for cfg, d, runs in studies:
        for n in runs:
            if resume and is_finished(cfg, n, run_dirs[d, n]):
                say(f"collapse: {key[d, n]} finished already ({run_dirs[d, n]})")
            else:
                todo.append((cfg, d, n))
    todo.sort(key=lambda t: -t[0].run_steps(RUNS[t[2]]))  # the longest do not start last
    opts = {"threads": threads, "device": device, "resume": resume, "restart": restart}
    cmds = {key[d, n]: job_command(n, d, progress=progress, **opts) for _c, d, n in todo}
    say(f"collapse: {len(todo)} jobs, {min(jobs, max(1, len(todo)))} at a time")
    status = _launch(cmds, jobs, say)
    failed = {n: rc for n, rc in status.items() if rc != 0}
    if failed:
        first = next(iter(failed))
        raise JobFailedError(
            f"collapse: {len(failed)} of {len(todo)} jobs failed ({', '.join(failed)}; their "
            f"output is above); nothing merged. Rerun one: {shlex.join(cmds[first][1:])} "
            "(--resume keeps its work)",
            2 if all(rc == 2 for rc in failed.values()) else 1,
        )
    total_s = time.perf_counter() - t0
    results = []
    for cfg, d, runs in studies:
        result, run_timings = load_sources([run_dirs[d, n] for n in runs])
        if result["settings"] != cfg.to_dict():  # every job read settings.json: cannot differ
            raise InputValueError(f"{d}: a run folder holds other settings; --restart")
        timings: dict[str, Any] = {
            "jobs": jobs,
            "threads_per_run": threads,
            "host": platform.node(),
            "cpu_count": os.cpu_count(),
            "torch": torch.__version__,
            "loadavg_before": load_before,
            "runs": (run_timings or {}).get("runs", {}),
        }
        timings["total_s"] = total_s
        if several:
            timings["scheduled_with"] = [str(o) for _c, o, _r in studies if o != d]
        timings["loadavg_after"] = load_averages()
        old_f = d / TIMINGS_FILE
        if resume and old_f.is_file():  # the sessions before this one, as they were measured
            old = read_json(old_f)
            keep = ("total_s", "loadavg_before", "loadavg_after", "jobs")
            timings["earlier_sessions"] = [
                *old.get("earlier_sessions", []),
                {k: old[k] for k in keep if k in old},
            ]
        write_json(d / RESULT_FILE, result)
        write_json(d / TIMINGS_FILE, timings)
        say(f"collapse: wrote {d / RESULT_FILE} in {total_s:.0f} s")
        results.append(result)
    return results
