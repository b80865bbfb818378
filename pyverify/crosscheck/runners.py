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
from pyverify.crosscheck.compare import Comparer, Proved, as_numpy, sdpa_error
from pyverify.crosscheck.results import CrosscheckResult, CrosscheckRow
from pyverify.dispatch import refusals
from pyverify.errors import InputValueError
from pyverify.output import Progress
from pyverify.precision import TORCH_DTYPES, UNIT_ROUNDOFF, compute_dtype
from pyverify.reference import load_g_lm
from pyverify.tolerance import MPMATH_DPS, TOL_FLOAT64, output_tolerance, stage_tolerances

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


# --------------------------------------------------------------------------- proved bounds
#: Theorem IDs of each stage's proved bound (``lean/Pldr/Float``; :mod:`pyverify.fp.models`).
_PROVED = {
    "A_LM": ("fp_mixed_precision", "fp_elementwise"),
    "A_P": ("fp_elementwise",),
    "G": ("fp_mixed_precision",),
    "scores": ("fp_head_scores", "fp_mixed_precision"),
    "output": ("fp_head_output", "fp_softmax", "fp_head_scores"),
}
#: Why the metric learner's output has no proved bound.
_NO_BOUND_A = "no proved bound: the learner's LayerNorm (Welford moments) is outside the model"
#: The mpmath oracle's own relative error at MPMATH_DPS digits (<< float64's rounding).
_MP_REL = 1e-30
_U64 = UNIT_ROUNDOFF["float64"]


def _per_slice(fn, *arrays):  # type: ignore[no-untyped-def]
    """``fn`` on every (batch, head) slice of the (B, H, ., .) arrays, stacked back."""
    B, H = arrays[0].shape[:2]
    return np.stack(
        [np.stack([fn(b, h, *(a[b, h] for a in arrays)) for h in range(H)]) for b in range(B)]
    )


def _proved(stage: str, fn) -> Proved:  # type: ignore[no-untyped-def]
    """The stage's proved bound from ``fn()``, or the premise that failed (no bound)."""
    try:
        return Proved(fn(), _PROVED[stage])
    except ValueError as exc:  # a theorem's premise does not hold for these inputs
        return Proved(None, _PROVED[stage], f"no proved bound: {exc}")


def _pipeline_bounds(ar, heads, got: dict, ref: dict, exact_is_mp: bool) -> dict[str, Proved]:  # type: ignore[no-untyped-def]
    """Stage-by-stage bounds of ``got`` vs ``ref`` for ``A_LM``, ``A_P``, ``G``.

    Each stage's exact value is the stage applied exactly to ``ref``'s input of that
    stage (the reference's, or mpmath's rounded to float64); ``got`` computed it from its
    own input, off by the measured difference. The bound is ``got``'s (arithmetic
    ``ar``) plus ``ref``'s (the float64 reference's, or the rounding of mpmath's value).
    """
    from pyverify.fp.models import (
        REFERENCE_ARITHMETIC as REF,
    )
    from pyverify.fp.models import (
        linear_stage_bound,
        metric_tensor_bound,
        power_stage_bound,
    )

    def slack(x):  # the exact input is within u64 |x| of a float64-rounded mpmath value
        return 2 * _U64 * np.abs(x) if exact_is_mp else 0.0 * x

    def want_err(x, b_ref):  # ref's own error: float64 rounding of mpmath, or the reference's
        return (_U64 + _MP_REL) * np.abs(x) * (1 + _U64) if exact_is_mp else b_ref

    def lm(b, h, A_g, A_r, want):
        p = heads[h]
        z = p.W @ A_r + p.b
        dz_t = linear_stage_bound(REF, p.W, A_r, p.b, dX=slack(A_r))
        zub = np.abs(z) + dz_t
        dz_g = linear_stage_bound(ar, p.W, A_g, p.b, dX=np.abs(A_g - A_r) + slack(A_r))
        own = metric_tensor_bound(ar, zub, dz_g, p.metric_eps)
        return own + want_err(want, metric_tensor_bound(REF, zub, dz_t, p.metric_eps))

    def pw(b, h, x_g, x_r, want):
        p = heads[h]
        P_held = p.P if ar.u_hold == 0 else p.P.astype(np.float32).astype(np.float64)
        own = power_stage_bound(ar, x_r, np.abs(x_g - x_r) + slack(x_r), p.P, P_held)
        return own + want_err(want, power_stage_bound(REF, x_r, slack(x_r), p.P, p.P))

    def gg(b, h, x_g, x_r, want):
        p = heads[h]
        own = linear_stage_bound(ar, p.a, x_g, p.b_a, dX=np.abs(x_g - x_r) + slack(x_r))
        return own + want_err(want, linear_stage_bound(REF, p.a, x_r, p.b_a, dX=slack(x_r)))

    return {
        "A_LM": _proved("A_LM", lambda: _per_slice(lm, got["A"], ref["A"], ref["A_LM"])),
        "A_P": _proved("A_P", lambda: _per_slice(pw, got["A_LM"], ref["A_LM"], ref["A_P"])),
        "G": _proved("G", lambda: _per_slice(gg, got["A_P"], ref["A_P"], ref["G"])),
    }


def _head_bounds(ar, q, k, v, G_used, G_exact, path_scores, path_out, ref_scores=True):  # type: ignore[no-untyped-def]
    """(scores, output) bounds per slice: ``ar``'s plus the float64 reference's.

    Both against exact arithmetic with ``G_exact`` on the same inputs (the reference's
    scores only when ``ref_scores``).
    """
    from pyverify.fp.models import REFERENCE_ARITHMETIC as REF
    from pyverify.fp.models import attention_bound, scores_bound

    def sc(b, h, qs, ks, g_used, g_ex):
        dG = np.abs(g_used - g_ex)
        own = scores_bound(ar, qs, ks, g_used, dG, path_scores)
        return own + (scores_bound(REF, qs, ks, g_ex, None, "reference") if ref_scores else 0)

    def out(b, h, qs, ks, vs, g_used, g_ex):
        dG = np.abs(g_used - g_ex)
        own = attention_bound(ar, qs, ks, vs, g_used, dG, path=path_out)
        return own + attention_bound(REF, qs, ks, vs, g_ex)

    B, H = q.shape[:2]
    Gu = np.broadcast_to(G_used, (B, H, *G_used.shape[-2:]))
    Ge = np.broadcast_to(G_exact, (B, H, *G_exact.shape[-2:]))
    return (
        _proved("scores", lambda: _per_slice(sc, q, k, Gu, Ge)),
        _proved("output", lambda: _per_slice(out, q, k, v, Gu, Ge)),
    )


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
    from pyverify.fp.models import arithmetic

    (q, k, v), heads, ref = random_reference(case)
    qn, kn, vn = (as_numpy(t) for t in (q, k, v))
    p = kern.from_reference(heads, case.device, compute_dtype(case.dtype))
    out, ded = kern.plga_attention(q, k, v, p, return_deductive=True)
    G_ref = torch.tensor(ref.ded.G, device=case.device)
    e_sdpa = sdpa_error(q, k, v, q.double())
    e_qg = sdpa_error(q, k, v, torch.matmul(q.double(), G_ref))
    tol_ded, tol_sc = stage_tolerances(case.dtype)
    tol_out, rule_out = output_tolerance(case.dtype, "uncached", e_sdpa, e_qg)
    tol_coll, rule_coll = output_tolerance(case.dtype, "collapsed", e_sdpa, e_qg)
    ar = arithmetic("kernels", case.dtype)
    got = {n: as_numpy(getattr(ded, n)) for n in ("A", "A_LM", "A_P", "G")}
    want = {n: getattr(ref.ded, n) for n in ("A", "A_LM", "A_P", "G")}
    proved = _pipeline_bounds(ar, heads, got, want, exact_is_mp=False)
    proved["A"] = Proved(None, (), _NO_BOUND_A)
    unc = Comparer(case, "kernels.uncached", "reference.float64")
    rows = []
    for n in ("A", "A_LM", "A_P", "G"):
        g = getattr(ded, n)
        if n in ("A_LM", "A_P"):  # metric_positivity: every entry > 0
            mn = float(g.min())
            row = unc.stage(
                n, g, want[n], tol_ded, ("metric_positivity",),
                extra_ok=mn > 0, note=f"min entry {mn:.3g}", proved=proved[n],
            )  # fmt: skip
        else:
            row = unc.stage(n, g, want[n], tol_ded, proved=proved[n])
        rows.append(row)
    reduced = case.dtype in ("bfloat16", "float16")
    sc_bound, out_bound = _head_bounds(
        ar, qn, kn, vn, got["G"], ref.ded.G, "split" if reduced else "matmul",
        "sdpa_split" if reduced else "sdpa",
    )  # fmt: skip
    rows.append(
        unc.stage("scores", _scores_like_kernel(q, k, ded.G), ref.E, tol_sc, proved=sc_bound)
    )
    rows.append(unc.stage("output", out, ref.out, tol_out, rule=rule_out, proved=out_bound))
    Gk = G_ref.to(compute_dtype(case.dtype))
    Gk_n = as_numpy(Gk)
    _, out_g_bound = _head_bounds(
        ar, qn, kn, vn, Gk_n, ref.ded.G, "sdpa", "sdpa_split" if reduced else "sdpa"
    )
    out_g = kern.plga_attention(q, k, v, None, G=Gk)
    rows.append(
        Comparer(case, "kernels.g_cached", "reference.float64").stage(
            "output",
            out_g,
            ref.out,
            tol_out,
            ("cache_equivalence",),
            rule=rule_out,
            proved=out_g_bound,
        )
    )
    _, out_c_bound = _head_bounds(
        ar, qn, kn, vn, Gk_n, ref.ded.G, "sdpa", "sdpa_rounded" if reduced else "sdpa"
    )
    out_c = kern.collapsed_attention(q, k, v, Gk)
    rows.append(
        Comparer(case, "kernels.collapsed", "reference.float64").stage(
            "output",
            out_c,
            ref.out,
            tol_coll,
            ("collapse_absorption",),
            rule=rule_coll,
            proved=out_c_bound,
        )
    )
    return rows


def _run_mpmath(case: Case) -> list[CrosscheckRow]:
    from pyverify.fp.models import REFERENCE_ARITHMETIC as REF
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
    proved = _pipeline_bounds(REF, heads, got, want, exact_is_mp=True)
    proved["A"] = Proved(None, (), _NO_BOUND_A)
    # the scores and output of mpmath's G (rounded to float64: within u64 |G|)
    g_mp = want["G"]
    dG = np.abs(got["G"] - g_mp) + 2 * _U64 * np.abs(g_mp)
    rnd = {n: (_U64 + _MP_REL) * (1 + _U64) * np.abs(want[n]) for n in ("scores", "output")}

    def sc(b, h, qs, ks, g, d):
        from pyverify.fp.models import scores_bound

        return scores_bound(REF, qs, ks, g, d, "reference")

    def out(b, h, qs, ks, vs, g, d):
        from pyverify.fp.models import attention_bound

        return attention_bound(REF, qs, ks, vs, g, d)

    proved["scores"] = _proved("scores", lambda: _per_slice(sc, q, k, got["G"], dG) + rnd["scores"])
    proved["output"] = _proved(
        "output", lambda: _per_slice(out, q, k, v, got["G"], dG) + rnd["output"]
    )
    return [cmp.stage(s, got[s], want[s], TOL_FLOAT64, proved=proved[s]) for s in STAGES]


def _run_trained(case: Case) -> list[CrosscheckRow]:
    import pyverify.kernels as kern
    from pyverify.fp.models import arithmetic

    (q, k, v), g, ref = trained_reference(case)
    layer = int(case.layer or 0)
    qn, kn, vn = (as_numpy(t) for t in (q, k, v))
    G64 = torch.tensor(g, device=case.device)
    Gk = G64.to(compute_dtype(case.dtype))  # exact: the file holds float32 numbers
    e_sdpa = sdpa_error(q, k, v, q.double())
    e_qg = sdpa_error(q, k, v, torch.matmul(q.double(), G64))
    _, tol_sc = stage_tolerances(case.dtype)
    tol_out, rule_out = output_tolerance(case.dtype, "uncached", e_sdpa, e_qg)
    tol_coll, rule_coll = output_tolerance(case.dtype, "collapsed", e_sdpa, e_qg)
    ar = arithmetic("kernels", case.dtype)
    reduced = case.dtype in ("bfloat16", "float16")
    gk = as_numpy(Gk)
    sc_bound, out_bound = _head_bounds(
        ar, qn, kn, vn, gk, g, "split" if reduced else "matmul", "sdpa_split" if reduced else "sdpa"
    )
    _, coll_bound = _head_bounds(
        ar, qn, kn, vn, gk, g, "sdpa", "sdpa_rounded" if reduced else "sdpa"
    )
    note = f"G_LM layer {layer}; max|E| {np.abs(ref.E).max():.3g}"
    cached = Comparer(case, "kernels.g_cached", "reference.float64", note)
    out_g = kern.plga_attention(q, k, v, None, G=Gk)
    out_c = kern.collapsed_attention(q, k, v, Gk)
    return [
        cached.stage("scores", _scores_like_kernel(q, k, Gk), ref.E, tol_sc, proved=sc_bound),
        cached.stage(
            "output", out_g, ref.out, tol_out, ("cache_equivalence",), rule=rule_out,
            proved=out_bound,
        ),
        Comparer(case, "kernels.collapsed", "reference.float64", note).stage(
            "output", out_c, ref.out, tol_coll, ("collapse_absorption",), rule=rule_coll,
            proved=coll_bound,
        ),
    ]  # fmt: skip


def _run_identity(case: Case) -> list[CrosscheckRow]:
    import pyverify.kernels as kern
    from pyverify.fp.models import REFERENCE_ARITHMETIC as REF
    from pyverify.fp.models import arithmetic, attention_bound
    from pyverify.reference import plga_forward_batched

    _B, H, _S, dk = case.shape
    g = load_g_lm("identity")[int(case.layer or 0)]
    if g.shape != (H, dk, dk):
        raise ValueError(f"identity G_LM layer has shape {g.shape}; case needs ({H}, {dk}, {dk})")
    q, k, v = _inputs(case)
    qn, kn, vn = (as_numpy(t) for t in (q, k, v))
    Gk = torch.tensor(g, device=case.device, dtype=compute_dtype(case.dtype))
    out_g = kern.plga_attention(q, k, v, None, G=Gk)
    sdpa64 = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    e_sdpa = sdpa_error(q, k, v, q.double())
    tol, rule = output_tolerance(case.dtype, "uncached", e_sdpa, e_sdpa, "Q")
    thm = ("sdpa_special_case",)
    note = f"identity G_LM; torch SDPA's own error at {case.dtype}: {e_sdpa:.2e}"
    ar = arithmetic("kernels", case.dtype)
    f64 = arithmetic("kernels", "float64")  # torch's float64 SDPA, the side compared with
    reduced = case.dtype in ("bfloat16", "float16")
    gk = as_numpy(Gk)

    def kern_vs_sdpa(b, h, qs, ks, vs, gh):
        own = attention_bound(ar, qs, ks, vs, gh, np.abs(gh - np.eye(dk)),
                              path="sdpa_split" if reduced else "sdpa")  # fmt: skip
        return own + attention_bound(f64, qs, ks, vs, None, path="sdpa_plain")

    def ref_vs_sdpa(b, h, qs, ks, vs):
        own = attention_bound(REF, qs, ks, vs, np.eye(dk))
        return own + attention_bound(f64, qs, ks, vs, None, path="sdpa_plain")

    gk4 = np.broadcast_to(gk, (qn.shape[0], *gk.shape))
    rows = [
        Comparer(case, "kernels.g_cached", "torch.sdpa.float64", note).stage(
            "output",
            out_g,
            sdpa64,
            tol,
            thm,
            rule=rule,
            proved=_proved("output", lambda: _per_slice(kern_vs_sdpa, qn, kn, vn, gk4)),
        )
    ]
    if case.dtype == "float64":
        ref = plga_forward_batched(qn, kn, vn, _dummy_head(dk), G=g)
        rows.append(
            Comparer(
                case, "reference.float64", "torch.sdpa.float64",
                "float64 reference with G = I vs float64 SDPA",
            ).stage(
                "output", ref.out, sdpa64, TOL_FLOAT64, thm,
                proved=_proved("output", lambda: _per_slice(ref_vs_sdpa, qn, kn, vn)),
            )
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
