"""Where a row's time goes: a ``torch.profiler`` breakdown of the callables a row times.

``python -m pyverify.bench.breakdown [--rows P3,P1,Gc,L,P2] [--threads N] [--steps N]``
prints, per row and side, a Markdown table: each operator's calls per call of the
callable and its median self time per call (medians over the profiled calls, so a
call that the scheduler interrupted on a shared machine moves them little), grouped
into weight products, attention, copies (cache writes, layout), allocations, views,
other operators, and the time spent between operators (Python and the dispatcher:
the self time of the profiled range around each call). The figures come from the
same callables the bench times (:mod:`pyverify.bench.cases`). They are profiles, not
timings: the profiler adds about a microsecond per operator, and nothing here enters
a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from pyverify.bench import cases
from pyverify.host import load_averages

__all__ = ["GROUPS", "ROWS", "breakdown", "format_breakdown", "main"]

_MARK = "pyverify.bench.call"
_ROUND = 5  # calls per half-round (timed, then profiled)

#: Operator groups, by aten name (anything else is "other operators").
GROUPS: dict[str, tuple[str, ...]] = {
    "weight products": ("aten::addmm", "aten::mm", "aten::addmv", "aten::mv", "aten::linear"),
    "attention": (
        "aten::bmm", "aten::baddbmm", "aten::_softmax",
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_flash_attention",
    ),
    "copies (cache writes, layout)": ("aten::copy_", "aten::cat", "aten::clone", "aten::_to_copy"),
    "allocations": ("aten::empty", "aten::empty_strided", "aten::resize_", "aten::zeros"),
    "views": (
        "aten::view", "aten::as_strided", "aten::transpose", "aten::t", "aten::slice",
        "aten::select", "aten::reshape", "aten::_reshape_alias", "aten::expand",
        "aten::unsqueeze", "aten::permute", "aten::_unsafe_view", "aten::unflatten",
        "aten::view_as_complex", "aten::view_as_real", "aten::chunk", "aten::split",
        "aten::alias", "aten::detach", "aten::resolve_conj", "aten::resolve_neg",
    ),
}  # fmt: skip
_BETWEEN = "between operators (Python, dispatcher)"


def _group(name: str) -> str:
    for group, names in GROUPS.items():
        if name in names:
            return group
    return "other operators"


def _walk(ev: Any) -> Iterator[Any]:
    for child in ev.cpu_children:
        yield child
        yield from _walk(child)


def breakdown(fn: Callable[[], Any], *, calls: int = 30, warmup: int = 3) -> dict[str, Any]:
    """Profile ``calls`` calls of ``fn`` (after ``warmup``), under ``torch.inference_mode``.

    The operators' times are medians per position: the k-th call of an operator in
    ``fn`` is compared with the k-th call in every other call of ``fn``, so an
    operator called with different shapes is not summarised by one median. The time
    between operators is the median CPU time of one unprofiled call of ``fn`` on this
    thread (``time.thread_time``: time the scheduler gave to others is not counted;
    exact with one torch thread) minus the operators' sum.

    Returns
    -------
    dict
        ``{"cpu_us": median thread CPU time of one call, "ops": [{"op", "group",
        "calls", "us"}...] (descending), "groups": {group: us}}`` (us per call of ``fn``).
    """
    cpu: list[float] = []
    marks: list[Any] = []
    with torch.inference_mode():
        for _ in range(warmup):
            fn()
        for _ in range(max(1, calls // _ROUND)):  # the two halves interleaved: same load
            for _ in range(_ROUND):
                t0 = time.thread_time()
                fn()
                cpu.append(time.thread_time() - t0)
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(_ROUND):
                    with record_function(_MARK):
                        fn()
            marks += [e for e in prof.events() if e.name == _MARK]
    at: dict[tuple[str, int], list[float]] = defaultdict(list)
    for m in marks:
        seen: dict[str, int] = defaultdict(int)
        for e in _walk(m):
            at[(e.name, seen[e.name])].append(e.self_cpu_time_total)
            seen[e.name] += 1
    us: dict[str, float] = defaultdict(float)
    n_calls: dict[str, float] = defaultdict(float)
    for (name, _), times in at.items():
        us[name] += statistics.median(times)
        n_calls[name] += len(times) / len(marks)
    ops = [{"op": k, "group": _group(k), "calls": n_calls[k], "us": v} for k, v in us.items()]
    cpu_us = statistics.median(cpu) * 1e6
    between = cpu_us - sum(us.values())
    ops.append({"op": _BETWEEN, "group": _BETWEEN, "calls": 1.0, "us": between})
    ops.sort(key=lambda r: -r["us"])
    groups: dict[str, float] = defaultdict(float)
    for r in ops:
        groups[r["group"]] += r["us"]
    return {"cpu_us": cpu_us, "ops": ops, "groups": dict(groups)}


def format_breakdown(title: str, res: dict[str, Any], *, top: int = 12) -> str:
    """A breakdown as Markdown: the groups, then the ``top`` operators."""
    total = res["cpu_us"]
    lines = [f"**{title}**: {total / 1e3:.3f} ms CPU per call (median, unprofiled)", "",
             "| group | us per call | share |", "| --- | ---: | ---: |"]  # fmt: skip
    shared = res["groups"].get(_BETWEEN, 0.0) < 0
    for g, us in sorted(res["groups"].items(), key=lambda kv: -kv[1]):
        if g == _BETWEEN and shared:
            lines.append(f"| {g} | n/a | n/a |")
        else:
            lines.append(f"| {g} | {us:.0f} | {us / total:.1%} |")
    lines += ["", "| operator | calls | us per call |", "| --- | ---: | ---: |"]
    for r in res["ops"][:top]:
        if r["op"] != _BETWEEN or not shared:
            lines.append(f"| {r['op']} | {r['calls']:.0f} | {r['us']:.0f} |")
    if shared:
        lines += ["", "The operators' profiled (wall) times add up to more than the call's CPU "
                  "time: a long operator shared the cores with other work while profiled. Its "
                  "figure is not its cost; the shorter operators' medians still are."]  # fmt: skip
    return "\n".join(lines)


def _p3(B: int) -> Callable[[torch.device], dict]:
    return lambda dev: cases.decode_case(dev, torch.float32, B, 256, 2)


#: Row name -> (builder of the callables on a device, the sides profiled).
ROWS: dict[str, tuple[Callable[[torch.device], dict], tuple[str, ...]]] = {
    "P3 B=1": (_p3(1), ("ours", "author", "weights")),
    "P3 B=4": (_p3(4), ("ours", "author", "weights")),
    "P1 1x14x512x64": (lambda d: cases.collapsed_case(d, torch.float32, 1, 512), ("ours", "sdpa")),
    "Gc 1x14x512x64": (lambda d: cases.gcached_case(d, torch.float32, 1, 512), ("ours", "sdpa")),
    "L 896x64x170": (lambda d: cases.learner_case(d, torch.float32, 1), ("ours", "gemms")),
    "P2 1x14x256x64": (lambda d: cases.uncached_case(d, torch.float32, 1, 256), ("ours", "author")),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Print the breakdowns of the chosen rows (module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m pyverify.bench.breakdown")
    ap.add_argument("--rows", default=",".join(r.split()[0] for r in ROWS),
                    help="row names (P3, P1, Gc, L, P2), comma-separated")  # fmt: skip
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    ap.add_argument("--calls", type=int, default=30, help="profiled calls per side")
    args = ap.parse_args(argv)
    wanted = {w.strip() for w in args.rows.split(",") if w.strip()}
    unknown = wanted - {r.split()[0] for r in ROWS}
    if unknown:
        print(f"unknown rows: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    dev = torch.device("cpu")
    print(f"threads {args.threads}; load averages before: {load_averages()}\n")
    for name, (build, sides) in ROWS.items():
        if name.split()[0] not in wanted:
            continue
        fns = build(dev)
        for side in sides:
            res = breakdown(fns[side], calls=args.calls)
            print(format_breakdown(f"{name}, {side}", res) + "\n")
    print(f"load averages after: {load_averages()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
