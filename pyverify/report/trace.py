"""Traceability: every Lean theorem ID has property tests on every implementation.

The matrix ID x implementation is built from

* the Lean manifest: the IDs carried by the theorems of ``lean/`` (the ``[id]`` tag that
  starts a theorem's docstring; read from the sources, no Lean run), and
* the property tests: ``@pytest.mark.theorem(...)`` IDs and the implementation each test
  runs on (collected with ``pytest --collect-only``, see
  :func:`pyverify.theorems.pytest_plugin.collect_matrix`).

The check fails when

* a manifest ID has no test on some implementation of :data:`IMPLEMENTATIONS` (a gap),
* a test names an ID the manifest lacks (unknown),
* an ID of :data:`pyverify.theorems.THEOREM_IDS` has no Lean theorem (missing), or
* a test names theorem IDs but no implementation (unattributed).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyverify.output import table
from pyverify.theorems import THEOREM_IDS

__all__ = [
    "IMPLEMENTATIONS",
    "TEST_PATHS",
    "TraceResult",
    "build_trace",
    "format_matrix",
    "main",
    "manifest_ids",
    "run_trace",
    "trace_matrix",
]

IMPLEMENTATIONS: tuple[str, ...] = ("reference", "kernels")
"""Every theorem needs at least one property test on each of these."""

TEST_PATHS: tuple[str, ...] = ("property_tests",)
"""Where the property tests live (relative to the repository root)."""


@dataclass(frozen=True)
class TraceResult:
    """The ID x implementation matrix and its problems.

    Attributes
    ----------
    ids : tuple of str
        Rows: the manifest's IDs, then unknown IDs named by tests (THEOREM_IDS order first).
    implementations : tuple of str
        Columns.
    counts : dict
        ``counts[id][implementation]`` = number of tests.
    variants : dict
        ``variants[id][implementation]`` = sorted ``device/dtype`` labels covered.
    manifest_ids : tuple of str
        IDs carried by Lean theorems.
    gaps : tuple of (str, str)
        ``(id, implementation)`` with a Lean theorem but no test.
    unknown : tuple of (str, str)
        ``(nodeid, id)``: a test naming an ID no Lean theorem carries.
    missing : tuple of str
        IDs of THEOREM_IDS that no Lean theorem carries.
    unattributed : tuple of str
        Node IDs of tests that name theorem IDs but no implementation.
    extra_ids : tuple of str
        Manifest IDs outside THEOREM_IDS (informational: the Lean manifest check reports them).
    """

    ids: tuple[str, ...]
    implementations: tuple[str, ...]
    counts: dict[str, dict[str, int]]
    variants: dict[str, dict[str, tuple[str, ...]]]
    manifest_ids: tuple[str, ...]
    gaps: tuple[tuple[str, str], ...] = ()
    unknown: tuple[tuple[str, str], ...] = ()
    missing: tuple[str, ...] = ()
    unattributed: tuple[str, ...] = ()
    extra_ids: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """No gap, no unknown ID, no missing ID, no unattributed test."""
        return not (self.gaps or self.unknown or self.missing or self.unattributed)


def _ordered(ids: Iterable[str], known: Sequence[str]) -> list[str]:
    ids = set(ids)
    return [i for i in known if i in ids] + sorted(ids - set(known))


def build_trace(
    manifest: Iterable[str],
    tests: Iterable[Mapping[str, Any]],
    known_ids: Sequence[str] = THEOREM_IDS,
    implementations: Sequence[str] = IMPLEMENTATIONS,
) -> TraceResult:
    """Build the matrix from manifest IDs and collected tests (no I/O).

    Parameters
    ----------
    manifest : iterable of str
        The theorem IDs carried by the Lean theorems (repeats allowed).
    tests : iterable of mapping
        Collected tests: ``nodeid``, ``theorems`` (list of IDs), ``implementation``,
        ``device``, ``dtype`` (as written by ``--pyverify-collect``).
    known_ids : sequence of str, default THEOREM_IDS
        The IDs the spec defines.
    implementations : sequence of str, default IMPLEMENTATIONS
        The implementations every ID needs a test on.

    Returns
    -------
    TraceResult
        The matrix and its problems.
    """
    man = set(manifest)
    impls = tuple(implementations)
    counts: dict[str, dict[str, int]] = {}
    variants: dict[str, dict[str, set[str]]] = {}
    unknown: list[tuple[str, str]] = []
    unattributed: list[str] = []
    for t in tests:
        ids = list(t.get("theorems") or [])
        if not ids:
            continue
        impl = t.get("implementation")
        if not impl:
            unattributed.append(str(t["nodeid"]))
        for i in ids:
            if i not in man:
                unknown.append((str(t["nodeid"]), i))
            if impl:
                row = counts.setdefault(i, {})
                row[impl] = row.get(impl, 0) + 1
                label = f"{t.get('device') or '?'}/{t.get('dtype') or '?'}"
                variants.setdefault(i, {}).setdefault(impl, set()).add(label)
    rows = _ordered(man | set(counts), known_ids)
    for i in rows:
        counts.setdefault(i, {})
        for impl in impls:
            counts[i].setdefault(impl, 0)
    gaps = tuple(
        (i, impl) for i in _ordered(man, known_ids) for impl in impls if not counts[i][impl]
    )
    all_impls = impls + tuple(sorted({k for r in counts.values() for k in r} - set(impls)))
    return TraceResult(
        ids=tuple(rows),
        implementations=all_impls,
        counts=counts,
        variants={i: {k: tuple(sorted(v)) for k, v in r.items()} for i, r in variants.items()},
        manifest_ids=tuple(_ordered(man, known_ids)),
        gaps=gaps,
        unknown=tuple(sorted(unknown)),
        missing=tuple(i for i in known_ids if i not in man),
        unattributed=tuple(sorted(set(unattributed))),
        extra_ids=tuple(sorted(man - set(known_ids))),
    )


def manifest_ids(repo_root: Path) -> list[str]:
    """IDs carried by the theorems of ``repo_root/lean`` (sources only, no Lean run).

    Raises
    ------
    pyverify.lean.project.ProjectError
        If the Lean package cannot be read.
    """
    from pyverify.lean.manifest import parse_theorems
    from pyverify.lean.project import load_package

    return [t.theorem_id for t in parse_theorems(load_package(repo_root / "lean")) if t.theorem_id]


def trace_matrix(
    repo_root: Path,
    tests: Iterable[Mapping[str, Any]] | None = None,
    test_paths: Sequence[str] = TEST_PATHS,
) -> TraceResult:
    """The :class:`TraceResult` (matrix and problems) of the repository at ``repo_root``.

    Parameters
    ----------
    repo_root : pathlib.Path
        The checkout (holds ``lean/`` and ``property_tests/``).
    tests : iterable of mapping, optional
        Already collected tests; default: collect ``test_paths`` now (a pytest subprocess).
    test_paths : sequence of str, default TEST_PATHS
        Test paths relative to ``repo_root``.
    """
    repo_root = Path(repo_root)
    ids = manifest_ids(repo_root)
    if tests is None:
        from pyverify.theorems.pytest_plugin import collect_matrix

        tests = collect_matrix(test_paths, rootdir=repo_root)
    return build_trace(ids, tests)


def format_matrix(result: TraceResult) -> str:
    """The ID x implementation matrix (test counts) and the problems, as text."""
    impls = result.implementations
    gaps = set(result.gaps)
    rows = [
        [
            i,
            "yes" if i in result.manifest_ids else "NO",
            *(
                "GAP" if (i, impl) in gaps else str(result.counts.get(i, {}).get(impl, 0))
                for impl in impls
            ),
        ]
        for i in result.ids
    ]
    right = tuple(range(2, 2 + len(impls)))
    lines = [table(["theorem ID", "lean", *impls], rows, right=right)]
    lines.append("")
    for i in result.ids:
        for impl in impls:
            v = result.variants.get(i, {}).get(impl)
            if v:
                lines.append(f"  {i} / {impl}: {', '.join(v)}")
    problems = []
    problems += [f"gap: [{i}] has no property test on {impl}" for i, impl in result.gaps]
    problems += [
        f"unknown: {n} names [{i}], which no Lean theorem carries" for n, i in result.unknown
    ]
    problems += [f"missing: no Lean theorem carries [{i}]" for i in result.missing]
    problems += [
        f"unattributed: {n} names theorem IDs but no implementation" for n in result.unattributed
    ]
    problems += [
        f"note: Lean ID [{i}] is not in pyverify.theorems.THEOREM_IDS" for i in result.extra_ids
    ]
    lines.append("")
    if problems:
        lines += problems
    verdict = "trace OK" if result.ok else "trace FAILED"
    total = sum(sum(r.values()) for r in result.counts.values())
    lines.append(
        f"{verdict}: {len(result.manifest_ids)} theorem IDs in Lean, {total} (test, ID) links"
    )
    return "\n".join(lines)


def run_trace(repo_root: Path) -> int:
    """Print the matrix of ``repo_root``; return 0 if the trace is complete, else 1."""
    from pyverify.lean.project import ProjectError
    from pyverify.theorems.pytest_plugin import CollectionError

    try:
        result = trace_matrix(Path(repo_root))
    except (ProjectError, CollectionError) as exc:
        print(f"trace FAILED: {exc}", file=sys.stderr)
        return 1
    print(format_matrix(result))
    return 0 if result.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """``pyverify trace [--repo PATH]``."""
    parser = argparse.ArgumentParser(
        prog="pyverify trace",
        description="Check that every Lean theorem ID has property tests on each implementation.",
    )
    parser.add_argument("--repo", default=None, help="repository root (default: found from cwd)")
    args = parser.parse_args(argv)
    if args.repo:
        root = Path(args.repo)
    else:
        from pyverify.paths import repo_root

        root = repo_root()
    return run_trace(root)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
