"""The cross-check sweep of a plugin against the float64 reference: the cross-check's own.

The cases are those of ``pyverify crosscheck`` (:func:`pyverify.crosscheck.list_cases`,
kinds ``random`` and ``trained``, at the subject's dtype), with the same seeded inputs,
heads and float64 reference results (:func:`~pyverify.crosscheck.heads.random_reference`,
:func:`~pyverify.crosscheck.heads.trained_reference`: one reference forward per case),
compared by the same :class:`~pyverify.crosscheck.compare.Comparer` and held to the same
tolerances as the kernels' uncached and G-cached paths (:mod:`pyverify.tolerance`). The
plugin runs one head per (batch, head) slice of a case:

* ``random``: uncached (stages ``A``, ``A_LM``, ``A_P``, ``G``, ``output``), and G-cached
  with the reference's ``G`` (``output``, against the same reference output);
* ``trained``: the paper's trained ``G_LM`` of one layer, G-cached (``output``; large
  scores).

Deductive stages the plugin does not return are not compared. Rows are
:class:`~pyverify.crosscheck.CrosscheckRow`; their errors are machine-dependent (the
verdict keeps only pass/fail).
"""

from __future__ import annotations

import dataclasses
import functools
import time

import numpy as np
import torch

from pyverify.conformance.subject import Subject
from pyverify.crosscheck.cases import Case, list_cases
from pyverify.crosscheck.compare import Comparer, as_numpy, sdpa_error
from pyverify.crosscheck.results import CrosscheckRow
from pyverify.crosscheck.runners import random_reference, run_case, trained_reference
from pyverify.output import Progress
from pyverify.tolerance import output_tolerance, stage_tolerances

__all__ = ["run_sweep", "sweep_cases"]

_DEDUCTIVE = ("A", "A_LM", "A_P", "G")


def sweep_cases(sub: Subject, *, quick: bool) -> list[Case]:
    """The cross-check's ``random`` and ``trained`` cases at ``sub``'s device and dtype."""
    cases = list_cases(["cpu"], [sub.dtype], quick)
    kinds = ("random", "trained")
    return [dataclasses.replace(c, device=sub.device) for c in cases if c.kind in kinds]


def _on_cpu(case: Case) -> Case:
    """The same inputs generated on the CPU (a case's seed does not depend on its device)."""
    return dataclasses.replace(case, device="cpu")


def _output_tolerance(case: Case, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      G: np.ndarray) -> tuple[float, str | None]:  # fmt: skip
    """The kernels' uncached/G-cached output tolerance and its rule, for these inputs."""
    G64 = torch.as_tensor(np.asarray(G, dtype=np.float64))
    e_sdpa = sdpa_error(q, k, v, q.double())
    e_qg = sdpa_error(q, k, v, torch.matmul(q.double(), G64))
    return output_tolerance(case.dtype, "uncached", e_sdpa, e_qg)


def _heads(sub: Subject, q, k, v, params, G) -> list[list]:
    """``sub.plga`` on every (batch, head) slice (``params``/``G`` per head or None)."""
    B, H = q.shape[:2]
    return [
        [sub.plga(q[b, h], k[b, h], v[b, h], None if params is None else params[h],
                  G=None if G is None else G[b, h] if G.ndim == 4 else G[h])
         for h in range(H)]
        for b in range(B)
    ]  # fmt: skip


def _stack(res: list[list], name: str) -> np.ndarray | None:
    vals = [[getattr(r, name) for r in row] for row in res]
    if any(x is None for row in vals for x in row):
        return None
    return np.stack([np.stack(row) for row in vals])


def _random(sub: Subject, case: Case) -> list[CrosscheckRow]:
    (qt, kt, vt), heads, ref = random_reference(_on_cpu(case))
    q, k, v = (as_numpy(t) for t in (qt, kt, vt))
    tol_ded, _ = stage_tolerances(case.dtype)
    tol_out, rule_out = _output_tolerance(case, qt, kt, vt, ref.ded.G)
    unc = Comparer(case, f"{sub.name}.uncached", "reference.float64")
    res = _heads(sub, q, k, v, heads, None)
    rows = [
        unc.stage(n, got, getattr(ref.ded, n), tol_ded)
        for n in _DEDUCTIVE
        if (got := _stack(res, n)) is not None
    ]
    rows.append(unc.stage("output", _stack(res, "out"), ref.out, tol_out, rule=rule_out))
    cached = _heads(sub, q, k, v, heads, ref.ded.G)  # the reference's G: the same output
    g_cmp = Comparer(case, f"{sub.name}.g_cached", "reference.float64")
    out = _stack(cached, "out")
    rows.append(g_cmp.stage("output", out, ref.out, tol_out, ("cache_equivalence",), rule=rule_out))
    return rows


def _trained(sub: Subject, case: Case) -> list[CrosscheckRow]:
    (qt, kt, vt), g, ref = trained_reference(_on_cpu(case))
    q, k, v = (as_numpy(t) for t in (qt, kt, vt))
    tol_out, rule_out = _output_tolerance(case, qt, kt, vt, g[None])
    note = f"G_LM layer {case.layer}; max|E| {np.abs(ref.E).max():.3g}"
    out = _stack(_heads(sub, q, k, v, None, np.asarray(g, dtype=np.float64)), "out")
    cmp = Comparer(case, f"{sub.name}.g_cached", "reference.float64", note)
    return [cmp.stage("output", out, ref.out, tol_out, ("cache_equivalence",), rule=rule_out)]


def run_sweep(
    sub: Subject, *, quick: bool, progress: Progress | None = None
) -> list[CrosscheckRow]:
    """Every case of the sweep on ``sub`` (which offers ``head``)."""
    cases = sweep_cases(sub, quick=quick)
    rows: list[CrosscheckRow] = []
    start = time.perf_counter()
    for i, case in enumerate(cases, 1):
        got = run_case(case, functools.partial(_random if case.kind == "random" else _trained, sub))
        rows += got
        if progress:
            left = (time.perf_counter() - start) / i * (len(cases) - i)
            bad = [f"{r.path}:{r.stage}" for r in got if not r.passed]
            verdict = f"FAILED ({', '.join(bad)})" if bad else "ok"
            progress(f"check: sweep [{i}/{len(cases)}, ETA {int(left) // 60}:{int(left) % 60:02d}]"
                     f" {case.case_id} {sub.name}: {verdict}")  # fmt: skip
    return rows
