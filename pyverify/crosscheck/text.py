"""The cross-check as text: every row, the per (dtype, path, stage) summary, a verdict."""

from __future__ import annotations

import math

from pyverify.crosscheck.results import CrosscheckResult, summarize
from pyverify.output import table

__all__ = ["format_crosscheck", "format_summary"]


def _fmt_e(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{x:.2e}"


def _fmt_p(x: float | None, spec: str = ".2e") -> str:
    """A proved figure, ``-`` where the stage has no proved bound."""
    return "-" if x is None else ("inf" if not math.isfinite(x) else format(x, spec))


def format_summary(result: CrosscheckResult) -> str:
    """The per (dtype, path, stage) summary as a text table."""
    rows = [
        [
            d["dtype"], d["path"], d["stage"], str(d["cases"]), _fmt_e(d["max_rel"]),
            _fmt_e(d["median_rel"]), _fmt_e(d["tolerance"]), f"{d['worst_ratio']:.2f}",
            _fmt_p(d["proved"]), _fmt_p(d["proved_ratio"], ".2g"),
            f"{d['proved_cases']}/{d['cases']}", "pass" if d["passed"] else "FAIL",
        ]
        for d in summarize(result)
    ]  # fmt: skip
    header = ["dtype", "path", "stage", "cases", "max_rel", "median_rel", "tolerance"]
    return table([*header, "err/tol", "proved", "err/proved", "bounded", "result"], rows)


def format_crosscheck(result: CrosscheckResult) -> str:
    """Render the cross-check as a text table (every row), a summary and a verdict."""
    rows = [
        [
            r.case.rsplit(f"-{r.device}-", 1)[0], r.path, r.against, "x".join(map(str, r.shape)),
            r.device, r.dtype, r.stage, _fmt_e(r.max_rel), _fmt_e(r.median_rel),
            _fmt_e(r.tolerance), _fmt_p(r.proved), _fmt_p(r.proved_ratio, ".2g"),
            "pass" if r.passed else "FAIL",
        ]
        for r in result.rows
    ]  # fmt: skip
    header = ["case", "path", "against", "BxHxSxdk", "device", "dtype", "stage"]
    more = ["max_rel", "median_rel", "tolerance", "proved", "err/proved", "result"]
    parts = [
        table([*header, *more], rows),
        "",
        "summary (worst case per dtype, path, stage):",
        format_summary(result),
        "",
    ]
    parts += [
        f"FAILED {r.case} {r.path} {r.stage}: {'; '.join(why)}"
        for r in result.failures
        if (why := [x for x in (r.note, r.proved_note) if x])
    ]  # its note, and where it had no proved bound, why
    parts += [
        f"FAILED {r.case} {r.path} {r.stage}: error {r.max_rel:.3g} exceeds the proved bound "
        f"{r.proved:.3g} ({', '.join(r.proved_theorems)})"
        for r in result.failures
        if r.proved_ratio is not None and r.proved is not None and r.proved_ratio > 1
    ]
    parts += [f"left out: {key} ({why})" for key, why in sorted(result.left_out.items())]
    k, n = result.shard
    shard = f", shard {k}/{n}" if n > 1 else ""
    parts.append(
        f"crosscheck {'passed' if result.ok else 'FAILED'}: {len(result.cases)} cases, "
        f"{len(result.rows)} comparisons, {len(result.failures)} failed{shard}"
    )
    return "\n".join(parts)
