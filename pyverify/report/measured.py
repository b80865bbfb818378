"""Verdicts apart from measurements: what ``verification.json`` keeps and what it hands on.

``verification.json`` must be byte-identical on every machine, so it keeps no figure
that a floating-point computation produced here: torch's CPU dispatch (its CPU
capability), the BLAS build and the thread count move such figures in their last
digits, and any rounding of them can flip at a digit boundary. It keeps theorem IDs,
statuses and verdicts, counts, case lists, shapes, provenance and the *declared*
floats (:data:`DECLARED_FLOATS`: tolerances and thresholds, constants of the method).
Every other float goes to ``measurements.json`` next to ``environment.json``, at the
same place in the same structure, so :func:`merge_measured` puts the two back
together for ``index.md`` and the plots.

A count or verdict derived from a measured figure by a threshold (a pass/fail, a
numerical rank, "heads above 0.5") stays a verdict: it changes only when the figure
sits within its rounding error of the threshold, and then the change is news.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DECLARED_FLOATS",
    "MEASUREMENTS_FILE",
    "measured_floats",
    "merge_measured",
    "split_crosscheck",
    "split_measured",
]

#: The measurements file, next to ``environment.json``.
MEASUREMENTS_FILE = "measurements.json"

#: Keys whose float values are declared (constants of the method), not measured.
DECLARED_FLOATS = frozenset({"tolerance", "absorb_tol", "rank_rtol"})

#: Identify a cross-check row or summary line in both files.
_ROW_IDS = ("case", "path", "against", "dtype", "stage")
_SUMMARY_IDS = ("dtype", "path", "stage")
_ROW_MEASURED = ("max_rel", "median_rel", "tolerance", "note", "proved", "proved_ratio")
_SUMMARY_MEASURED = (
    "max_rel",
    "median_rel",
    "tolerance",
    "worst_ratio",
    "proved",
    "proved_ratio",
    "tightness_worst",
    "tightness_median",
    "tightness_cases",
)


class _Gone:
    """Marks "nothing of this value on this side" (``None`` is a real JSON value)."""


_GONE = _Gone()


def _has_float(obj: Any) -> bool:
    if isinstance(obj, float):
        return True
    if isinstance(obj, dict):
        return any(_has_float(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return any(_has_float(v) for v in obj)
    return False


def _split(obj: Any) -> tuple[Any, Any]:
    if isinstance(obj, float):
        return _GONE, obj
    if isinstance(obj, dict):
        kept: dict[str, Any] = {}
        measured: dict[str, Any] = {}
        for k, v in obj.items():
            if k in DECLARED_FLOATS and isinstance(v, float):
                kept[k] = v
                continue
            kv, mv = _split(v)
            if kv is not _GONE:
                kept[k] = kv
            if mv is not _GONE:
                measured[k] = mv
        # a dict whose every entry moved is gone from the verdicts, not left empty
        return (kept if kept or not obj else _GONE), (measured if measured else _GONE)
    if isinstance(obj, list | tuple):
        if obj and all(isinstance(v, dict) for v in obj):
            parts = [_split(v) for v in obj]
            kept_list = [{} if kv is _GONE else kv for kv, _ in parts]
            if all(mv is _GONE for _, mv in parts):
                return kept_list, _GONE
            return kept_list, [{} if mv is _GONE else mv for _, mv in parts]
        if _has_float(obj):  # an array of figures moves whole
            return _GONE, list(obj)
        return list(obj), _GONE
    return obj, _GONE


def split_measured(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ``data`` into (verdicts, measurements), both in ``data``'s structure.

    Every float leaves for the measurements except under a key of
    :data:`DECLARED_FLOATS`; an array holding a float moves whole; a list of dicts
    stays a list of the same length on both sides (``{}`` where a side has nothing),
    so :func:`merge_measured` can zip it back.

    Parameters
    ----------
    data : dict
        JSON-like data.

    Returns
    -------
    (dict, dict)
        What stays and what moves.
    """
    kept, measured = _split(data)
    return kept, ({} if measured is _GONE else measured)


def split_crosscheck(cc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cross-check's verdicts and its measured errors, rows and summary named alike.

    A row keeps its case, path, stage, dtype, shape, theorems, ``passed``, its
    ``tolerance_rule`` and its ``tolerance`` where that is not a proved bound (0: no
    proved bound, or a crash; None where it is one); the errors, the tolerance that is a
    proved bound, the proved bound and ``error / proved`` (all computed from this
    machine's inputs and errors) and the note (which quotes measured figures) go to the
    measurements, with the row's identifying fields.

    Parameters
    ----------
    cc : dict
        The report's cross-check data (``rows``, ``summary``, ...).

    Returns
    -------
    (dict, dict)
        What stays and what moves.
    """
    kept = {k: v for k, v in cc.items() if k not in ("rows", "summary")}
    rows, m_rows = _split_entries(cc.get("rows") or [], _ROW_IDS, _ROW_MEASURED)
    summary, m_summary = _split_entries(cc.get("summary") or [], _SUMMARY_IDS, _SUMMARY_MEASURED)
    kept |= {"rows": rows, "summary": summary}
    return kept, {"rows": m_rows, "summary": m_summary}


def _split_entries(
    entries: list[dict[str, Any]], ids: tuple[str, ...], measured: tuple[str, ...]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Entries without their measured fields (a tolerance not proved kept); those fields + ids.

    A tolerance is a proved bound, evaluated here, where its rule (a summary's: any of its
    cases' rules) is ``proved: IDs``; else it is the constant 0 of a row without one.
    """
    kept, moved = [], []
    for e in entries:
        constant_tol = "proved:" not in (e.get("tolerance_rule") or "")
        kept.append(
            {k: v for k, v in e.items() if k not in measured}
            | {"tolerance": e.get("tolerance") if constant_tol else None}
        )
        moved.append({k: e.get(k) for k in ids} | {k: e[k] for k in measured if k in e})
    return kept, moved


def merge_measured(kept: Any, measured: Any) -> Any:
    """Put :func:`split_measured` / :func:`split_crosscheck` halves back together.

    Measured values win where both sides hold a key (a measured tolerance over the
    verdict side's None).
    """
    if isinstance(kept, dict) and isinstance(measured, dict):
        out = dict(kept)
        for k, v in measured.items():
            out[k] = merge_measured(kept[k], v) if k in kept else v
        return out
    if isinstance(kept, list) and isinstance(measured, list) and len(kept) == len(measured):
        return [merge_measured(a, b) for a, b in zip(kept, measured, strict=True)]
    return measured


def measured_floats(obj: Any, path: str = "") -> list[str]:
    """Paths of the floats in ``obj`` outside :data:`DECLARED_FLOATS` (none in a verdict)."""
    if isinstance(obj, float):
        return [path]
    if isinstance(obj, dict):
        out = []
        for k, v in obj.items():
            if not (k in DECLARED_FLOATS and isinstance(v, float)):
                out += measured_floats(v, f"{path}.{k}")
        return out
    if isinstance(obj, list | tuple):
        return [p for i, v in enumerate(obj) for p in measured_floats(v, f"{path}[{i}]")]
    return []
