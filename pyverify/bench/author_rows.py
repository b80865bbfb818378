"""The benchmark rows against the paper author's formulation (``pyverify bench``).

Each function appends rows (see :func:`pyverify.bench._row`) and prints them:

* ``P2 ours/author``: uncached PLGA layer, ours
  (:func:`pyverify.kernels.plga_attention`, shared learner) / a faithful
  re-creation of ``pldr_model_v510``'s layer
  (:func:`pyverify.kernels.baseline.plga_attention_author`); target 0.9 at
  S <= 512, 0.5 at S >= 1024; peak extra memory of one call beside the time;
* ``L learner/GEMM``: the shared metric learner alone (steps 2-3 on B*H*dk
  rows) / the bare GEMMs of the same sizes; its FLOP rate is printed beside the
  GEMM rate; target: rate >= 60 % of the GEMM rate, i.e. time ratio <= 1/0.6;
* ``P3 decode ours/author``: one G-cached decoding step of the whole model,
  ours (KV written into preallocated buffers) / the author-style step (KV
  extended with ``torch.cat``); target 0.7. Beside it, the floor: the step's
  products with every weight matrix alone / the author's step (no step that
  reads every weight once can go below it); and ``P3 decode KV+G/full``: the
  same step / the full forward pass over the context plus the token (target 1/3);
* ``Gc G-cached/SDPA``: the G-cached layer (SDPA on ``Q G``) / plain causal
  SDPA; target ``1 + 1.5 dk / S`` (the ``Q G`` product is intrinsic).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyverify.bench import cases
from pyverify.bench.memory import peak_extra_bytes
from pyverify.bench.rows import A_DFF, DK, N_DENSE, N_RES, H, row_line
from pyverify.output import Progress

__all__ = [
    "bench_gcached",
    "bench_learner",
    "bench_p2_author",
    "bench_p3_author",
    "shared_params",
]

shared_params = cases.shared_params

RowFn = Callable[..., dict[str, Any]]


def _mib(n: int) -> float:
    return round(n / 2**20, 3)


def bench_p2_author(device, dtype, shapes, reps, say: Progress, rows, row: RowFn, timer) -> None:
    """P2: uncached layer, ours / the author's formulation; peak memory beside."""
    for B, S in shapes:
        fns = cases.uncached_case(device, dtype, B, S)
        o, b = timer(fns["ours"], fns["author"], device, reps=reps, max_seconds=30)
        r = row("P2 ours/author", [B, H, S, DK], dtype, device, o, b, 0.9 if S <= 512 else 0.5)
        r["ours_peak_mib"] = _mib(peak_extra_bytes(fns["ours"], device))
        r["baseline_peak_mib"] = _mib(peak_extra_bytes(fns["author"], device))
        rows.append(r)
        say(row_line(r))


def bench_learner(device, dtype, batches, reps, say: Progress, rows, row: RowFn, timer) -> None:
    """L: shared learner alone vs the bare GEMMs of the same sizes (FLOP rates)."""
    for B in batches:
        N = B * H * DK
        fns = cases.learner_case(device, dtype, B)
        o, b = timer(fns["ours"], fns["gemms"], device, reps=reps)
        flops = 6.0 * N * DK * A_DFF * N_RES * N_DENSE
        r = row("L learner/GEMM", [N, DK, A_DFF], dtype, device, o, b, 1 / 0.6)
        r["learner_gflops"] = round(flops / o / 1e6, 3)
        r["gemm_gflops"] = round(flops / b / 1e6, 3)
        r["rate_fraction"] = round(b / o, 4)
        rows.append(r)
        say(row_line(r))


def bench_p3_author(device, dtype, configs, reps, say: Progress, rows, row: RowFn, timer) -> None:
    """P3: one G-cached decode step, ours / the author-style step (KV by torch.cat)."""
    for B, ctx, layers in configs:
        fns = cases.decode_case(device, dtype, B, ctx, layers)
        ours, author = fns["ours"], fns["author"]
        o, b = timer(ours, author, device, reps=reps, max_seconds=30)
        shape = {"B": B, "context": ctx, "layers": layers, "H": H, "dk": DK}
        r = row("P3 decode ours/author", shape, dtype, device, o, b, 0.7)
        w, b2 = timer(fns["weights"], author, device, reps=reps, max_seconds=30)
        r["weights_only_ms"] = round(w, 4)
        r["floor_ratio"] = round(w / b2, 4)
        rows.append(r)
        say(row_line(r))
        o, b = timer(ours, fns["full"], device, reps=reps, max_seconds=30)
        rows.append(row("P3 decode KV+G/full", shape, dtype, device, o, b, 1 / 3))
        say(row_line(rows[-1]))


def bench_gcached(device, dtype, shapes, reps, say: Progress, rows, row: RowFn, timer) -> None:
    """Gc: G-cached layer / plain causal SDPA, target 1 + 1.5 dk / S."""
    for B, S in shapes:
        fns = cases.gcached_case(device, dtype, B, S)
        o, b = timer(fns["ours"], fns["sdpa"], device, reps=reps, max_seconds=20)
        r = row("Gc G-cached/SDPA", [B, H, S, DK], dtype, device, o, b, 1 + 1.5 * DK / S)
        rows.append(r)
        say(row_line(r))
