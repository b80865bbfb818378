"""The sweep driver: each case run by the runner of its kind, the rows collected."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

from pyverify.crosscheck.cases import Case, list_cases, parse_devices, parse_dtypes, shard_cases
from pyverify.crosscheck.compare import Comparer
from pyverify.crosscheck.heads import random_reference, trained_reference
from pyverify.crosscheck.operator_cases import run_identity, run_trained
from pyverify.crosscheck.random_cases import run_mpmath, run_random
from pyverify.crosscheck.results import CrosscheckResult, CrosscheckRow
from pyverify.dispatch import refusals
from pyverify.errors import InputValueError
from pyverify.output import Progress

__all__ = ["random_reference", "run_case", "run_crosscheck", "trained_reference"]


_RUNNERS: dict[str, Callable[[Case], list[CrosscheckRow]]] = {
    "random": run_random,
    "mpmath": run_mpmath,
    "trained": run_trained,
    "identity": run_identity,
}


#: Why a case off the CPU is left out.
OFF_CPU = (
    "no proved bound off the CPU: the bounds model torch's CPU kernels (CUDA's SDPA and "
    "LayerNorm are not modelled)"
)


def run_case(
    case: Case, runner: Callable[[Case], list[CrosscheckRow]] | None = None
) -> list[CrosscheckRow]:
    """Run one case; an exception becomes one failed ``error`` row (nothing is hidden).

    ``runner``: what checks the case (default: the kernels' runner of its kind).
    """
    try:
        with torch.inference_mode():
            return (runner or _RUNNERS[case.kind])(case)
    except Exception as exc:  # a crash is a failure of the case, reported as such
        return [
            Comparer(case, "-", "-").row(
                "error", np.array([np.inf]), 0.0, note=f"{type(exc).__name__}: {exc}"
            )
        ]


def _flushing(pairs: set[tuple[str, str]], say: Progress) -> dict[str, str]:
    """``"device dtype"`` -> the refusal line, for each pair whose device flushes."""
    from pyverify.fp.models import arithmetic
    from pyverify.fp.underflow import FlushToZero, require_gradual

    out: dict[str, str] = {}
    for dev, dt in sorted(pairs):
        try:
            arithmetic("kernels", dt, device=dev)
            if dt == "float64":  # the mpmath cases' float64 reference: NumPy
                require_gradual("numpy", "float64")
        except FlushToZero as exc:
            out[f"{dev} {dt}"] = str(exc)
            say(f"crosscheck: {dev} {dt} left out ({exc})")
    return out


def run_crosscheck(
    devices: list[str] | None = None,
    dtypes: list[str] | None = None,
    quick: bool = False,
    shard: tuple[int, int] = (1, 1),
    progress: Progress | None = None,
) -> CrosscheckResult:
    """Run the cross-check sweep (or one shard of it).

    Parameters
    ----------
    devices : list of str, optional
        Torch devices (default: every available one: cpu, and cuda if present).
    dtypes : list of str, optional
        Dtype names (default: float64, float32, bfloat16, float16; aliases
        fp64/fp32/bf16/fp16 accepted).
    quick : bool, default False
        The quick sweep (about a minute on 2 CPU cores); the full one takes a
        few minutes.
    shard : tuple of int, default (1, 1)
        ``(k, n)``: run only the cases whose index ``i`` (in the fixed case
        order) has ``i % n == k - 1``. The n shards partition the sweep.
    progress : callable, optional
        Called with one line per case.

    Returns
    -------
    CrosscheckResult
        Rows for every compared stage; ``.ok`` is False on any failure.

    Raises
    ------
    ValueError
        Bad device, dtype or shard, or a shard that holds no case.
    """
    say = progress or (lambda _s: None)
    devs = parse_devices(devices)
    dts = parse_dtypes(dtypes)
    every = list_cases(devs, dts, quick)
    cases = shard_cases(every, tuple(shard))  # type: ignore[arg-type]
    if not cases:
        k, n = shard
        raise InputValueError(
            f"shard {k}/{n} holds no case: this sweep has {len(every)} cases, "
            f"so use at most {len(every)} shards"
        )
    # A dtype torch itself refuses on this CPU under this capability (pyverify.dispatch) is
    # left out and named: a fact of torch here, not an error of the kernels. Sharding comes
    # first, so the shards stay the same on every machine.
    refused = refusals(dts) if "cpu" in devs else {}
    left_out = {f"cpu {d}": f"torch refuses it on this CPU: {m}" for d, m in refused.items()}
    for key, why in left_out.items():
        say(f"crosscheck: {key} left out ({why})")
    cases = [c for c in cases if not (c.device == "cpu" and c.dtype in refused)]
    # Every row is held to a proved bound, and the bounds' premises are torch's CPU kernels
    # (the fused CPU SDPA, ATen's LayerNorm): another device's cases are refused by name,
    # before any probe (the arithmetic of a reduced dtype off the CPU is not modelled).
    for key in sorted({f"{c.device} {c.dtype}" for c in cases if c.device != "cpu"}):
        left_out[key] = OFF_CPU
        say(f"crosscheck: {key} left out ({OFF_CPU})")
    cases = [c for c in cases if c.device == "cpu"]
    # A CPU that flushes subnormal numbers at a dtype (pyverify.fp.underflow) has no
    # proved bound there: its cases are left out with the probe's one line, never run
    # against bounds that assume gradual underflow.
    flushing = _flushing({(c.device, c.dtype) for c in cases}, say)
    left_out |= flushing
    cases = [c for c in cases if f"{c.device} {c.dtype}" not in flushing]
    result = CrosscheckResult(devices=devs, dtypes=dts, quick=quick, shard=tuple(shard))  # type: ignore[arg-type]
    result.left_out = left_out
    start = time.perf_counter()
    for i, case in enumerate(cases, 1):
        t0 = time.perf_counter()
        rows = run_case(case)
        result.rows.extend(rows)
        result.cases.append(case.case_id)
        bad = [r for r in rows if not r.passed]
        worst = max((r.max_rel / r.tolerance for r in rows if r.tolerance > 0), default=0.0)
        verdict = "ok" if not bad else f"FAILED ({', '.join(f'{r.path}:{r.stage}' for r in bad)})"
        say(
            f"crosscheck [{i}/{len(cases)}] {case.case_id}: {verdict}, "
            f"worst error/tolerance {worst:.2g} ({time.perf_counter() - t0:.1f} s)"
        )
    result.seconds = time.perf_counter() - start
    return result
