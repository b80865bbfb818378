"""The report's "Empirical collapse: the ablation study" section, read from ``reports/collapse/``.

Reads the last saved ``pyverify collapse`` study (``collapse.json`` and, for
wall times, ``timings.json``, through :func:`pyverify.claims.ledger.load_study`,
as the ledger does) and renders Markdown: the settings, the runs
side by side (per layer x head min / median / max at step 0 and at the end,
never the worst head alone), the n-gram baseline, cache fidelity against full
recomputation, and the figures. The verdicts are in the claims section
(:mod:`pyverify.report.claims_section`), computed by the ledger's rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyverify.claims.findings import LEAK_NATS
from pyverify.claims.ledger import NotAStudyError, load_study
from pyverify.claims.stats import flat, mmm, op_grid, pair_values
from pyverify.claims.trends import TREND_CI, TREND_FROM, run_trends, signed_mean_conditioned
from pyverify.errors import InputValueError, MissingInputError
from pyverify.report.collapse_plots import FIGURES
from pyverify.report.markdown import num, table

__all__ = ["COLLAPSE_DIR", "collapse_section"]

COLLAPSE_DIR = "collapse"
TITLE = "## Empirical collapse: the ablation study (measured)"
RUN_TEXT = {
    "author": "the author's init and recipe",
    "frozen": "metric learner and W, b, P, a, b_a kept at init",
    "no-decay": "no weight decay on P, a",
    "spread-init": "P ~ U[0.5, 1.5]",
    "subcritical": "lr / 10, warm-up x 10",
    "last-only": "the loss on the final position only",
    "prompt-A": "A from a prompt prefix, the loss on the rest",
}
"""What each named run changes against ``author`` (:mod:`pyverify.collapse.config`)."""


def _m3(values: list[float]) -> str:
    lo, med, hi = mmm(values)
    return f"{num(lo)} / {num(med)} / {num(hi)}"


def _signed(rec: dict[str, Any], t: str) -> str:
    """The signed-mean form: min / median / max where well-conditioned, the rest counted."""
    vals = signed_mean_conditioned(rec["pairwise_order"][t])
    good = [x for x, ok in vals if ok]
    bad = len(vals) - len(good)
    if not good:
        return f"ill-conditioned ({bad} of {len(vals)})"
    return _m3(good) + (f"; ill-conditioned {bad} of {len(vals)}" if bad else "")


def _run_rows(res: dict[str, Any], S_all: list[str]) -> list[list[str]]:
    base = res["baseline"]["val_loss_by_order"]
    best = min(range(len(base)), key=base.__getitem__)
    rows = []
    for name, run in res["runs"].items():
        if not run.get("history"):
            rows.append([name, "no measurement", *["–"] * (2 * len(S_all) + 3)])
            continue
        h0, h1 = run["history"][0], run["history"][-1]
        rows.append(
            [
                name + (" (**diverged**)" if "diverged" in run else ""),
                f"{num(run.get('causal_val_loss'))} / {num(h1['val_loss'])} "
                f"(best n-gram, order {best + 1}: {num(base[best])})",
                *[f"{_m3(op_grid(h0, 'G', S))} → {_m3(op_grid(h1, 'G', S))}" for S in S_all],
                *[_m3(op_grid(h1, "A", S)) for S in S_all],
                f"{_m3(pair_values(h0, 'G'))} → {_m3(pair_values(h1, 'G'))}",
                f"{_signed(h0, 'G')} → {_signed(h1, 'G')}",
                f"{_signed(h0, 'A')} → {_signed(h1, 'A')}",
                f"{_m3(flat(h0['sigma2_over_sigma1_A']))} → "
                f"{_m3(flat(h1['sigma2_over_sigma1_A']))}",
            ]
        )
    return rows


def _trend_rows(res: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Series x runs: log-slope per 1,000 steps [interval], or the series' status."""
    runs = {n: r for n, r in res["runs"].items() if r.get("history")}
    trends = {n: run_trends(r["history"]) for n, r in runs.items()}
    names: list[str] = []
    for t in trends.values():
        names += [k for k in t if k not in names]

    def cell(n: str, k: str) -> str:
        tr = trends[n].get(k)
        if tr is None:
            return "–"
        if tr.status != "ok":
            return tr.status
        ex = f", {tr.excluded} ill-cond." if tr.excluded else ""
        return f"{tr.slope:+.3g} [{tr.lo:+.3g}, {tr.hi:+.3g}]{ex}"

    return ["series", *runs], [[k, *(cell(n, k) for n in runs)] for k in names]


def _struct_rows(res: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, run in res["runs"].items():
        if not run.get("history"):
            continue
        h = run["history"][-1]
        rows.append(
            [
                name,
                _m3(flat(h["identical_rows_residual_A"])),
                _m3(flat(h["cross_head_residual_A"])),
                _m3(flat(h["numerical_rank_A_LM"])),
                _m3(flat(h["floor_fraction_A_LM"])),
                _m3(flat(h["jacobian_top_sv"])),
                _m3(flat(h["mean_abs_P"])),
                _m3(flat(h["norm_a"])),
                _m3(flat(h["commutant_residual_G"])),
            ]
        )
    return rows


def _fid_rows(res: dict[str, Any], tim: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, run in res["runs"].items():
        f = run.get("fidelity")
        if not f:
            continue
        t = tim.get("runs", {}).get(name, {})
        for k, label in (
            ("prompt_G", "prompt's G-cache"),
            ("kv_A", "author's KV-cache (A at the prompt)"),
            ("mean_G", "probe-mean G"),
        ):
            c = f[k]
            speed = "–"
            if k == "prompt_G" and t:
                speed = f"{num(t.get('speedup'))}× ({num(t.get('speedup_g_over_kv_a'))}×)"
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


def collapse_section(report_dir: Path) -> list[str]:
    """Markdown lines of the section (a short note when no study has been saved)."""
    d = report_dir / COLLAPSE_DIR
    lines = [TITLE, ""]
    try:
        res, tim_or_none = load_study(d)
    except NotAStudyError:
        return [*lines, "The saved run is not an ablation study: rerun `pyverify collapse`.", ""]
    except (MissingInputError, InputValueError):  # absent or unreadable
        return [
            *lines,
            "No saved study: `pyverify collapse` (or `pyverify report --collapse`).",
            "",
        ]
    tim = tim_or_none or {"runs": {}}
    s, m = res["settings"], res["settings"]["model"]
    S_all = [str(x) for x in sorted(s["s_measure"])]
    b = res["baseline"]
    lines += [
        "A measurement, not a proof: one small PLDR decoder (the spec's model) trained on the "
        "vendored Python 3.11 documentation (bytes, 90/10 split) under controlled "
        "variations; data [collapse/collapse.json](collapse/collapse.json) (deterministic), "
        "wall times [collapse/timings.json](collapse/timings.json). Rerun with "
        "`pyverify collapse` (resumable: `--resume`).",
        "",
        f"Settings (fixed in `pyverify/collapse/config.py` before the first full run): "
        f"{m['num_layers']} layers, {m['num_heads']} heads, d_model {m['d_model']} "
        f"(dk {m['d_model'] // m['num_heads']}), metric learner {m['num_reslayer']} residual "
        f"units x {m['num_dense']} SwiGLU (width {m['a_dff']}); {s['steps']} steps of batch "
        f"{s['batch']} x {s['seq']} bytes; AdamW betas {s['betas']}, eps {s['adam_eps']:g}, "
        f"weight decay {s['weight_decay']:g}, gradients clipped by value at "
        f"{s['grad_clip_value']:g}, warm-up then cosine to {s['min_lr_frac']:.0%}; measured every "
        f"{s['measure_every']} steps. Runs (steps): "
        + ", ".join(
            f"`{n}` ({RUN_TEXT.get(n, 'see config.py')}; "
            f"{r['history'][-1]['step'] if r.get('history') else 0})"
            for n, r in res["runs"].items()
        )
        + ".",
        "",
        f"Baseline: {b['model']}; validation loss by order "
        + ", ".join(f"{i}: {num(v)}" for i, v in enumerate(b["val_loss_by_order"], 1))
        + " nats/byte. The model's causal loss predicts each position from its prefix alone; "
        "the teacher-forced loss (one pass over the window) is not a next-token loss here, "
        "since G is computed from the whole window and so sees the later tokens.",
        "",
        "Per layer x head **min / median / max**, step 0 → end (the author's pairwise form "
        "pools the heads of a layer, over prompts x layers; its signed-mean form is shown "
        "only where its denominator is at least 1e-3 of the RMS scale, the rest counted as "
        "ill-conditioned):",
        "",
    ]
    lines += table(
        [
            "run",
            "val loss, causal / teacher-forced (end)",
            *[f"order param. G (S = {S})" for S in S_all],
            *[f"A, end (S = {S})" for S in S_all],
            "G pairwise, RMS",
            "G pairwise, signed-mean",
            "A pairwise, signed-mean",
            "σ2/σ1 of A",
        ],
        _run_rows(res, S_all),
    )
    header, trows = _trend_rows(res)
    lines += [
        "",
        f"Trends: the mean over layer x head (pairwise form: prompt x layer) of the "
        f"least-squares slope of ln(order parameter) per 1,000 steps, from {TREND_FROM:.0%} of "
        f"each run's steps to its end, with a {TREND_CI:.0%} bootstrap interval over heads "
        "(`pyverify/claims/trends.py`: seeded, deterministic; it spreads over this model's "
        "heads, not over training runs). Figure: [collapse/trends.png](collapse/trends.png).",
        "",
    ]
    lines += table(header, trows)
    leaks = [
        f"`{n}` ({num(r['causal_val_loss'])} causal vs {num(r['history'][-1]['val_loss'])} "
        "teacher-forced)"
        for n, r in res["runs"].items()
        if r.get("history")
        and "causal_val_loss" in r
        and r["causal_val_loss"] - r["history"][-1]["val_loss"] > LEAK_NATS
    ]
    lines += [
        "",
        f"Runs whose causal loss exceeds the teacher-forced one by more than {LEAK_NATS:g} "
        "nats/byte, i.e. that learned to read later tokens through G (a model that is not "
        "causal at inference): " + (", ".join(leaks) if leaks else "none") + ".",
    ]
    lines += ["", "Structure at the end (min / median / max over layers x heads):", ""]
    lines += table(
        [
            "run",
            "identical-rows res. A",
            "cross-head res. A (per layer)",
            "rank A_LM",
            "A_LM at ε floor",
            "Jacobian top σ",
            "mean abs(P)",
            "norm(a)",
            "RoPE-commutant res. G",
        ],
        _struct_rows(res),
    )
    lines += [
        "",
        f"Cache fidelity at the end, each against FULL RECOMPUTATION: {s['n_prompts']} prompts of "
        f"{s['prompt_len']} bytes, {s['n_new']} greedy tokens; logit gap teacher-forced on the "
        "uncached tokens; 'margin covers' = prompts whose every top-1 margin exceeds twice the "
        "gap; speed-up = full recomputation / KV+G-cache per token, in brackets the KV-cache "
        "storing A / KV+G-cache (the G-cache's own share; wall time, see timings.json). The "
        "author's KV-cache equals the prompt's G-cache by construction.",
        "",
    ]
    lines += table(
        ["run", "cache", "tokens identical", "max logit gap", "min top-1 margin",
         "margin covers", "speed-up"],
        _fid_rows(res, tim),
    )  # fmt: skip
    walls = [f"{n} {v.get('train_and_measure_s', 0):.0f} s" for n, v in tim.get("runs", {}).items()]
    if walls:
        lines += [
            "",
            f"Wall time ({tim.get('jobs')} runs at once, {tim.get('threads_per_run')} thread "
            f"each; load average before {tim.get('loadavg_before')}, after "
            f"{tim.get('loadavg_after')}; not reproducible): {'; '.join(walls)}; "
            f"total {tim.get('total_s', 0):.0f} s"
            + "".join(
                f"; an earlier session {e.get('total_s', 0):.0f} s (load before "
                f"{e.get('loadavg_before')}, after {e.get('loadavg_after')})"
                for e in tim.get("earlier_sessions", [])
            )
            + ".",
        ]
    lines += [""]
    lines += [f"![{f}](collapse/{f})" for f in FIGURES if (d / f).is_file()]
    return [*lines, ""]
