"""Figures of a collapse run, drawn from ``collapse.json`` alone.

``draw_all(out_dir)`` (or ``pyverify collapse --plots-only``) regenerates every
PNG from the saved JSON, so each figure shows exactly the numbers in the file.
Per-layer x head curves: one line per (layer, head); one panel per run where
runs are compared side by side, else one colour per run. ``trends.png``: every
run's log-slope per 1,000 steps of each order-parameter series with its
bootstrap interval (:mod:`pyverify.claims.trends`); ``exposure.png``: the
finding F1 (teacher-forced, causal and prompt-A validation loss beside the
best n-gram, and the online contract). A figure whose data the saved study
predates is drawn with what there is (a panel says "not measured").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyverify.errors import InputValueError, MissingInputError

__all__ = ["FIGURES", "draw_all", "save_figure"]

FIGURES = (
    "order_parameter.png",
    "pairwise_order.png",
    "rank.png",
    "losses.png",
    "trends.png",
    "exposure.png",
)
COLOURS = {
    "author": "tab:red",
    "frozen": "tab:gray",
    "no-decay": "tab:green",
    "spread-init": "tab:purple",
    "subcritical": "tab:blue",
    "last-only": "tab:orange",
    "prompt-A": "tab:brown",
    "exposure-free": "tab:olive",
}
TINY = 1e-18  # floor for log axes (an exact 0 is drawn at this height)


def _s_max(result: dict) -> str:
    return str(max(result["settings"]["s_measure"]))


def _per_head(ax: Any, hist: list[dict], get: Any, colour: str, label: str, ls: str = "-") -> None:
    steps = [h["step"] for h in hist]
    grids = [get(h) for h in hist]
    for layer in range(len(grids[0])):
        for head in range(len(grids[0][0])):
            ys = [max(g[layer][head], TINY) for g in grids]
            lab = label if layer == head == 0 else None
            ax.plot(steps, ys, color=colour, ls=ls, alpha=0.8, lw=1, label=lab)


def save_figure(fig: Any, path: Path) -> None:
    """Write ``fig`` to ``path`` (PNG, 80 dpi, no software stamp: the bytes are reproducible)."""
    fig.tight_layout()
    fig.savefig(path, dpi=80, metadata={"Software": None})


def _read(out_dir: Path) -> dict:
    src = out_dir / "collapse.json"
    if not src.is_file():
        raise MissingInputError(f"{src} not found: run `pyverify collapse` first")
    try:
        return json.loads(src.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputValueError(f"{src}: unreadable ({exc})") from exc


def draw_all(out_dir: Path) -> list[Path]:
    """Draw every figure of ``out_dir/collapse.json`` into ``out_dir``; return the paths.

    Raises :class:`~pyverify.errors.MissingInputError` when the file is absent and
    :class:`~pyverify.errors.InputValueError` when it is not JSON.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result = _read(out_dir)
    runs = {n: r for n, r in result["runs"].items() if r["history"]}
    S = _s_max(result)
    paths = []

    fig, axs = plt.subplots(
        1, len(runs), figsize=(3.2 * len(runs), 3.2), sharey=True, squeeze=False
    )
    for ax, (name, run) in zip(axs[0], runs.items(), strict=True):
        _per_head(ax, run["history"], lambda h: h["order_parameter"][S]["G"], "tab:red", "G")
        _per_head(ax, run["history"], lambda h: h["order_parameter"][S]["A"], "tab:blue", "A", "--")
        ax.set(yscale="log", xlabel="step", title=f"{name}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axs[0][0].set_ylabel(f"order parameter per layer x head (S = {S})")
    paths.append(out_dir / FIGURES[0])
    save_figure(fig, paths[-1])

    fig, axs = plt.subplots(
        1, len(runs), figsize=(3.2 * len(runs), 3.2), sharey=True, squeeze=False
    )
    for ax, (name, run) in zip(axs[0], runs.items(), strict=True):
        for t, c in (("G", "tab:red"), ("A", "tab:blue")):
            hist = run["history"]
            L = len(hist[0]["pairwise_order"][t]["rms"][0])
            for layer in range(L):
                ys = [
                    max(max(row[layer] for row in h["pairwise_order"][t]["rms"]), TINY)
                    for h in hist
                ]
                ax.plot(
                    [h["step"] for h in hist], ys, color=c, lw=1, label=t if layer == 0 else None
                )
        ax.set(yscale="log", xlabel="step", title=name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axs[0][0].set_ylabel("author's order_pair, RMS form (max over prompts, per layer)")
    paths.append(out_dir / FIGURES[1])
    save_figure(fig, paths[-1])

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, run in runs.items():
        _per_head(
            ax, run["history"], lambda h: h["sigma2_over_sigma1_A"], COLOURS.get(name, "k"), name
        )
    ax.set(yscale="log", xlabel="step", ylabel="sigma2/sigma1 of A (per layer x head)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    paths.append(out_dir / FIGURES[2])
    save_figure(fig, paths[-1])

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, run in runs.items():
        hist = run["history"]
        c = COLOURS.get(name, "k")
        ax.plot([h["step"] for h in hist], [h["val_loss"] for h in hist], color=c, label=name)
        if "causal_val_loss" in run:
            ax.plot([hist[-1]["step"]], [run["causal_val_loss"]], "o", color=c, ms=5)
    base = result["baseline"]["val_loss_by_order"]
    best = min(range(len(base)), key=base.__getitem__)
    for n, v in enumerate(base, 1):
        if n >= 2:
            strong = n - 1 == best
            ax.axhline(v, color="k", lw=1.4 if strong else 0.8, ls="-" if strong else ":")
            ax.text(0, v, f" {n}-gram" + (" (best: the gate)" if strong else ""), fontsize=7,
                    va="bottom")  # fmt: skip
    ax.set(
        xlabel="step",
        ylabel="validation loss (nats/byte)",
        title="teacher-forced (lines) and causal (dots) loss vs n-gram",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    paths.append(out_dir / FIGURES[3])
    save_figure(fig, paths[-1])

    paths.append(out_dir / FIGURES[4])
    _trends(plt, runs, paths[-1])
    paths.append(out_dir / FIGURES[5])
    _exposure(plt, result, runs, paths[-1])
    plt.close("all")
    return paths


TREND_PANELS = (
    ("suite form, shortest S", lambda S: f" (S={S[0]})"),
    ("suite form, longest S", lambda S: f" (S={S[-1]})"),
    ("author's pairwise form, RMS", lambda S: " pairwise RMS"),
    ("author's pairwise form, signed-mean", lambda S: " pairwise signed-mean"),
)
TENSOR_COLOURS = {"G": "tab:red", "A": "tab:blue", "A_LM": "tab:green", "A_P": "tab:purple"}


def _trends(plt: Any, runs: dict, path: Path) -> None:
    """Forest plot: per run and tensor, mean log-slope per 1,000 steps and its interval."""
    from pyverify.claims.trends import TREND_CI, run_trends

    names = list(runs)
    trends = {n: run_trends(r["history"]) for n, r in runs.items()}
    keys = list(runs[names[0]]["history"][0]["order_parameter"]) if names else []
    S = sorted(keys, key=int) if all(k.isdigit() for k in keys) else keys
    fig, axs = plt.subplots(1, len(TREND_PANELS), figsize=(3.6 * len(TREND_PANELS), 0.5 *
                            len(names) + 1.6), sharey=True, squeeze=False)  # fmt: skip
    for ax, (title, suffix) in zip(axs[0], TREND_PANELS, strict=True):
        shown = 0
        labelled: set[str] = set()
        for i, name in enumerate(names):
            for j, (t, c) in enumerate(TENSOR_COLOURS.items()):
                tr = trends[name].get(t + suffix(S)) if S else None
                if tr is None or tr.status != "ok":
                    continue
                y = i + (j - 1.5) * 0.15
                err = [[tr.slope - tr.lo], [tr.hi - tr.slope]]
                lab = t if t not in labelled else None
                labelled.add(t)
                ax.errorbar([tr.slope], [y], xerr=err, fmt="o", color=c, ms=3, lw=1, label=lab)
                shown += 1
        if not shown:
            ax.text(0.5, 0.5, "not measured / too few records", ha="center",
                    transform=ax.transAxes, fontsize=8)  # fmt: skip
        ax.axvline(0, color="k", lw=0.8)
        ax.set(title=title, xlabel="log-slope per 1,000 steps")
        ax.grid(alpha=0.3)
        if shown:
            ax.legend(fontsize=6)
    axs[0][0].set_yticks(range(len(names)), names)
    fig.suptitle(f"trend of ln(order parameter), mean over layer x head ({TREND_CI:.0%} "
                 "bootstrap interval over heads)", fontsize=9)  # fmt: skip
    save_figure(fig, path)


def _exposure(plt: Any, result: dict, runs: dict, path: Path) -> None:
    """F1: three validation losses per run beside the best n-gram; the online contract."""
    import math

    names = list(runs)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    kinds = (("teacher-forced", lambda r: r.get("val_loss", r["history"][-1].get("val_loss"))),
             ("causal", lambda r: r.get("causal_val_loss")),
             ("prompt-A", lambda r: r.get("prompt_A_val_loss")))  # fmt: skip
    for k, (label, get) in enumerate(kinds):
        vals = [get(runs[n]) for n in names]
        xs = [i + (k - 1) * 0.27 for i in range(len(names))]
        ax.bar(xs, [math.nan if v is None else v for v in vals], width=0.27, label=label)
    base = result["baseline"]["val_loss_by_order"]
    ax.axhline(
        min(base), color="k", lw=1.2, label=f"best n-gram (order {base.index(min(base)) + 1})"
    )
    ax.set_xticks(range(len(names)), names, rotation=30, fontsize=7)
    ax.set(ylabel="validation loss (nats/byte)", title="F1: losses (the causal one gates)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    frac = [runs[n].get("online_contract", {}).get("fraction_changed") for n in names]
    ax2.bar(range(len(names)), [math.nan if f is None else f for f in frac], color="tab:gray")
    for i, n in enumerate(names):
        o = runs[n].get("online_contract")
        ax2.text(i, 0.02, "not measured" if o is None else f"max {o['max_abs_change']:.2g}",
                 rotation=90, fontsize=7, ha="center", va="bottom")  # fmt: skip
    ax2.set_xticks(range(len(names)), names, rotation=30, fontsize=7)
    ax2.set(ylim=(0, 1), ylabel="fraction of prefix logits that change",
            title="online contract (suffix replaced)")  # fmt: skip
    ax2.grid(alpha=0.3, axis="y")
    save_figure(fig, path)
