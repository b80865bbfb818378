"""Hand-made study results (the shape of ``collapse.json``) for the ledger's rule tests."""

from __future__ import annotations

import copy
from typing import Any

S_LO, S_HI = 32, 64
DK = 32


def _grid(x: float) -> list[list[float]]:
    return [[x, x]]  # one layer, two heads


def record(
    step: int,
    *,
    op: float,
    val_loss: float = 1.5,
    ratio: float = 0.7,
    rows: float = 0.9,
    rank_lm: float = 30.0,
    comm: float = 0.05,
    jac: float = 0.5,
    a_lo: float = 0.2,
    a_hi: float = 0.1,
    pair: float | None = None,
) -> dict[str, Any]:
    """One measurement: every deductive tensor's order parameter ``op`` (A's by length)."""
    pair = op if pair is None else pair
    ops = {}
    for S, a in ((S_LO, a_lo), (S_HI, a_hi)):
        ops[str(S)] = {"A": _grid(max(a, op)), "A_LM": _grid(op), "A_P": _grid(op), "G": _grid(op)}
    return {
        "step": step,
        "val_loss": val_loss,
        "order_parameter": ops,
        "eps_G": {str(S): _grid(2 * op) for S in (S_LO, S_HI)},
        "pairwise_order": {
            t: {"rms": [[pair]], "signed_mean": [[pair]]} for t in ("A", "A_LM", "A_P", "G")
        },
        "sigma2_over_sigma1_A": _grid(ratio),
        "identical_rows_residual_A": _grid(rows),
        "cross_head_residual_A": [rows],
        "numerical_rank_A_LM": _grid(rank_lm),
        "floor_fraction_A_LM": _grid(0.0),
        "commutant_residual_G": _grid(comm),
        "jacobian_top_sv": _grid(jac),
        "mean_abs_P": _grid(0.02),
        "norm_a": _grid(1.0),
    }


def fidelity(identical: int, covers: int, n: int = 20) -> dict[str, Any]:
    mode = {"tokens_identical": identical, "max_logit_gap": 0.1, "margin_covers_gap": covers}
    return {
        "n_prompts": n,
        "min_top1_margin": 0.01,
        "prompt_G": dict(mode),
        "kv_A": dict(mode),
        "mean_G": dict(mode),
    }


def study(
    *,
    author_op: float = 1e-8,
    author_end: dict[str, Any] | None = None,
    sub_op: float = 1e-2,
    other_op: float = 1e-2,
    val_loss: float = 1.5,
    fid: tuple[int, int] = (20, 20),
) -> dict[str, Any]:
    """A study whose author run ends at order parameter ``author_op`` (rank one by default)."""
    end = {"ratio": 1e-9, "rows": 1e-9, "a_lo": 0.0, "a_hi": 0.0}
    end.update(author_end or {})
    runs: dict[str, Any] = {
        "author": {
            "history": [record(0, op=0.1), record(100, op=author_op, val_loss=1.0, **end)],
            "fidelity": fidelity(*fid),
            "causal_val_loss": val_loss,
        }
    }
    for name, op in (
        ("frozen", other_op),
        ("no-decay", other_op),
        ("spread-init", other_op),
        ("subcritical", sub_op),
    ):
        runs[name] = {
            "history": [record(0, op=0.1), record(100, op=op)],
            "fidelity": fidelity(20, 20),
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
        "baseline": {"model": "n-gram", "val_loss_by_order": [3.5, 2.8, 2.2, 1.7, 1.5]},
        "runs": runs,
    }


def timings(speedup: float) -> dict[str, Any]:
    return {
        "runs": {
            "author": {
                "speedup_g_over_kv_a": speedup,
                "speedup": 3 * speedup,
                "g_cached_s_per_token": 1e-4,
            }
        }
    }


def variant(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out.update(changes)
    return out
