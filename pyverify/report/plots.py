"""The report's PNG figures (matplotlib, Agg backend, no time stamps or version strings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["benchmark_ratios", "commutant_heatmaps", "error_by_dtype", "save"]

_STAGES = ("D", "A0", "A", "A_LM", "A_P", "G", "scores", "output")
_DTYPES = ("float64", "float32", "bfloat16", "float16")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "pyverify", "figure.dpi": 100})
    return plt


def save(fig: Any, path: Path) -> Path:
    """Write ``fig`` as PNG without metadata that changes between runs, then close it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=100, metadata={"Software": None})
    _plt().close(fig)
    return path


def commutant_heatmaps(diagnostics: dict[str, dict[str, Any]], path: Path) -> Path | None:
    """Heatmaps (layers x heads) of the RoPE-commutant residual, one panel per G-cache.

    Parameters
    ----------
    diagnostics : dict
        Name -> :func:`pyverify.diagnose.run_diagnose` output (entries without
        ``per_head`` are skipped).
    path : pathlib.Path
        Output PNG.

    Returns
    -------
    pathlib.Path or None
        ``path``, or None when there is nothing to plot.
    """
    panels = [(n, d) for n, d in diagnostics.items() if d.get("per_head")]
    if not panels:
        return None
    plt = _plt()
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.6 * len(panels) + 1, 3.8), squeeze=False, layout="constrained"
    )
    im = None
    for ax, (name, d) in zip(axes[0], panels, strict=True):
        r = np.array(d["per_head"]["commutant_residual"], dtype=float)
        im = ax.imshow(r, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
        ax.set_title(f"{name}\nmedian {np.median(r):.3f}", fontsize=10)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_xticks(range(r.shape[1]))
        ax.set_yticks(range(r.shape[0]))
        ax.tick_params(labelsize=7)
    fig.suptitle("relative RoPE-commutant residual of G_LM (0 = absorbable into W_q)", fontsize=11)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.9, label="residual")
    return save(fig, path)


def error_by_dtype(summary: list[dict[str, Any]], path: Path) -> Path | None:
    """Worst cross-check error per stage, one series per dtype, with the tolerances.

    Parameters
    ----------
    summary : list of dict
        :func:`pyverify.crosscheck.summarize` rows (``dtype``, ``path``, ``stage``,
        ``max_rel``, ``tolerance``).
    path : pathlib.Path
        Output PNG.

    Returns
    -------
    pathlib.Path or None
        ``path``, or None without data.
    """
    rows = [r for r in summary if r["stage"] in _STAGES]
    if not rows:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    x = np.arange(len(_STAGES))
    dtypes = [d for d in _DTYPES if any(r["dtype"] == d for r in rows)]
    width = 0.8 / max(1, len(dtypes))
    log_bottom = 1e-18
    for i, dt in enumerate(dtypes):
        err, tol = [], []
        for s in _STAGES:
            sel = [r for r in rows if r["dtype"] == dt and r["stage"] == s]
            worst = max(sel, key=lambda r: r["max_rel"], default=None)
            err.append(worst["max_rel"] if worst else np.nan)
            tol.append(worst["tolerance"] if worst else np.nan)
        xs = x - 0.4 + width * (i + 0.5)
        ax.bar(xs, np.maximum(np.array(err), log_bottom), width, label=dt, bottom=0)
        ax.scatter(xs, tol, marker="_", s=220, color="black", zorder=3)
    ax.set_yscale("log")
    ax.set_xticks(x, _STAGES)
    ax.set_ylabel("max relative error (bars), its tolerance (—)")
    ax.set_title("cross-check: worst error per stage and dtype (any path, case, device)")
    ax.legend(fontsize=8, ncols=len(dtypes))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return save(fig, path)


def benchmark_ratios(bench: dict[str, Any], path: Path) -> Path | None:
    """Bar chart of benchmark ratios (ours / baseline) with each row's target.

    Parameters
    ----------
    bench : dict
        :func:`pyverify.bench.run_bench` output (``rows``).
    path : pathlib.Path
        Output PNG.

    Returns
    -------
    pathlib.Path or None
        ``path``, or None without rows.
    """
    rows = list(bench.get("rows") or [])
    if not rows:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(rows) + 2), 4.2))
    labels = []
    for r in rows:
        shape = r["shape"]
        if isinstance(shape, dict):
            shape = ",".join(f"{k}={v}" for k, v in shape.items())
        elif isinstance(shape, list | tuple):
            shape = "x".join(str(s) for s in shape)
        labels.append(f"{r['benchmark']}\n{shape}\n{r['dtype']} {r['device']}")
    ratios = [float(r["ratio"]) for r in rows]
    colors = ["tab:green" if r.get("meets_target") else "tab:red" for r in rows]
    x = np.arange(len(rows))
    ax.bar(x, ratios, color=colors)
    ax.scatter(
        x,
        [float(r["target"]) for r in rows],
        marker="_",
        s=400,
        color="black",
        zorder=3,
        label="target",
    )
    ax.set_xticks(x, labels, fontsize=6)
    ax.set_ylabel("time ratio ours / baseline (lower is better)")
    ax.set_title("benchmarks (green: meets target)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return save(fig, path)
