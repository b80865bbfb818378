"""Figures of a collapse run, drawn from ``collapse.json`` alone.

``draw_all(out_dir)`` (or ``pyverify collapse --plots-only``) regenerates every
PNG from the saved JSON, so each figure shows exactly the numbers in the file.
Per-layer x head curves: one line per (layer, head), colour by regime.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyverify.errors import InputValueError, MissingInputError

__all__ = ["FIGURES", "draw_all"]

FIGURES = ("losses.png", "order_parameter.png", "invariance.png", "rank.png", "order_vs_length.png")
COLOURS = {"critical": "tab:red", "subcritical": "tab:blue"}
TINY = 1e-18  # floor for log axes (an exact 0 is drawn at this height)


def _curves(ax: Any, result: dict, key: str, log: bool = True) -> None:
    for name, reg in result["regimes"].items():
        hist = reg["history"]
        steps = [h["step"] for h in hist]
        grid = [h[key] if "." not in key else h[key.split(".")[0]][key.split(".")[1]] for h in hist]
        L, H = len(grid[0]), len(grid[0][0])
        for layer in range(L):
            for head in range(H):
                ys = [max(g[layer][head], TINY) if log else g[layer][head] for g in grid]
                lab = name if layer == head == 0 else None
                ax.plot(steps, ys, color=COLOURS.get(name), alpha=0.8, lw=1, label=lab)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def _save(fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=90, metadata={"Software": None})


def draw_all(out_dir: Path) -> list[Path]:
    """Draw every figure of ``out_dir/collapse.json`` into ``out_dir``; return the paths.

    Raises :class:`~pyverify.errors.MissingInputError` when the file is absent and
    :class:`~pyverify.errors.InputValueError` when it is not JSON.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    src = out_dir / "collapse.json"
    if not src.is_file():
        raise MissingInputError(f"{src} not found: run `pyverify collapse` first")
    try:
        result: dict = json.loads(src.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputValueError(f"{src}: unreadable ({exc})") from exc
    paths = []

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, reg in result["regimes"].items():
        h = [r for r in reg["history"] if r["train_loss"] is not None]
        c = COLOURS.get(name)
        ax.plot(
            [r["step"] for r in h],
            [r["train_loss"] for r in h],
            color=c,
            ls="--",
            label=f"{name} train",
        )
        ax.plot(
            [r["step"] for r in reg["history"]],
            [r["val_loss"] for r in reg["history"]],
            color=c,
            label=f"{name} validation",
        )
    ax.set(xlabel="step", ylabel="cross-entropy (nats/byte)", title="losses")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    paths.append(out_dir / FIGURES[0])
    _save(fig, paths[-1])

    fig, axs = plt.subplots(2, 2, figsize=(9, 6))
    for ax, t in zip(axs.flat, ("A", "A_LM", "A_P", "G"), strict=True):
        _curves(ax, result, f"order_parameter.{t}")
        ax.set_title(f"order parameter of {t} (per layer x head)", fontsize=9)
    paths.append(out_dir / FIGURES[1])
    _save(fig, paths[-1])

    fig, axs = plt.subplots(1, 2, figsize=(9, 3.5))
    _curves(axs[0], result, "eps_G")
    axs[0].set_title("eps_G of the first probe's G-cache", fontsize=9)
    _curves(axs[1], result, "commutant_residual_G", log=False)
    axs[1].set_title("RoPE-commutant residual of mean G", fontsize=9)
    paths.append(out_dir / FIGURES[2])
    _save(fig, paths[-1])

    fig, axs = plt.subplots(2, 2, figsize=(9, 6))
    for ax, key, title, log in (
        (axs[0, 0], "sigma2_over_sigma1_A", "sigma2/sigma1 of A", True),
        (axs[0, 1], "sigma2_over_sigma1_A_LM", "sigma2/sigma1 of A_LM", True),
        (axs[1, 0], "identical_rows_residual_A", "identical-rows residual of A", True),
        (axs[1, 1], "numerical_rank_A", "numerical rank of A (mean over probes)", False),
    ):
        _curves(ax, result, key, log=log)
        ax.set_title(title, fontsize=9)
    paths.append(out_dir / FIGURES[3])
    _save(fig, paths[-1])

    fig, ax = plt.subplots(figsize=(6, 3.5))
    styles = {"A": "-", "A_LM": "--", "A_P": ":", "G": "-."}
    for name, reg in result["regimes"].items():
        ovl = reg.get("order_vs_length")
        if not ovl:
            continue
        for t, ls in styles.items():
            ax.plot(
                ovl["S"],
                [max(v, TINY) for v in ovl[t]],
                ls=ls,
                marker="o",
                ms=3,
                color=COLOURS.get(name),
                label=f"{name} {t}",
            )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="context length S",
        ylabel="order parameter (max over layer x head)",
        title="order parameter vs S (end)",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    paths.append(out_dir / FIGURES[4])
    _save(fig, paths[-1])
    plt.close("all")
    return paths
