"""Several full ``pyverify bench`` runs in a row, and what they agree on.

``python -m pyverify.bench.quiet [--runs 3] [-o DIR] [--quick] [--device D]`` runs the
bench ``--runs`` times (each a fresh set of interleaved repetitions), writes each
run's JSON to ``DIR/run-<i>.json`` and a summary, ``DIR/summary.md``: per row and
shape the ratio of every run, their median, and whether the median meets the target,
beside each run's load averages and the machine the ratios were taken on
(``meta.machine``). It is the command for the quiet runs that decide issue 37; on a
shared machine the summary marks every run whose load exceeded the cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyverify.bench.run import run_bench

__all__ = ["main", "summarise"]


def _key(r: dict[str, Any]) -> tuple[str, str]:
    shape = r["shape"]
    text = ", ".join(f"{k}={v}" for k, v in shape.items()) if isinstance(shape, dict) else (
        "x".join(str(s) for s in shape)
    )  # fmt: skip
    return r["benchmark"], text


def summarise(results: list[dict[str, Any]]) -> str:
    """The Markdown summary of several :func:`run_bench` results (module docstring)."""
    runs = len(results)
    table: dict[tuple[str, str], list[float]] = {}
    targets: dict[tuple[str, str], float] = {}
    for res in results:
        for r in res["rows"]:
            table.setdefault(_key(r), []).append(r["ratio"])
            targets[_key(r)] = r["target"]
    head = " | ".join(f"run {i + 1}" for i in range(runs))
    lines = [f"| row | shape | {head} | median | target | meets |",
             "| --- | --- |" + " ---: |" * (runs + 2) + " --- |"]  # fmt: skip
    for (name, shape), ratios in table.items():
        med = statistics.median(ratios)
        cells = " | ".join(f"{x:.3f}" for x in ratios)
        ok = "yes" if med <= targets[(name, shape)] else "**no**"
        lines.append(
            f"| {name} | {shape} | {cells} | {med:.3f} | {targets[(name, shape)]:.3f} | {ok} |"
        )
    lines += [
        "",
        "| run | load before | load after | cores | threads |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for i, res in enumerate(results):
        m = res["meta"]
        loaded = max(m.get("load_before") or 0, m.get("load_after") or 0) > (
            m.get("cpu_count") or 1
        )
        mark = " (under load)" if loaded else ""
        lines.append(f"| {i + 1}{mark} | {m.get('load_before')} | {m.get('load_after')} | "
                     f"{m.get('cpu_count')} | {m.get('threads')} |")  # fmt: skip
    machine = results[0]["meta"].get("machine", {})
    lines += ["", "Machine (run 1): `" + json.dumps(machine, sort_keys=True) + "`"]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bench ``--runs`` times and write the JSONs and the summary."""
    ap = argparse.ArgumentParser(prog="python -m pyverify.bench.quiet")
    ap.add_argument("--runs", type=int, default=3, help="full bench runs (default 3)")
    ap.add_argument("-o", "--output", default="reports/bench-quiet", help="output folder")
    ap.add_argument("--quick", action="store_true", help="the small subset of shapes")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    if args.runs < 1:
        print("--runs must be at least 1", file=sys.stderr)
        return 2
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for i in range(args.runs):
        print(f"run {i + 1} of {args.runs}, load {os.getloadavg()}", file=sys.stderr)
        res = run_bench(device=args.device, quick=args.quick, out_json=out / f"run-{i + 1}.json",
                        progress=lambda s: print(s, file=sys.stderr))  # fmt: skip
        results.append(res)
    text = summarise(results)
    (out / "summary.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
