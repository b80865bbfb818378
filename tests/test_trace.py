"""The traceability check (pyverify.report.trace) and the pytest plugin that feeds it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pyverify.report.trace import build_trace, format_matrix, main, run_trace, trace_matrix
from pyverify.theorems import THEOREM_IDS
from pyverify.theorems.pytest_plugin import CollectionError, collect_matrix

REPO = Path(__file__).resolve().parents[1]


def _t(nodeid, ids, impl="reference", device="cpu", dtype="float64"):
    return {"nodeid": nodeid, "theorems": list(ids), "implementation": impl,
            "device": device, "dtype": dtype}  # fmt: skip


def _full(ids=THEOREM_IDS):
    tests = []
    for i in ids:
        tests.append(_t(f"t.py::ref_{i}", [i]))
        tests.append(_t(f"t.py::k_{i}", [i], "kernels", "cpu", "float32"))
    return tests


# --------------------------------------------------------------------------- build_trace
def test_complete_trace_is_ok():
    r = build_trace(THEOREM_IDS, _full())
    assert r.ok
    assert r.ids == THEOREM_IDS
    assert all(r.counts[i] == {"reference": 1, "kernels": 1} for i in THEOREM_IDS)
    text = format_matrix(r)
    assert "trace OK" in text and "GAP" not in text
    assert "rope_group / kernels: cpu/float32" in text


def test_gap_when_an_implementation_lacks_a_test():
    tests = [t for t in _full() if t["nodeid"] != "t.py::k_dag_floor"]
    r = build_trace(THEOREM_IDS, tests)
    assert not r.ok
    assert r.gaps == (("dag_floor", "kernels"),)
    assert r.counts["dag_floor"] == {"reference": 1, "kernels": 0}
    text = format_matrix(r)
    assert "GAP" in text and "gap: [dag_floor] has no property test on kernels" in text
    assert "trace FAILED" in text


def test_gap_when_an_id_has_no_test_at_all():
    r = build_trace(THEOREM_IDS, _full(THEOREM_IDS[1:]))
    assert set(r.gaps) == {(THEOREM_IDS[0], "reference"), (THEOREM_IDS[0], "kernels")}


def test_unknown_id_named_by_a_test():
    tests = [*_full(), _t("t.py::bogus", ["softmax_shift", "no_such_theorem"])]
    r = build_trace(THEOREM_IDS, tests)
    assert not r.ok and not r.gaps
    assert r.unknown == (("t.py::bogus", "no_such_theorem"),)
    assert "no_such_theorem" in r.ids  # shown as a row, marked as absent from Lean
    assert "unknown: t.py::bogus names [no_such_theorem]" in format_matrix(r)


def test_id_named_by_a_test_but_missing_from_the_manifest_is_unknown_and_missing():
    manifest = [i for i in THEOREM_IDS if i != "rope_group"]
    r = build_trace(manifest, _full())
    assert not r.ok
    assert r.missing == ("rope_group",)
    assert ("t.py::ref_rope_group", "rope_group") in r.unknown
    assert ("rope_group", "reference") not in r.gaps  # no Lean theorem: not a gap, missing


def test_manifest_id_outside_the_spec_needs_tests_too():
    r = build_trace([*THEOREM_IDS, "extra_lemma"], _full())
    assert r.extra_ids == ("extra_lemma",)
    assert set(r.gaps) == {("extra_lemma", "reference"), ("extra_lemma", "kernels")}


def test_unattributed_test_fails_the_trace():
    tests = [*_full(), _t("t.py::orphan", ["softmax_shift"], impl=None, device=None, dtype=None)]
    r = build_trace(THEOREM_IDS, tests)
    assert r.unattributed == ("t.py::orphan",)
    assert not r.ok


def test_tests_without_theorems_are_ignored_and_repeats_counted():
    tests = [*_full(), _t("t.py::plain", []), _t("t.py::again", ["softmax_shift"])]
    r = build_trace(THEOREM_IDS + THEOREM_IDS[:1], tests)  # repeated manifest IDs are fine
    assert r.ok
    assert r.counts["softmax_shift"]["reference"] == 2


# --------------------------------------------------------------------------- plugin
EXAMPLE = """
import pytest

class Impl:
    def __init__(self, name, device, dtype):
        self.name, self.device, self.dtype = name, device, dtype
    def __str__(self):
        return f"{self.name}-{self.device}-{self.dtype}"

IMPLS = [Impl("reference", "cpu", "float64"), Impl("kernels", "cpu", "bfloat16")]

@pytest.mark.theorem("softmax_shift")
@pytest.mark.parametrize("impl", IMPLS, ids=str)
def test_param(impl):
    assert impl.name != "kernels"

@pytest.mark.theorem("dag_floor", "rope_group")
@pytest.mark.implementation("reference")
def test_exact():
    pass

@pytest.mark.theorem("dag_floor")
@pytest.mark.implementation("kernels", dtype="float32")
def test_skipped():
    pytest.skip("no")

@pytest.fixture
def broken():
    raise RuntimeError("setup fails")

@pytest.mark.theorem("dag_floor")
@pytest.mark.implementation("kernels")
def test_error(broken):
    pass

def test_plain():
    pass
"""


def _example_dir(tmp_path: Path) -> Path:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["pyverify.theorems.pytest_plugin"]\n')
    (tmp_path / "test_example.py").write_text(EXAMPLE)
    return tmp_path


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip


EXPECTED = [
    ("test_example.py::test_error", ["dag_floor"], "kernels", "cpu", "exact", "error"),
    ("test_example.py::test_exact", ["dag_floor", "rope_group"], "reference", "cpu", "exact",
     "passed"),
    ("test_example.py::test_param[kernels-cpu-bfloat16]", ["softmax_shift"], "kernels", "cpu",
     "bfloat16", "failed"),
    ("test_example.py::test_param[reference-cpu-float64]", ["softmax_shift"], "reference",
     "cpu", "float64", "passed"),
    ("test_example.py::test_plain", [], None, None, None, "passed"),
    ("test_example.py::test_skipped", ["dag_floor"], "kernels", "cpu", "float32", "skipped"),
]  # fmt: skip


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_results_json_is_complete_and_deterministic(tmp_path, xdist):
    d = _example_dir(tmp_path)
    out1, out2 = d / "r1.json", d / "r2.json"
    _run(d, *xdist, f"--pyverify-results={out1}")
    _run(d, *xdist, f"--pyverify-results={out2}")
    assert out1.read_bytes() == out2.read_bytes()  # no times, stable order
    data = json.loads(out1.read_text())
    assert data["schema"] == 1
    got = [(t["nodeid"], t["theorems"], t["implementation"], t["device"], t["dtype"],
            t["outcome"]) for t in data["tests"]]  # fmt: skip
    assert got == EXPECTED
    assert all(set(t) == {"nodeid", "theorems", "implementation", "device", "dtype", "outcome"}
               for t in data["tests"])  # fmt: skip


def test_collection_error_is_recorded(tmp_path):
    d = _example_dir(tmp_path)
    (d / "test_broken.py").write_text("import no_such_module_xyz\n")
    out = d / "r.json"
    _run(d, f"--pyverify-results={out}")
    rows = {t["nodeid"]: t["outcome"] for t in json.loads(out.read_text())["tests"]}
    assert rows["test_broken.py"] == "error"


def test_collect_matrix(tmp_path):
    d = _example_dir(tmp_path)
    rows = collect_matrix(["test_example.py"], rootdir=d)
    assert [(r["nodeid"], r["theorems"], r["implementation"], r["device"], r["dtype"])
            for r in rows] == [e[:5] for e in EXPECTED]  # fmt: skip
    assert all("outcome" not in r for r in rows)


def test_collect_matrix_reports_collection_failure(tmp_path):
    d = _example_dir(tmp_path)
    (d / "test_broken.py").write_text("import no_such_module_xyz\n")
    with pytest.raises(CollectionError, match="no_such_module_xyz"):
        collect_matrix(["."], rootdir=d)


def test_trace_of_a_synthetic_repo(tmp_path, capsys):
    """run_trace on a repo whose Lean library lacks most IDs: printed matrix, exit code 1."""
    d = _example_dir(tmp_path)
    lean = d / "lean"
    (lean / "Pldr").mkdir(parents=True)
    (lean / "Pldr.lean").write_text("module\npublic import Pldr.A\n")
    (lean / "Pldr" / "A.lean").write_text(
        "module\n/-- [softmax_shift] shift. -/\ntheorem s : True := trivial\n"
        "/-- [dag_floor] floor. -/\ntheorem d : True := trivial\n"
    )
    (d / "property_tests").mkdir()
    (d / "property_tests" / "conftest.py").write_text(
        'pytest_plugins = ["pyverify.theorems.pytest_plugin"]\n'
    )
    (d / "property_tests" / "test_example.py").write_text(EXAMPLE)
    r = trace_matrix(d)
    assert r.manifest_ids == ("dag_floor", "softmax_shift")
    assert r.gaps == ()  # dag_floor: reference (test_exact), kernels (skipped/error tests)
    assert ("property_tests/test_example.py::test_exact", "rope_group") in r.unknown
    assert "sdpa_special_case" in r.missing
    assert run_trace(d) == 1
    out = capsys.readouterr().out
    assert "softmax_shift" in out and "trace FAILED" in out
    assert main(["--repo", str(d)]) == 1


# --------------------------------------------------------------------------- the real repo
def test_repository_trace_has_no_gap_and_no_unknown_id():
    """Every Lean theorem ID has property tests on the reference and on the kernels, and
    every property test names only IDs the Lean library carries."""
    r = trace_matrix(REPO)
    assert r.ok, format_matrix(r)
    assert set(r.manifest_ids) == set(THEOREM_IDS)
