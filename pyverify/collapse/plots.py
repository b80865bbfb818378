"""Figures of a collapse run, drawn from ``collapse.json`` alone.

``draw_all(out_dir)`` (or ``pyverify collapse --plots-only``) regenerates every
PNG from the saved JSON, so each figure shows exactly the numbers in the file.
Per-layer x head curves: one line per (layer, head); one panel per run where
runs are compared side by side, else one colour per run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyverify.errors import InputValueError, MissingInputError

__all__ = ["FIGURES", "draw_all"]

FIGURES = ("order_parameter.png", "pairwise_order.png", "rank.png", "losses.png")
COLOURS = {
    "author": "tab:red",
    "frozen": "tab:gray",
    "no-decay": "tab:green",
    "spread-init": "tab:purple",
    "subcritical": "tab:blue",
    "last-only": "tab:orange",
    "prompt-A": "tab:brown",
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


def _save(fig: Any, path: Path) -> None:
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
    _save(fig, paths[-1])

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
    _save(fig, paths[-1])

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, run in runs.items():
        _per_head(
            ax, run["history"], lambda h: h["sigma2_over_sigma1_A"], COLOURS.get(name, "k"), name
        )
    ax.set(yscale="log", xlabel="step", ylabel="sigma2/sigma1 of A (per layer x head)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    paths.append(out_dir / FIGURES[2])
    _save(fig, paths[-1])

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, run in runs.items():
        hist = run["history"]
        c = COLOURS.get(name, "k")
        ax.plot([h["step"] for h in hist], [h["val_loss"] for h in hist], color=c, label=name)
        if "causal_val_loss" in run:
            ax.plot([hist[-1]["step"]], [run["causal_val_loss"]], "o", color=c, ms=5)
    base = result["baseline"]["val_loss_by_order"]
    for n, v in enumerate(base, 1):
        if n >= 2:
            ax.axhline(v, color="k", lw=0.8, ls=":")
            ax.text(0, v, f" {n}-gram", fontsize=7, va="bottom")
    ax.set(
        xlabel="step",
        ylabel="validation loss (nats/byte)",
        title="teacher-forced (lines) and causal (dots) loss vs n-gram",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    paths.append(out_dir / FIGURES[3])
    _save(fig, paths[-1])
    plt.close("all")
    return paths
