"""The report's "Empirical collapse (measured)" section, read from ``reports/collapse/``.

Reads the last saved ``pyverify collapse`` run (``collapse.json`` and, for
wall times, ``timings.json``) and renders Markdown: settings, per-regime
numbers, figures, and a plain statement of what was and was not reproduced.
The verdicts are computed from the numbers against the thresholds written
here, never typed in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyverify.collapse.plots import FIGURES
from pyverify.report.markdown import num, table

__all__ = ["COLLAPSED_BELOW", "COLLAPSE_DIR", "collapse_section"]

COLLAPSE_DIR = "collapse"
COLLAPSED_BELOW = 1e-6
"""An order parameter below this counts as collapsed (the paper reports 1e-6 to 1e-11)."""

TENSORS = ("A", "A_LM", "A_P", "G")


def _mx(grid: list[list[float]]) -> float:
    return max(max(row) for row in grid)


def _mn(grid: list[list[float]]) -> float:
    return min(min(row) for row in grid)


def _range(grid: list[list[float]]) -> str:
    return f"{num(_mn(grid))} – {num(_mx(grid))}"


def _regime_cells(name: str, reg: dict[str, Any]) -> list[str]:
    first, last = reg["history"][0], reg["history"][-1]
    cells = [name, f"{reg['peak_lr']:g} / {reg['warmup_frac']:.0%}", num(last["val_loss"])]
    cells += [
        f"{num(_mx(first['order_parameter'][t]))} → {num(_mx(last['order_parameter'][t]))}"
        for t in TENSORS
    ]
    return [*cells, num(_mx(last["eps_G"]))]


def _struct_cells(name: str, last: dict[str, Any]) -> list[str]:
    keys = (
        "sigma2_over_sigma1_A",
        "numerical_rank_A",
        "sigma2_over_sigma1_A_LM",
        "numerical_rank_A_LM",
        "identical_rows_residual_A",
        "commutant_residual_G",
    )
    return [name, *(_range(last[k]) for k in keys)]


def _fid_cells(name: str, reg: dict[str, Any], tim: dict[str, Any]) -> list[list[str]]:
    f = reg.get("fidelity")
    if not f:
        return []
    rows = []
    for k, label in (("prompt_G", "prompt's G-cache"), ("mean_G", "probe-mean G")):
        c = f[k]
        speed = num(None)
        if k == "prompt_G" and tim:
            speed = f"{num(tim.get('speedup'))}× ({num(tim.get('speedup_g_over_kv_a'))}×)"
        rows.append(
            [
                name,
                label,
                f"{c['tokens_identical']}/{f['n_prompts']}",
                num(c["max_logit_gap"]),
                num(f["min_top1_margin"]),
                f"{c['margin_covers_gap']}/{f['n_prompts']}",
                speed,
            ]
        )
    return rows


def _verdicts(res: dict[str, Any]) -> list[str]:
    out = []
    for name, reg in res["regimes"].items():
        last = reg["history"][-1]
        op = {t: _mx(last["order_parameter"][t]) for t in TENSORS}
        collapsed = [t for t in TENSORS if op[t] < COLLAPSED_BELOW]
        rank1 = _mx(last["sigma2_over_sigma1_A"]) < COLLAPSED_BELOW
        rows = _mx(last["identical_rows_residual_A"]) < COLLAPSED_BELOW
        f = reg.get("fidelity") or {}
        exact = f and f["prompt_G"]["tokens_identical"] == f["n_prompts"]
        out.append(
            f"- **{name}**: invariance of the deductive tensors (order parameter < "
            f"{COLLAPSED_BELOW:g} in every head) "
            + (f"reproduced for {', '.join(collapsed)}" if collapsed else "**not reproduced**")
            + f" (largest: {', '.join(f'{t} {num(op[t])}' for t in TENSORS)}); rank-one A "
            + ("reproduced" if rank1 else "**not reproduced**")
            + "; identical rows of A "
            + ("reproduced" if rows else "**not reproduced**")
            + "; G-cached greedy decoding identical to uncached on every prompt: "
            + ("yes" if exact else "**no**" if f else "not measured")
            + "."
        )
    return out


def collapse_section(report_dir: Path) -> list[str]:
    """Markdown lines of the section (a short note when no run has been saved)."""
    d = report_dir / COLLAPSE_DIR
    lines = ["## Empirical collapse (measured)", ""]
    try:
        res = json.loads((d / "collapse.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [*lines, "No saved run: `pyverify collapse` (or `pyverify report --collapse`).", ""]
    try:
        tim = json.loads((d / "timings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tim = {"regimes": {}}
    s, m = res["settings"], res["settings"]["model"]
    lines += [
        "A measurement, not a proof: a small PLDR decoder (spec's model, metric learner "
        "shared by the heads of a layer) trained on the vendored Python 3.11 documentation "
        "(bytes, 90/10 split) in two regimes; data [collapse/collapse.json]"
        "(collapse/collapse.json) (deterministic), wall times "
        "[collapse/timings.json](collapse/timings.json). Rerun with `pyverify collapse` "
        "(figures alone: `pyverify collapse --plots-only`; in the report: "
        "`pyverify report --collapse`).",
        "",
        f"Settings: {m['num_layers']} layers, {m['num_heads']} heads, d_model {m['d_model']} "
        f"(dk {m['d_model'] // m['num_heads']}), dff {m['dff']}, metric learner "
        f"{m['num_reslayer']} residual units x {m['num_dense']} SwiGLU (width {m['a_dff']}); "
        f"{s['steps']} steps of batch {s['batch']} x {s['seq']} bytes, AdamW (wd "
        f"{s['weight_decay']:g}, betas {s['betas']}), linear warm-up + cosine to "
        f"{s['min_lr_frac']:.0%}, seed {s['seed']}; measured every {s['measure_every']} steps "
        f"on {s['n_probe']} fixed validation probes of {s['seq']} bytes. Regimes (peak lr / "
        "warm-up) fixed before any run, not tuned (see `pyverify/collapse/config.py`): "
        "`critical` = the largest commonly stable lr with a short warm-up, `subcritical` = "
        "10x smaller lr with a long warm-up.",
        "",
    ]
    lines += table(
        [
            "regime",
            "peak lr / warm-up",
            "val loss (end)",
            "order param. A (start → end)",
            "A_LM",
            "A_P",
            "G",
            "eps_G (end)",
        ],
        [_regime_cells(name, reg) for name, reg in res["regimes"].items()],
    )
    lines += [
        "",
        "Order parameters and eps_G: the largest over layers x heads. Structure at the end "
        f"(range over layers x heads; numerical rank: singular values above "
        f"{s['rank_rtol']:g} sigma_1, mean over probes):",
        "",
    ]
    lines += table(
        [
            "regime",
            "sigma2/sigma1 of A",
            "rank A",
            "sigma2/sigma1 of A_LM",
            "rank A_LM",
            "identical-rows residual of A",
            "RoPE-commutant residual of G",
        ],
        [_struct_cells(name, reg["history"][-1]) for name, reg in res["regimes"].items()],
    )
    lines += [
        "",
        f"Cache fidelity at the end: {s['n_prompts']} prompts of {s['prompt_len']} bytes, "
        f"{s['n_new']} greedy tokens; logit gap teacher-forced on the uncached tokens; "
        "'margin covers' = prompts whose every top-1 margin exceeds twice the gap "
        "(`score_perturbation`); speed-up = time per token of full recomputation / of the "
        "KV+G-cache, in brackets of the reference's KV-cache that stores A (steps 4-6 "
        "recomputed) / of the KV+G-cache, i.e. the G-cache's own share (float32, best of "
        "3 interleaved, see timings.json).",
        "",
    ]
    lines += table(
        [
            "regime",
            "cache",
            "tokens identical",
            "max logit gap",
            "min top-1 margin",
            "margin covers",
            "speed-up",
        ],
        [
            row
            for name, reg in res["regimes"].items()
            for row in _fid_cells(name, reg, tim["regimes"].get(name, {}))
        ],
    )
    lines += [
        "",
        "Order parameter (largest over layers x heads) vs context length S at the end:",
        "",
    ]
    for name, reg in res["regimes"].items():
        ovl = reg.get("order_vs_length")
        if ovl:
            lines.append(
                f"- {name}: "
                + "; ".join(
                    f"S={S}: " + ", ".join(f"{t} {num(ovl[t][i])}" for t in TENSORS)
                    for i, S in enumerate(ovl["S"])
                )
            )
    walls = [
        f"{n} {v['train_s']:.0f} s training + {v['final_s']:.0f} s final"
        for n, v in tim["regimes"].items()
    ]
    if walls:
        lines += [
            "",
            f"Wall time ({tim.get('threads')} thread(s); as measured, not reproducible, and "
            f"possibly under load: see timings.json): {'; '.join(walls)}; "
            f"total {tim.get('total_s', 0):.0f} s.",
        ]
    lines += ["", "What was and was not reproduced (computed from the numbers above):", ""]
    lines += _verdicts(res)
    lines += [""]
    lines += [f"![{f}](collapse/{f})" for f in FIGURES if (d / f).is_file()]
    return [*lines, ""]
