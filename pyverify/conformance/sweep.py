"""The cross-check sweep of a plugin against the float64 reference: the cross-check's own.

The cases are those of ``pyverify crosscheck`` (:func:`pyverify.crosscheck.list_cases`,
kinds ``random`` and ``trained``, at the subject's dtype), with the same seeded inputs,
heads and float64 reference results (:func:`~pyverify.crosscheck.heads.random_reference`,
:func:`~pyverify.crosscheck.heads.trained_reference`: one reference forward per case),
compared by the same :class:`~pyverify.crosscheck.compare.Comparer` and held to the same
proved bounds as the kernels (:func:`~pyverify.crosscheck.bounds.pipeline_bounds`,
:func:`~pyverify.crosscheck.bounds.output_bound`), under the kernels' arithmetic at the
subject's dtype (:func:`pyverify.fp.models.arithmetic`: the premises every property test
of a plugin assumes; SDPA pinned to the backend they model where the plugin calls torch's).
The plugin runs one head per (batch, head) slice of a case:

* ``random``: uncached (stages ``A_LM``, ``A_P``, ``G`` where the plugin returns all four
  deductive tensors ``A``, ``A_LM``, ``A_P``, ``G``, each stage from its own returned
  input; and ``output``, its bound taking the plugin's returned ``G`` with its distance to
  the reference's as an input error), and G-cached with the reference's ``G``
  (``output``). ``A`` has no bound a black box can be held to here (the property tests
  hold it to the composed learner chain, :mod:`pyverify.testing.learner_bounds`);
* ``trained``: the paper's trained ``G_LM`` of one layer, G-cached (``output``; large
  scores).

As in the cross-check, a row without a proved bound fails (no tolerance without a
theorem): so does the uncached ``output`` of a plugin that returns no ``G``, whose own
learner error then has no bound here. A plugin that returns some of the deductive tensors
but not all has its deductive stages left out, named (:func:`run_sweep`'s second value);
one that returns none has only its outputs compared. A subject off the CPU has no proved
bound (the bounds model torch's CPU kernels): it is left out of the sweep by name
(:func:`pyverify.conformance.run.run_check`). Rows are
:class:`~pyverify.crosscheck.CrosscheckRow`; their errors are machine-dependent (the
verdict keeps only pass/fail).
"""

from __future__ import annotations

import functools
import time

import numpy as np
import torch

from pyverify.conformance.subject import Subject
from pyverify.crosscheck.bounds import PROVED_IDS, output_bound, pipeline_bounds
from pyverify.crosscheck.cases import Case, list_cases
from pyverify.crosscheck.compare import Comparer, Proved, as_numpy
from pyverify.crosscheck.results import CrosscheckRow
from pyverify.crosscheck.runners import OFF_CPU, random_reference, run_case, trained_reference
from pyverify.fp.attention import default_path, pinned, sdpa_backend
from pyverify.fp.models import Arithmetic, arithmetic
from pyverify.output import Progress
from pyverify.precision import TORCH_DTYPES

__all__ = ["NO_G", "run_sweep", "sweep_cases"]

_DEDUCTIVE = ("A", "A_LM", "A_P", "G")

#: Why the uncached output of a plugin that returns no ``G`` has no proved bound.
NO_G = (
    "the plugin returns no G, so the error of its own metric learner (the G its output "
    "used) has no bound here: return G to have this output held to one"
)


def sweep_cases(sub: Subject, *, quick: bool) -> list[Case]:
    """The cross-check's ``random`` and ``trained`` cases at ``sub``'s dtype (on the CPU)."""
    cases = list_cases(["cpu"], [sub.dtype], quick)
    return [c for c in cases if c.kind in ("random", "trained")]


def _arith(sub: Subject) -> Arithmetic:
    """The arithmetic the bounds assume for ``sub`` (the kernels' at its dtype)."""
    return arithmetic(sub.name, sub.dtype, sub.compute or None, sub.device)


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


def _random(sub: Subject, case: Case, left_out: dict[str, str]) -> list[CrosscheckRow]:
    (qt, kt, vt), heads, ref = random_reference(case)
    q, k, v = (as_numpy(t) for t in (qt, kt, vt))
    ar = _arith(sub)
    path = default_path(ar)
    with pinned(sdpa_backend(path, q.shape[-1], v.shape[-1])):
        res = _heads(sub, q, k, v, heads, None)
        cached = _heads(sub, q, k, v, heads, ref.ded.G)  # the reference's G: the same output
    got = {n: _stack(res, n) for n in _DEDUCTIVE}
    want = {n: getattr(ref.ded, n) for n in _DEDUCTIVE}
    unc = Comparer(case, f"{sub.name}.uncached", "reference.float64")
    rows = []
    returned = [n for n in _DEDUCTIVE if got[n] is not None]
    if len(returned) == len(_DEDUCTIVE):  # each stage from its own input
        proved = pipeline_bounds(ar, heads, got, want, exact_is_mp=False)
        rows += [unc.stage(n, got[n], want[n], proved[n]) for n in _DEDUCTIVE[1:]]
    elif returned:
        missing = [n for n in _DEDUCTIVE if got[n] is None]
        left_out[f"{sub} uncached {', '.join(_DEDUCTIVE[1:])}"] = (
            f"not compared: the plugin returns {', '.join(returned)} but not "
            f"{', '.join(missing)} (each stage is compared from its own returned input)"
        )
    if got["G"] is None:
        out_bound = Proved(None, PROVED_IDS["output"], NO_G)
    else:
        out_bound = output_bound(ar, q, k, v, got["G"], ref.ded.G, path)
    rows.append(unc.stage("output", _stack(res, "out"), ref.out, out_bound))
    g_held = as_numpy(torch.as_tensor(ref.ded.G).to(TORCH_DTYPES[ar.compute]))
    g_bound = output_bound(ar, q, k, v, g_held, ref.ded.G, path)
    g_cmp = Comparer(case, f"{sub.name}.g_cached", "reference.float64")
    rows.append(g_cmp.stage("output", _stack(cached, "out"), ref.out, g_bound,
                            ("cache_equivalence",)))  # fmt: skip
    return rows


def _trained(sub: Subject, case: Case, left_out: dict[str, str]) -> list[CrosscheckRow]:
    (qt, kt, vt), g, ref = trained_reference(case)
    q, k, v = (as_numpy(t) for t in (qt, kt, vt))
    ar = _arith(sub)
    path = default_path(ar)
    note = f"G_LM layer {case.layer}; max|E| {np.abs(ref.E).max():.3g}"
    with pinned(sdpa_backend(path, q.shape[-1], v.shape[-1])):
        out = _stack(_heads(sub, q, k, v, None, np.asarray(g, dtype=np.float64)), "out")
    bound = output_bound(ar, q, k, v, g, g, path)  # the file holds float32 numbers
    cmp = Comparer(case, f"{sub.name}.g_cached", "reference.float64", note)
    return [cmp.stage("output", out, ref.out, bound, ("cache_equivalence",))]


def run_sweep(
    sub: Subject, *, quick: bool, progress: Progress | None = None
) -> tuple[list[CrosscheckRow], dict[str, str]]:
    """Every case of the sweep on ``sub`` (which offers ``head``; on the CPU: module docstring).

    Returns the rows, and what was left out of the comparison (``"<subject> uncached
    A_LM, A_P, G"`` -> why, where the plugin returns the deductive tensors in part;
    deterministic).
    """
    if sub.device != "cpu":
        raise ValueError(f"{sub}: {OFF_CPU}")
    cases = sweep_cases(sub, quick=quick)
    rows: list[CrosscheckRow] = []
    left_out: dict[str, str] = {}
    start = time.perf_counter()
    for i, case in enumerate(cases, 1):
        runner = _random if case.kind == "random" else _trained
        got = run_case(case, functools.partial(runner, sub, left_out=left_out))
        rows += got
        if progress:
            left = (time.perf_counter() - start) / i * (len(cases) - i)
            bad = [f"{r.path}:{r.stage}" for r in got if not r.passed]
            verdict = f"FAILED ({', '.join(bad)})" if bad else "ok"
            progress(f"check: sweep [{i}/{len(cases)}, ETA {int(left) // 60}:{int(left) % 60:02d}]"
                     f" {case.case_id} {sub.name}: {verdict}")  # fmt: skip
    return rows, left_out
