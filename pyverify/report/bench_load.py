"""Machine load while the benchmarks ran: mark the figures, refuse loaded ones.

A benchmark run records the 1-minute load average before and after itself
(``meta.load_before``, ``meta.load_after``, ``meta.cpu_count``,
``meta.threads``). The figures count as taken under load when other work
shared the cores: the load before exceeded ``0.5 + cpu_count / 4``, or the load
after exceeded what the run itself explains (its threads) by that much.
``pyverify report`` then leaves ``benchmarks.json`` unwritten unless
``--bench-anyway`` is given, in which case the figures are kept and marked.
The report's own earlier phases (the property tests on every core) lift the
1-minute load average, which decays with a time constant of a minute, so the
report first waits for it to settle (:func:`settle_load`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from pyverify.output import Progress
from pyverify.report.markdown import not_done, table

__all__ = [
    "apply_load_policy",
    "bench_section",
    "load_lines",
    "load_note",
    "settle_load",
    "under_load",
]


def load_slack(cpus: int) -> float:
    """The load average above which other work is taken to share ``cpus`` cores."""
    return 0.5 + cpus / 4


def under_load(meta: dict[str, Any]) -> bool | None:
    """Whether the run's load averages show other work on the machine (None: unknown)."""
    before, after = meta.get("load_before"), meta.get("load_after")
    if before is None or after is None:
        return None
    cpus = int(meta.get("cpu_count") or 1)
    slack = load_slack(cpus)
    return bool(before > slack or after > int(meta.get("threads") or cpus) + slack)


def settle_load(
    say: Progress,
    *,
    timeout: float = 180.0,
    poll: float = 5.0,
    load: Callable[[], float] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> float | None:
    """Wait (at most ``timeout`` s) for the 1-minute load average to fall below the slack.

    Returns the last load average seen (None where the platform has none); a
    machine still loaded after the wait is left to :func:`apply_load_policy`.
    """
    read = load or (lambda: os.getloadavg()[0])
    slack = load_slack(os.cpu_count() or 1)
    waited = 0.0
    try:
        value = read()
    except (AttributeError, OSError):
        return None
    if value > slack:
        say(f"bench: waiting for the load average ({value:.2f}) to fall below {slack:.2f}")
    while value > slack and waited < timeout:
        sleep(poll)
        waited += poll
        value = read()
    return value


def load_note(meta: dict[str, Any]) -> str:
    """``load average X before, Y after, on N cores`` (or that it is unknown)."""
    if meta.get("load_before") is None:
        return "load average not recorded"
    return (
        f"load average {meta['load_before']} before, {meta['load_after']} after, "
        f"on {meta.get('cpu_count', '?')} cores"
    )


def apply_load_policy(bench: dict[str, Any], bench_anyway: bool, say: Progress) -> dict[str, Any]:
    """Mark a finished run with ``meta.under_load``; refuse it (status ``refused``) if loaded.

    Parameters
    ----------
    bench : dict
        The benchmark phase's result (``status``, ``meta``, ``rows``).
    bench_anyway : bool
        Keep figures taken under load (marked as such).
    say : callable
        Progress lines.

    Returns
    -------
    dict
        ``bench`` with ``meta.under_load`` set, or a ``refused`` result without rows.
    """
    if bench.get("status") != "passed":
        return bench
    meta = dict(bench.get("meta") or {})
    loaded = under_load(meta)
    meta["under_load"] = loaded
    if loaded and not bench_anyway:
        say(
            f"report: benchmark figures taken under load ({load_note(meta)}): not written; "
            "rerun on a quiet machine or pass --bench-anyway"
        )
        return {"status": "refused", "meta": meta, "rows": []}
    if loaded:
        say(f"report: keeping benchmark figures taken under load ({load_note(meta)})")
    return {**bench, "meta": meta}


def load_lines(status: str | None, meta: dict[str, Any]) -> list[str]:
    """Markdown lines for ``index.md``: why figures are missing, or that they are loaded."""
    if status == "refused":
        return [
            f"**Not recorded**: measured under load ({load_note(meta)}); rerun on a quiet "
            "machine or pass `--bench-anyway`. `benchmarks.json` and `benchmark_ratios.png`, "
            "if present, are an earlier run's.",
            "",
        ]
    if meta.get("under_load"):
        return [f"**Measured under load** ({load_note(meta)}): not representative.", ""]
    return []


def bench_section(bench: dict[str, Any]) -> list[str]:
    """The report's "Benchmarks" section (load marking first)."""
    lines = ["## Benchmarks", ""]
    st = bench.get("status")
    if short := not_done(lines, bench, "--no-bench", st == "error"):
        return short
    meta = bench.get("meta") or {}
    lines += load_lines(st, meta)
    if st == "refused":
        return lines
    lines.append(
        f"Device {meta.get('device_name', meta.get('device', '?'))}, {meta.get('threads', '?')} "
        f"threads, {meta.get('method', '')}. Timings vary from run to run and machine to machine: "
        "they are in `benchmarks.json` and here, never in `verification.json`."
    )
    lines += ["", "![benchmark ratios](benchmark_ratios.png)", ""]
    from pyverify.bench.rows import row_note

    rows = []
    for r in bench.get("rows") or []:
        shape = r["shape"]
        if isinstance(shape, dict):
            shape = ", ".join(f"{k}={v}" for k, v in shape.items())
        elif isinstance(shape, list | tuple):
            shape = "x".join(map(str, shape))
        rows.append(
            [
                r["benchmark"],
                str(shape),
                r["dtype"],
                r["device"],
                f"{r['ours_ms']:.2f}",
                f"{r['baseline_ms']:.2f}",
                f"{r['ratio']:.3f}",
                f"{r['target']:.3f}",
                "yes" if r["meets_target"] else "**no**",
                row_note(r),
            ]
        )
    lines += table(
        [
            "benchmark",
            "shape",
            "dtype",
            "device",
            "ours ms",
            "baseline ms",
            "ratio",
            "target",
            "meets",
            "beside it",
        ],
        rows,
    )
    lines.append("")
    return lines
