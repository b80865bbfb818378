"""Turning phase results into the report's tables (pure functions, no I/O)."""

from __future__ import annotations

from typing import Any

from pyverify.theorems import SUMMARIES, THEOREM_IDS

__all__ = [
    "OUTCOMES",
    "aggregate_tests",
    "crosscheck_by_theorem",
    "lean_by_theorem",
    "principal_theorem",
    "theorem_rows",
]

#: Test outcomes the pytest plugin writes.
OUTCOMES: tuple[str, ...] = ("passed", "failed", "skipped", "error")


def _counts() -> dict[str, int]:
    return {"passed": 0, "failed": 0, "skipped": 0, "error": 0, "total": 0}


def aggregate_tests(data: dict[str, Any]) -> dict[str, Any]:
    """Aggregate the plugin's ``--pyverify-results`` JSON.

    Parameters
    ----------
    data : dict
        ``{"schema": 1, "tests": [{"nodeid", "theorems", "implementation", "device",
        "dtype", "outcome"}, ...]}``.

    Returns
    -------
    dict
        ``totals`` (counts per outcome), ``by_theorem`` (ID -> implementation ->
        counts), ``by_implementation`` (implementation -> ``"device/dtype"`` ->
        counts), ``unattributed`` (tests naming no theorem), ``unknown_theorems``
        (IDs not in the spec), ``failures`` (sorted node IDs not passed or skipped).
        Tests naming no implementation count under ``"none"``.

    Raises
    ------
    ValueError
        On an unknown schema or a malformed record.
    """
    if not isinstance(data, dict) or data.get("schema") != 1 or "tests" not in data:
        raise ValueError("test results must be {'schema': 1, 'tests': [...]}")
    totals = _counts()
    by_theorem: dict[str, dict[str, dict[str, int]]] = {}
    by_impl: dict[str, dict[str, dict[str, int]]] = {}
    unattributed = 0
    unknown: set[str] = set()
    failures: list[str] = []
    for rec in data["tests"]:
        try:
            outcome = rec["outcome"]
            nodeid = str(rec["nodeid"])
            theorems = list(rec.get("theorems") or [])
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed test record {rec!r}") from exc
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r} in {nodeid}")
        impl = str(rec.get("implementation") or "none")
        where = f"{rec.get('device') or '-'}/{rec.get('dtype') or '-'}"
        for c in (totals, by_impl.setdefault(impl, {}).setdefault(where, _counts())):
            c[outcome] += 1
            c["total"] += 1
        if not theorems:
            unattributed += 1
        for tid in theorems:
            if tid not in THEOREM_IDS:
                unknown.add(str(tid))
            c = by_theorem.setdefault(str(tid), {}).setdefault(impl, _counts())
            c[outcome] += 1
            c["total"] += 1
        if outcome in ("failed", "error"):
            failures.append(nodeid)
    return {
        "totals": totals,
        "by_theorem": by_theorem,
        "by_implementation": by_impl,
        "unattributed": unattributed,
        "unknown_theorems": sorted(unknown),
        "failures": sorted(failures),
    }


def principal_theorem(theorems: list[dict[str, Any]], tid: str) -> dict[str, Any] | None:
    """The manifest entry of theorem ID ``tid``: the one named ``....<tid>``, else the first.

    Parameters
    ----------
    theorems : list of dict
        The manifest's ``theorems`` (``name``, ``theorem_id``, ``file``, ``line``, ...).
    tid : str
        A theorem ID.

    Returns
    -------
    dict or None
        The entry, or None if no theorem carries the ID.
    """
    tagged = [t for t in theorems if t.get("theorem_id") == tid]
    for t in tagged:
        name = str(t.get("name", ""))
        if name == tid or name.endswith(f".{tid}"):
            return t
    return tagged[0] if tagged else None


def lean_by_theorem(lean: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per theorem ID: Lean name, file:line, number of tagged theorems and a status.

    Status: ``proved`` (the library built and passed the audit, and a theorem
    carries the ID), ``missing`` (built, no theorem carries the ID),
    ``build failed``, ``error`` (the build could not run), ``not run``.
    """
    status = lean.get("status", "skipped")
    manifest = lean.get("manifest") or {}
    theorems = list(manifest.get("theorems") or [])
    out = {}
    for tid in THEOREM_IDS:
        t = principal_theorem(theorems, tid)
        n = sum(1 for x in theorems if x.get("theorem_id") == tid)
        if status == "passed":
            st = "proved" if t else "missing"
        elif status == "failed":
            st = "build failed"
        elif status == "error":
            st = "error"
        else:
            st = "not run"
        out[tid] = {
            "name": t.get("name") if t else None,
            "file": t.get("file") if t else None,
            "line": t.get("line") if t else None,
            "tagged": n,
            "status": st,
            # what `#print axioms` prints for it, from the kernel audit (issue 11)
            "axioms": list(t.get("axioms") or []) if t and "axioms" in t else None,
            "axioms_exact": bool(t.get("axioms_exact", True)) if t else None,
        }
    return out


def crosscheck_by_theorem(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per theorem ID: how many cross-check comparisons exercise it and how many failed."""
    out: dict[str, dict[str, Any]] = {}
    for tid in THEOREM_IDS:
        tagged = [r for r in rows if tid in (r.get("theorems") or [])]
        failed = sum(1 for r in tagged if not r.get("passed"))
        if not tagged:
            status = "n/a"
        else:
            status = "passed" if failed == 0 else "failed"
        out[tid] = {"comparisons": len(tagged), "failed": failed, "status": status}
    return out


def _test_status(counts: dict[str, int] | None) -> str:
    if not counts or counts["total"] == 0:
        return "none"
    if counts["failed"] or counts["error"]:
        return "failed"
    if counts["passed"] == 0:
        return "skipped"
    return "passed"


def theorem_rows(
    lean: dict[str, Any],
    tests: dict[str, Any],
    crosscheck_rows: list[dict[str, Any]],
    implementations: tuple[str, ...] = ("reference", "kernels"),
) -> list[dict[str, Any]]:
    """One row per theorem ID: Lean, property tests per implementation, cross-check.

    Parameters
    ----------
    lean : dict
        The Lean phase (``status``, ``manifest``).
    tests : dict
        The tests phase (``status``, and ``aggregate`` from :func:`aggregate_tests`).
    crosscheck_rows : list of dict
        :meth:`CrosscheckRow.to_dict` rows.
    implementations : tuple of str
        Implementations that get a column.

    Returns
    -------
    list of dict
        In :data:`THEOREM_IDS` order: ``id``, ``summary``, ``lean``, ``tests`` (per
        implementation ``{passed, failed, skipped, error, total, status}``),
        ``crosscheck`` and ``ok`` (no failure anywhere; untested parts count as
        failures only when their phase ran).
    """
    lean_rows = lean_by_theorem(lean)
    cc_rows = crosscheck_by_theorem(crosscheck_rows)
    agg = tests.get("aggregate") or {}
    by_thm = agg.get("by_theorem") or {}
    tests_ran = tests.get("status") not in (None, "skipped")
    out = []
    for tid in THEOREM_IDS:
        per_impl = {}
        impls = list(implementations) + sorted(set(by_thm.get(tid, {})) - set(implementations))
        for impl in impls:
            counts = dict(by_thm.get(tid, {}).get(impl) or _counts())
            counts["status"] = _test_status(counts) if tests_ran else "not run"
            per_impl[impl] = counts
        lean_ok = lean_rows[tid]["status"] in ("proved", "not run")
        tests_ok = not tests_ran or (
            all(per_impl[i]["status"] == "passed" for i in implementations)
            and all(c["status"] in ("passed", "skipped") for c in per_impl.values())
        )
        cc_ok = cc_rows[tid]["status"] != "failed"
        out.append(
            {
                "id": tid,
                "summary": SUMMARIES.get(tid, ""),
                "lean": lean_rows[tid],
                "tests": per_impl,
                "crosscheck": cc_rows[tid],
                "ok": bool(lean_ok and tests_ok and cc_ok),
            }
        )
    return out
