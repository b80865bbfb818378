"""The cross-check sweep of a plugin against the float64 reference: the cross-check's own.

The cases are those of ``pyverify crosscheck`` (:func:`pyverify.crosscheck.list_cases`,
kinds ``random`` and ``trained``, at the subject's dtype), with the same seeded inputs,
heads and float64 reference results (:func:`~pyverify.crosscheck.heads.random_reference`,
:func:`~pyverify.crosscheck.heads.trained_reference`: one reference forward per case),
compared by the same :class:`~pyverify.crosscheck.compare.Comparer` and held to the same
proved bounds as the kernels (:func:`~pyverify.crosscheck.bounds.pipeline_bounds`,
:func:`~pyverify.crosscheck.bounds.head_bounds`), under the kernels' arithmetic at the
subject's dtype (:func:`pyverify.fp.models.arithmetic`: the premises every property test
of a plugin assumes; SDPA pinned to the backend they model where the plugin calls torch's).
The plugin runs one head per (batch, head) slice of a case:

* ``random``: uncached (stages ``A_LM``, ``A_P``, ``G`` where the plugin returns the
  deductive tensors, and ``output``), and G-cached with the reference's ``G`` (``output``). ``A``
  has no bound a black box can be held to here (the property tests hold it to the
  composed learner chain, :mod:`pyverify.testing.learner_bounds`);
* ``trained``: the paper's trained ``G_LM`` of one layer, G-cached (``output``; large
  scores).

A subject off the CPU has no proved bound (the bounds model torch's CPU kernels): it is
left out of the sweep by name. Rows are :class:`~pyverify.crosscheck.CrosscheckRow`; their
errors are machine-dependent (the verdict keeps only pass/fail).
"""

from __future__ import annotations

import dataclasses
import functools
import time

import numpy as np
import torch

from pyverify.conformance.subject import Subject
from pyverify.crosscheck.bounds import head_bounds, pipeline_bounds
from pyverify.crosscheck.cases import Case, list_cases
from pyverify.crosscheck.compare import Comparer, as_numpy
from pyverify.crosscheck.results import CrosscheckRow
from pyverify.crosscheck.runners import OFF_CPU, random_reference, run_case, trained_reference
from pyverify.output import Progress
from pyverify.precision import TORCH_DTYPES

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


def _arith(sub: Subject):  # type: ignore[no-untyped-def]
    """The arithmetic the bounds assume for ``sub`` (the kernels' at its dtype)."""
    from pyverify.fp.models import arithmetic

    return arithmetic(sub.name, sub.dtype, sub.compute or None, "cpu")


def _path(sub: Subject) -> str:
    """How ``sub``'s head forms the scores it feeds SDPA (the property tests' premise)."""
    return "sdpa_split" if sub.dtype in ("bfloat16", "float16") else "sdpa"


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
    from pyverify.fp.attention import pinned, sdpa_backend

    (qt, kt, vt), heads, ref = random_reference(_on_cpu(case))
    q, k, v = (as_numpy(t) for t in (qt, kt, vt))
    ar, path = _arith(sub), _path(sub)
    with pinned(sdpa_backend(path, q.shape[-1], v.shape[-1])):
        res = _heads(sub, q, k, v, heads, None)
        cached = _heads(sub, q, k, v, heads, ref.ded.G)  # the reference's G: the same output
    got = {n: _stack(res, n) for n in _DEDUCTIVE}
    want = {n: getattr(ref.ded, n) for n in _DEDUCTIVE}
    unc = Comparer(case, f"{sub.name}.uncached", "reference.float64")
    rows = []
    if all(got[n] is not None for n in _DEDUCTIVE):  # each stage from its own input
        proved = pipeline_bounds(ar, heads, got, want, exact_is_mp=False)
        rows += [unc.stage(n, got[n], want[n], proved[n]) for n in _DEDUCTIVE[1:]]
    G_used = got["G"] if got["G"] is not None else ref.ded.G
    _, out_bound = head_bounds(ar, q, k, v, G_used, ref.ded.G, "matmul", path)
    rows.append(unc.stage("output", _stack(res, "out"), ref.out, out_bound))
    g_held = as_numpy(torch.as_tensor(ref.ded.G).to(TORCH_DTYPES[ar.compute]))
    _, g_bound = head_bounds(ar, q, k, v, g_held, ref.ded.G, "sdpa", path)
    g_cmp = Comparer(case, f"{sub.name}.g_cached", "reference.float64")
    rows.append(g_cmp.stage("output", _stack(cached, "out"), ref.out, g_bound,
                            ("cache_equivalence",)))  # fmt: skip
    return rows


def _trained(sub: Subject, case: Case) -> list[CrosscheckRow]:
    from pyverify.fp.attention import pinned, sdpa_backend

    (qt, kt, vt), g, ref = trained_reference(_on_cpu(case))
    q, k, v = (as_numpy(t) for t in (qt, kt, vt))
    ar, path = _arith(sub), _path(sub)
    note = f"G_LM layer {case.layer}; max|E| {np.abs(ref.E).max():.3g}"
    with pinned(sdpa_backend(path, q.shape[-1], v.shape[-1])):
        out = _stack(_heads(sub, q, k, v, None, np.asarray(g, dtype=np.float64)), "out")
    _, bound = head_bounds(ar, q, k, v, g, g, "sdpa", path)  # the file holds float32 numbers
    cmp = Comparer(case, f"{sub.name}.g_cached", "reference.float64", note)
    return [cmp.stage("output", out, ref.out, bound, ("cache_equivalence",))]


def run_sweep(
    sub: Subject, *, quick: bool, progress: Progress | None = None
) -> list[CrosscheckRow]:
    """Every case of the sweep on ``sub`` (which offers ``head``; on the CPU: module docstring)."""
    if sub.device != "cpu":
        raise ValueError(f"{sub}: {OFF_CPU}")
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
