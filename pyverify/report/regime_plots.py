"""A regime's figures over seeds: G's order parameter and the answers' accuracy in training.

Drawn from the seeds' saved ``collapse.json`` alone (:func:`draw_regime`), into the
regime's folder: ``seeds_order_parameter.png`` (per run, the median over layer x
head of G's order parameter at the longest probe length, one line per seed, with
the band of its heads' min .. max), and, for the recall task,
``seeds_accuracy.png`` (per run, the answers' accuracy over training in each
inference, one line per seed, beside the best n-gram's and chance).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pyverify.report.collapse_plots import TINY, save_figure

__all__ = ["REGIME_FIGURES", "draw_regime"]

REGIME_FIGURES = ("seeds_order_parameter.png", "seeds_accuracy.png")
MODE_STYLE = {"teacher-forced": ":", "causal": "-", "prompt-cache": "--"}
SEED_COLOURS = ("tab:red", "tab:blue", "tab:green", "tab:purple", "tab:orange", "tab:brown")


def _runs(saved: dict[int, dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for res in saved.values():
        names += [n for n, r in res["runs"].items() if r.get("history") and n not in names]
    return names


def draw_regime(base: Path, saved: dict[int, dict[str, Any]]) -> list[Path]:
    """Draw the regime's figures from its seeds' results (``{seed: collapse.json}``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = _runs(saved)
    if not names:
        return []
    paths = []
    fig, axs = plt.subplots(1, len(names), figsize=(3.4 * len(names), 3.2), sharey=True,
                            squeeze=False)  # fmt: skip
    for ax, name in zip(axs[0], names, strict=True):
        for i, (seed, res) in enumerate(sorted(saved.items())):
            run = res["runs"].get(name)
            if not run or not run.get("history"):
                continue
            S = str(max(res["settings"]["s_measure"]))
            steps = [h["step"] for h in run["history"]]
            grid = np.array([np.ravel(h["order_parameter"][S]["G"]) for h in run["history"]])
            c = SEED_COLOURS[i % len(SEED_COLOURS)]
            ax.plot(steps, np.maximum(np.median(grid, axis=1), TINY), color=c,
                    label=f"seed {seed}")  # fmt: skip
            ax.fill_between(steps, np.maximum(grid.min(axis=1), TINY), grid.max(axis=1),
                            color=c, alpha=0.15, lw=0)  # fmt: skip
        ax.set(yscale="log", xlabel="step", title=name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axs[0][0].set_ylabel("G order parameter: median over heads (band: min..max)")
    paths.append(base / REGIME_FIGURES[0])
    save_figure(fig, paths[-1])
    plt.close(fig)
    recall = any(r.get("baseline", {}).get("task") == "recall" for r in saved.values())
    if recall:
        fig, axs = plt.subplots(1, len(names), figsize=(3.4 * len(names), 3.2), sharey=True,
                                squeeze=False)  # fmt: skip
        for ax, name in zip(axs[0], names, strict=True):
            for i, (seed, res) in enumerate(sorted(saved.items())):
                run = res["runs"].get(name)
                if not run or not run.get("history") or "answers" not in run["history"][0]:
                    continue
                steps = [h["step"] for h in run["history"]]
                c = SEED_COLOURS[i % len(SEED_COLOURS)]
                for mode, ls in MODE_STYLE.items():
                    ys = [h["answers"][mode]["accuracy"] for h in run["history"]]
                    lab = f"seed {seed}, {mode}" if i == 0 or mode == "causal" else None
                    ax.plot(steps, ys, color=c, ls=ls, lw=1, label=lab)
                b = res["baseline"]
                ax.axhline(b["accuracy"], color="k", lw=0.8, ls="-.",
                           label="best n-gram" if i == 0 else None)  # fmt: skip
                ax.axhline(b["chance"], color="gray", lw=0.8, ls=":",
                           label="chance" if i == 0 else None)  # fmt: skip
            ax.set(ylim=(0, 1.02), xlabel="step", title=name)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=6)
        axs[0][0].set_ylabel("answer accuracy (validation)")
        paths.append(base / REGIME_FIGURES[1])
        save_figure(fig, paths[-1])
        plt.close(fig)
    return paths
