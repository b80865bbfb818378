"""A benchmark row: the v51 sizes it is measured at, its dict, and its text line."""

from __future__ import annotations

from typing import Any

__all__ = [
    "A_DFF",
    "DK",
    "N_DENSE",
    "N_RES",
    "H",
    "fmt_row",
    "format_table",
    "make_row",
    "row_line",
    "row_note",
]

# Metric-learner sizes of the paper's PLDR-LLM v51 (A_dff = 170, 8 residual
# units of 2 SwiGLU blocks), dk = 64, 14 heads.
H, DK, A_DFF, N_RES, N_DENSE = 14, 64, 170, 8, 2


def make_row(bench, shape, dtype, device, ours_ms, base_ms, target) -> dict[str, Any]:
    """One row: both medians (ms), their ratio, the target and whether it is met."""
    ratio = ours_ms / base_ms
    return {
        "benchmark": bench,
        "shape": shape,
        "dtype": str(dtype).replace("torch.", ""),
        "device": str(device),
        "ours_ms": round(ours_ms, 4),
        "baseline_ms": round(base_ms, 4),
        "ratio": round(ratio, 4),
        "target": round(target, 4),
        "meets_target": bool(ratio <= target),
    }


def fmt_row(r: dict[str, Any]) -> str:
    """A row as one fixed-width line of the table."""
    shape = r["shape"]
    if isinstance(shape, dict):
        shape = "x".join(f"{k}={v}" for k, v in shape.items())
    else:
        shape = "x".join(str(s) for s in shape)
    ok = "yes" if r["meets_target"] else "NO"
    return (
        f"{r['benchmark']:<24} {shape:<36} {r['dtype']:<9} {r['device']:<6} "
        f"{r['ours_ms']:>10.2f} {r['baseline_ms']:>11.2f} {r['ratio']:>7.3f} "
        f"{r['target']:>7.3f}  {ok}"
    )


def format_table(result: dict[str, Any]) -> str:
    """Format the rows of :func:`run_bench`'s result as a text table.

    Parameters
    ----------
    result : dict
        As returned by :func:`run_bench`.

    Returns
    -------
    str
        One line per row, with a header.
    """
    head = (
        f"{'benchmark':<24} {'shape':<36} {'dtype':<9} {'device':<6} "
        f"{'ours_ms':>10} {'baseline_ms':>11} {'ratio':>7} {'target':>7}  meets"
    )
    lines = [head, "-" * len(head)]
    lines += [fmt_row(r) for r in result["rows"]]
    return "\n".join(lines)


def row_note(r: dict[str, Any]) -> str:
    """The figures a row carries beside its ratio (memory, FLOP rates, the P3 floor)."""
    if "ours_peak_mib" in r:
        return f"peak MiB {r['ours_peak_mib']:.1f} vs {r['baseline_peak_mib']:.1f}"
    if "learner_gflops" in r:
        return f"GFLOP/s {r['learner_gflops']:.1f} vs GEMM {r['gemm_gflops']:.1f}"
    if "floor_ratio" in r:
        return f"floor {r['floor_ratio']:.3f} (weight products alone)"
    return ""


def row_line(r: dict[str, Any]) -> str:
    """A row's line with what it carries beside its ratio."""
    note = row_note(r)
    return fmt_row(r) + (f"  {note}" if note else "")
