"""Hand-made study results (the shape of ``collapse.json``) for the ledger's rule tests.

One layer and two heads (pairwise form: one prompt x one layer, duplicated to two
prompts so a bootstrap has two units), probe lengths 32 and 64. Every key of the
phase-1 record and final measurements is present; ``legacy`` drops the keys the
first study did not save. ``every_row`` feeds every rule one set of subjects (hand-made
or real).
"""

from __future__ import annotations

import copy
import math
from typing import Any

from pyverify.claims.findings import comparison_row, exposure_finding
from pyverify.claims.rules import e1, e2, e3, e4, e5, e6, e7, e8, n1, n2, n3, n7
from pyverify.claims.subject import Subject
from pyverify.claims.verdict import Verdict

S_LO, S_HI = 32, 64
DK = 32
RUNS = ("author", "frozen", "no-decay", "spread-init", "subcritical", "last-only", "prompt-A")
OBJECTIVE = {"last-only": "last", "prompt-A": "prompt-A"}


def _grid(x: float, y: float | None = None) -> list[list[float]]:
    return [[x, x if y is None else y]]  # one layer, two heads


def record(
    step: int,
    *,
    op: float,
    op2: float | None = None,
    val_loss: float = 1.5,
    ratio: float = 0.7,
    rows: float = 0.9,
    row_energy: float | None = None,
    rank_lm: float = 30.0,
    comm: float = 0.05,
    rho_comm: float = 0.05,
    jac: float = 0.5,
    a_lo: float = 0.2,
    a_hi: float = 0.1,
    pair: float | None = None,
    pair_scale: float = 1.0,
) -> dict[str, Any]:
    """One measurement: every deductive tensor's order parameter ``op`` (head 2: ``op2``).

    A's order parameter is ``max(a, op)`` at each length; the pairwise form is ``pair``
    (default ``op``) in both forms, with numerator ``pair`` and RMS scale / denominator 1.
    ``pair_scale``: the signed-mean denominator relative to the RMS scale.
    """
    pair = op if pair is None else pair
    ops = {}
    for S, a in ((S_LO, a_lo), (S_HI, a_hi)):
        g = _grid(op, op2)
        ops[str(S)] = {"A": _grid(max(a, op), max(a, op2 if op2 is not None else op)),
                       "A_LM": g, "A_P": g, "G": g}  # fmt: skip
    parts = {
        "rms": [[pair], [pair]],
        "signed_mean": [[pair / pair_scale], [pair / pair_scale]],
        "numerator": [[pair], [pair]],
        "signed_mean_denominator": [[pair_scale], [pair_scale]],
    }
    re_ = rows**2 if row_energy is None else row_energy
    return {
        "step": step,
        "val_loss": val_loss,
        "order_parameter": ops,
        "eps_G": {str(S): _grid(2 * op) for S in (S_LO, S_HI)},
        "pairwise_order": {t: copy.deepcopy(parts) for t in ("A", "A_LM", "A_P", "G")},
        "sigma2_over_sigma1_A": _grid(ratio),
        "identical_rows_residual_A": _grid(rows),
        "row_energy_A": _grid(re_),
        "cross_head_residual_A": [rows],
        "numerical_rank_A_LM": _grid(rank_lm),
        "floor_fraction_A_LM": _grid(0.0),
        "commutant_residual_G": _grid(comm),
        "commutant_residual_rho": _grid(rho_comm),
        "twirl_rho": {
            "commutant_fraction": _grid(1 - rho_comm**2),
            "commutant_fraction_unrotated": _grid(0.5),
            "offcommutant_suppression": _grid(0.9),
        },
        "jacobian_top_sv": _grid(jac),
        "mean_abs_P": _grid(0.02),
        "norm_a": _grid(1.0),
    }


def fidelity(
    identical: int, covers: int, n: int = 20, exceeded: int | None = None
) -> dict[str, Any]:
    """Cache fidelity: ``identical`` prompts with equal tokens, ``covers`` certified."""
    exceeded = max(0, n - identical) if exceeded is None else exceeded
    mode = {"tokens_identical": identical, "max_logit_gap": 0.1, "median_logit_gap": 0.05,
            "margin_covers_gap": covers, "step_margin_covers_gap": covers,
            "gap_exceeds_margin": exceeded}  # fmt: skip
    return {
        "n_prompts": n,
        "n_new": 16,
        "min_top1_margin": 0.01,
        "median_top1_margin": 0.5,
        "prompt_G": dict(mode),
        "kv_A": dict(mode),
        "mean_G": dict(mode),
    }


def final(
    causal: float,
    *,
    teacher: float = 1.0,
    fid: tuple[int, int] = (20, 20),
    own_kl: float = 1e-4,
    init_kl: float = 0.5,
    changed: int = 100,
) -> dict[str, Any]:
    """A run's end-of-run measurements (``measure_final``'s keys)."""
    cache = {
        "mean_kl": own_kl, "max_kl": 2 * own_kl, "native_nll": 1.5, "cached_nll": 1.5,
        "uncentred_energy": 1e-3, "native_context_variance": 0.1,
        "residual_context_variance": 1e-3, "relative_rms_context_centred": 0.1,
    }  # fmt: skip
    return {
        "val_loss": teacher,
        "causal_val_loss": causal,
        "prompt_A_val_loss": causal + 0.1,
        "fidelity": fidelity(*fid),
        "online_contract": {
            "sequences": 16,
            "prefix": 4,
            "changed": changed,
            "entries": 16384,
            "fraction_changed": changed / 16384,
            "max_abs_change": 0.01,
            "l2": 0.1,
        },
        "cache_contract": {
            "calibration_contexts": 16,
            "assessment_contexts": 256,
            "own": cache,
            "initial": {**cache, "mean_kl": init_kl, "max_kl": 2 * init_kl},
        },
    }


def study(
    *,
    author_op: float = 1e-8,
    author_end: dict[str, Any] | None = None,
    sub_op: float = 1e-2,
    other_op: float = 1e-2,
    val_loss: float = 1.4,
    fid: tuple[int, int] = (20, 20),
    run_loss: float = 1.4,
) -> dict[str, Any]:
    """A study whose author run ends at order parameter ``author_op`` (rank one by default).

    The best n-gram is at 1.5 (order 5); the author's causal loss is ``val_loss`` and
    every other run's ``run_loss`` (both beat it by default).
    """
    end = {"ratio": 1e-9, "rows": 1e-9, "a_lo": 0.0, "a_hi": 0.0}
    end.update(author_end or {})
    runs: dict[str, Any] = {
        "author": {
            "spec": {"name": "author", "objective": "all"},
            "history": [record(0, op=0.1), record(100, op=author_op, val_loss=1.0, **end)],
            **final(val_loss, teacher=1.0, fid=fid),
        }
    }
    for name in RUNS[1:]:
        op = sub_op if name == "subcritical" else other_op
        runs[name] = {
            "spec": {"name": name, "objective": OBJECTIVE.get(name, "all")},
            "history": [record(0, op=0.1), record(100, op=op)],
            **final(run_loss, teacher=1.5),
        }
    return {
        "study": "ablation",
        "settings": {
            "model": {
                "vocab": 256,
                "d_model": 2 * DK,
                "num_heads": 2,
                "num_layers": 1,
                "dff": 8,
                "a_dff": 4,
                "num_reslayer": 1,
                "num_dense": 1,
                "rope_base": 10000.0,
            },
            "steps": 100,
            "adam_eps": 1e-5,
            "weight_decay": 0.1,
            "grad_clip_value": 1.0,
            "min_lr_frac": 0.1,
            "measure_every": 100,
            "betas": [0.9, 0.95],
            "n_prompts": 20,
            "prompt_len": 32,
            "n_new": 16,
            "batch": 2,
            "seq": S_HI,
            "s_measure": [S_LO, S_HI],
        },
        "baseline": {
            "model": "n-gram",
            "val_loss_by_order": [3.5, 2.8, 2.2, 1.7, 1.5],
            "best_order": 5,
            "val_loss": 1.5,
        },
        "runs": runs,
    }


def trending(
    rates: tuple[float, float], *, steps: int = 1000, every: int = 100, start: float = 0.1
) -> list[dict[str, Any]]:
    """A history whose G (and every tensor) order parameter of head h is ``start * exp(r_h t)``,
    ``t`` in thousands of steps: a known log-slope per head."""
    out = []
    for step in range(0, steps + 1, every):
        t = step / 1000
        out.append(record(step, op=start * math.exp(rates[0] * t),
                          op2=start * math.exp(rates[1] * t)))  # fmt: skip
    return out


def timings(
    speedup: float, *, spread: float = 0.0, repeats: int = 7, runs: tuple[str, ...] = ("author",)
) -> dict[str, Any]:
    """Saved timings: per-repeat G-cache speed-ups evenly spread over ``speedup +- spread``."""
    per = [speedup + spread * (2 * i / max(1, repeats - 1) - 1) for i in range(repeats)]
    return {
        "runs": {
            name: {
                "speedup_g_over_kv_a": max(per),
                "speedup": 3 * speedup,
                "g_cached_s_per_token": 1e-4,
                "repeats": repeats,
                "speedup_g_over_kv_a_per_repeat": per,
                "speedup_per_repeat": [3 * p for p in per],
            }
            for name in runs
        }
    }


def legacy(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with only the keys the first study saved (before phase 1)."""
    out = copy.deepcopy(result)
    for run in out["runs"].values():
        for k in ("prompt_A_val_loss", "online_contract", "cache_contract", "val_loss"):
            run.pop(k, None)
        for mode in ("prompt_G", "kv_A", "mean_G"):
            for k in ("step_margin_covers_gap", "gap_exceeds_margin"):
                run.get("fidelity", {}).get(mode, {}).pop(k, None)
        for rec in run["history"]:
            for k in ("row_energy_A", "commutant_residual_rho", "twirl_rho"):
                rec.pop(k, None)
            for t in rec["pairwise_order"].values():
                t.pop("numerator", None)
                t.pop("signed_mean_denominator", None)
    return out


def variant(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out.update(changes)
    return out


def every_row(
    subjects: dict[str, Subject], result: dict[str, Any], tim: dict[str, Any] | None
) -> dict[str, Verdict]:
    """Every rule's row (E1-E8, N1-N3, N7, F1, F2) on ``subjects``, ``author`` deciding."""
    a, sub = subjects["author"], subjects.get("subcritical")
    return {
        "E1": e1(a), "E2": e2(a), "E3": e3(a), "E4": e4(a, sub), "E5": e5(result, tim),
        "E6": e6(a), "E7": e7(subjects), "E8": e8(a), "N1": n1(a), "N2": n2(a), "N3": n3(a),
        "N7": n7(subjects), "F1": exposure_finding(subjects),
        "F2": comparison_row("F2", subjects, gated=False),
    }  # fmt: skip
