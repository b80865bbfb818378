"""The four kinds of case, each a few comparisons, and the sweep driver."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.crosscheck.cases import (
    STAGES,
    Case,
    list_cases,
    parse_devices,
    parse_dtypes,
    shard_cases,
)
from pyverify.crosscheck.compare import Comparer, as_numpy, sdpa_error
from pyverify.crosscheck.results import CrosscheckResult, CrosscheckRow
from pyverify.dispatch import refusals
from pyverify.errors import InputValueError
from pyverify.output import Progress
from pyverify.precision import TORCH_DTYPES, compute_dtype
from pyverify.reference import load_g_lm
from pyverify.tolerance import (
    MPMATH_DPS,
    TOL_FLOAT64,
    output_tolerance_rules,
    output_tolerances,
    stage_tolerances,
)

__all__ = ["random_reference", "run_case", "run_crosscheck", "trained_reference"]


# Metric-learner sizes of the random heads (as the kernel tests).
_A_DFF, _N_RES, _N_DENSE = 12, 2, 2


def _inputs(case: Case) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Deterministic ``q, k, v`` (B, H, S, dk), rounded to the case's dtype, on its device."""
    rng = np.random.default_rng(case.seed)
    dt = TORCH_DTYPES[case.dtype]
    return tuple(  # type: ignore[return-value]
        torch.tensor(rng.normal(size=case.shape)).to(device=case.device, dtype=dt) for _ in range(3)
    )


def _scores_like_kernel(q: torch.Tensor, k: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """The scores the kernels hand to SDPA, ``(Q G) K^T / sqrt(dk)`` in the compute dtype.

    float64/float32: ``Q G`` in the input dtype; bfloat16/float16: the
    compensated split ``Q G = hi + lo`` (:func:`pyverify.kernels.split_query_product`),
    accumulated in float32 as SDPA does.
    """
    from pyverify.kernels import split_query_product
    from pyverify.kernels.head import rotate_query

    dk = q.shape[-1]
    if q.dtype in (torch.float64, torch.float32):
        return torch.matmul(rotate_query(q, G), k.transpose(-1, -2)) * dk**-0.5
    hi, lo = split_query_product(q, G)
    kf = k.float().transpose(-1, -2)
    return (torch.matmul(hi.float(), kf) + torch.matmul(lo.float(), kf)) * dk**-0.5


def _reference_heads(case: Case) -> list:
    from pyverify.reference import PLGAParams

    dk, H = case.shape[3], case.shape[1]
    return [
        PLGAParams.random(dk, _A_DFF, _N_RES, _N_DENSE, seed=(case.seed + 7919 * h) % 2**32)
        for h in range(H)
    ]


def _dummy_head(dk: int) -> Any:
    """A PLGAParams the G-cached path requires but does not use."""
    from pyverify.reference import PLGAParams

    return PLGAParams.random(dk, 1, 0, 0, seed=0)


def random_reference(case: Case) -> tuple[tuple[torch.Tensor, ...], list, Any]:
    """A ``random`` case's ``(q, k, v)`` (rounded, on its device), heads and float64 result."""
    from pyverify.reference import plga_forward_batched

    heads = _reference_heads(case)
    q, k, v = _inputs(case)
    ref = plga_forward_batched(*(as_numpy(t) for t in (q, k, v)), heads, causal=True)
    return (q, k, v), heads, ref


def trained_reference(case: Case) -> tuple[tuple[torch.Tensor, ...], np.ndarray, Any]:
    """A ``trained`` case's ``(q, k, v)``, its layer's ``G_LM`` (H, dk, dk), float64 result."""
    from pyverify.reference import plga_forward_batched

    _B, H, _S, dk = case.shape
    g_all = load_g_lm("trained")
    layer = int(case.layer or 0)
    if g_all.shape[1] != H or g_all.shape[2] != dk or not 0 <= layer < g_all.shape[0]:
        raise ValueError(
            f"trained G_LM has shape {g_all.shape}; case needs layer {layer}, H={H}, dk={dk}"
        )
    g = g_all[layer]
    q, k, v = _inputs(case)
    ref = plga_forward_batched(*(as_numpy(t) for t in (q, k, v)), _dummy_head(dk), True, G=g)
    return (q, k, v), g, ref


def _run_random(case: Case) -> list[CrosscheckRow]:
    import pyverify.kernels as kern

    (q, k, v), heads, ref = random_reference(case)
    p = kern.from_reference(heads, case.device, compute_dtype(case.dtype))
    out, ded = kern.plga_attention(q, k, v, p, return_deductive=True)
    G_ref = torch.tensor(ref.ded.G, device=case.device)
    e_sdpa = sdpa_error(q, k, v, q.double())
    e_qg = sdpa_error(q, k, v, torch.matmul(q.double(), G_ref))
    tol_ded, tol_sc = stage_tolerances(case.dtype)
    tol_out, tol_coll = output_tolerances(case.dtype, e_sdpa, e_qg)
    rule_out, rule_coll = output_tolerance_rules(case.dtype)
    unc = Comparer(case, "kernels.uncached", "reference.float64")
    rows = []
    for n in ("A", "A_LM", "A_P", "G"):
        got = getattr(ded, n)
        if n in ("A_LM", "A_P"):  # metric_positivity: every entry > 0
            mn = float(got.min())
            row = unc.stage(
                n, got, getattr(ref.ded, n), tol_ded, ("metric_positivity",),
                extra_ok=mn > 0, note=f"min entry {mn:.3g}",
            )  # fmt: skip
        else:
            row = unc.stage(n, got, getattr(ref.ded, n), tol_ded)
        rows.append(row)
    rows.append(unc.stage("scores", _scores_like_kernel(q, k, ded.G), ref.E, tol_sc))
    rows.append(unc.stage("output", out, ref.out, tol_out, rule=rule_out))
    Gk = G_ref.to(compute_dtype(case.dtype))
    out_g = kern.plga_attention(q, k, v, None, G=Gk)
    rows.append(
        Comparer(case, "kernels.g_cached", "reference.float64").stage(
            "output", out_g, ref.out, tol_out, ("cache_equivalence",), rule=rule_out
        )
    )
    out_c = kern.collapsed_attention(q, k, v, Gk)
    rows.append(
        Comparer(case, "kernels.collapsed", "reference.float64").stage(
            "output", out_c, ref.out, tol_coll, ("collapse_absorption",), rule=rule_coll
        )
    )
    return rows


def _run_mpmath(case: Case) -> list[CrosscheckRow]:
    from pyverify.reference import mp, plga_forward_batched

    B, H, S, dk = case.shape
    if S > 16 or dk > 8:
        raise ValueError(f"mpmath cases are limited to S <= 16, dk <= 8; got {case.shape}")
    heads = _reference_heads(case)
    q, k, v = (as_numpy(t) for t in _inputs(case))
    r64 = plga_forward_batched(q, k, v, heads, causal=True)
    rmp = [
        [
            mp.to_numpy(
                mp.plga_forward_full(
                    q[b, h], k[b, h], v[b, h], heads[h], causal=True, dps=MPMATH_DPS
                )
            )
            for h in range(H)
        ]
        for b in range(B)
    ]

    def exact(get) -> np.ndarray:  # type: ignore[no-untyped-def]
        return np.stack([np.stack([get(r) for r in row]) for row in rmp])

    cmp = Comparer(case, "reference.float64", "mpmath")
    got = {n: getattr(r64.ded, n) for n in STAGES[:4]} | {"scores": r64.E, "output": r64.out}
    want = {n: exact(lambda r, n=n: getattr(r.ded, n)) for n in STAGES[:4]}
    want |= {"scores": exact(lambda r: r.E), "output": exact(lambda r: r.out)}
    return [cmp.stage(s, got[s], want[s], TOL_FLOAT64) for s in STAGES]


def _run_trained(case: Case) -> list[CrosscheckRow]:
    import pyverify.kernels as kern

    (q, k, v), g, ref = trained_reference(case)
    layer = int(case.layer or 0)
    G64 = torch.tensor(g, device=case.device)
    Gk = G64.to(compute_dtype(case.dtype))  # exact: the file holds float32 numbers
    e_sdpa = sdpa_error(q, k, v, q.double())
    e_qg = sdpa_error(q, k, v, torch.matmul(q.double(), G64))
    _, tol_sc = stage_tolerances(case.dtype)
    tol_out, tol_coll = output_tolerances(case.dtype, e_sdpa, e_qg)
    rule_out, rule_coll = output_tolerance_rules(case.dtype)
    note = f"G_LM layer {layer}; max|E| {np.abs(ref.E).max():.3g}"
    cached = Comparer(case, "kernels.g_cached", "reference.float64", note)
    out_g = kern.plga_attention(q, k, v, None, G=Gk)
    out_c = kern.collapsed_attention(q, k, v, Gk)
    return [
        cached.stage("scores", _scores_like_kernel(q, k, Gk), ref.E, tol_sc),
        cached.stage("output", out_g, ref.out, tol_out, ("cache_equivalence",), rule=rule_out),
        Comparer(case, "kernels.collapsed", "reference.float64", note).stage(
            "output", out_c, ref.out, tol_coll, ("collapse_absorption",), rule=rule_coll
        ),
    ]


def _run_identity(case: Case) -> list[CrosscheckRow]:
    import pyverify.kernels as kern
    from pyverify.reference import plga_forward_batched

    _B, H, _S, dk = case.shape
    g = load_g_lm("identity")[int(case.layer or 0)]
    if g.shape != (H, dk, dk):
        raise ValueError(f"identity G_LM layer has shape {g.shape}; case needs ({H}, {dk}, {dk})")
    q, k, v = _inputs(case)
    Gk = torch.tensor(g, device=case.device, dtype=compute_dtype(case.dtype))
    out_g = kern.plga_attention(q, k, v, None, G=Gk)
    sdpa64 = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    e_sdpa = sdpa_error(q, k, v, q.double())
    tol, _ = output_tolerances(case.dtype, e_sdpa, e_sdpa)
    thm = ("sdpa_special_case",)
    note = f"identity G_LM; torch SDPA's own error at {case.dtype}: {e_sdpa:.2e}"
    rows = [
        Comparer(case, "kernels.g_cached", "torch.sdpa.float64", note).stage(
            "output", out_g, sdpa64, tol, thm, rule=output_tolerance_rules(case.dtype, "Q")[0]
        )
    ]
    if case.dtype == "float64":
        ref = plga_forward_batched(*(as_numpy(t) for t in (q, k, v)), _dummy_head(dk), G=g)
        rows.append(
            Comparer(
                case, "reference.float64", "torch.sdpa.float64",
                "float64 reference with G = I vs float64 SDPA",
            ).stage("output", ref.out, sdpa64, TOL_FLOAT64, thm)
        )  # fmt: skip
    return rows


_RUNNERS: dict[str, Callable[[Case], list[CrosscheckRow]]] = {
    "random": _run_random,
    "mpmath": _run_mpmath,
    "trained": _run_trained,
    "identity": _run_identity,
}


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
