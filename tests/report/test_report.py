"""The report: aggregation, theorem rows, determinism, outputs, failure propagation."""

from __future__ import annotations

import json

import pytest
from report_helpers import Fake, fake_manifest, fixture_results

from pyverify.report import aggregate_tests, generate_report, theorem_rows, verification_data
from pyverify.report.aggregate import principal_theorem
from pyverify.report.serialize import dumps, round_floats, round_sig
from pyverify.theorems import THEOREM_IDS


def _quiet(_msg: str) -> None:
    pass


def _report(out, fake, repo, progress=_quiet, **options) -> int:
    """``generate_report(out)`` quick, on the fake's phases, with ``repo`` as the repository."""
    return generate_report(
        out, quick=True, progress=progress, phases=fake.phases(), repo=repo, **options
    )


# --------------------------------------------------------------------------- aggregation
def test_aggregate_fixture_results():
    agg = aggregate_tests(fixture_results())
    assert agg["totals"] == {"passed": 9, "failed": 1, "skipped": 1, "error": 1, "total": 12}
    sdpa = agg["by_theorem"]["sdpa_special_case"]
    assert sdpa["reference"] == {"passed": 2, "failed": 0, "skipped": 0, "error": 0, "total": 2}
    assert sdpa["kernels"] == {"passed": 2, "failed": 0, "skipped": 1, "error": 0, "total": 3}
    soft = agg["by_theorem"]["softmax_shift"]
    assert soft["kernels"]["failed"] == 1 and soft["kernels"]["error"] == 1
    assert agg["by_theorem"]["rope_commutant_char"]["reference"]["passed"] == 1
    assert agg["by_implementation"]["kernels"]["cpu/float32"]["total"] == 2
    assert agg["by_implementation"]["none"]["-/-"]["total"] == 1
    assert agg["unattributed"] == 1
    assert agg["unknown_theorems"] == ["bogus_id"]
    assert agg["failures"] == sorted(
        [
            "property_tests/test_softmax_shift.py::test_shift[kernels-cpu-float64]",
            "property_tests/test_softmax_shift.py::test_shift[kernels-cpu-float32]",
        ]
    )


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"schema": 2, "tests": []},
        {"schema": 1, "tests": [{"nodeid": "x", "outcome": "meh"}]},
        {"schema": 1, "tests": [{"nodeid": "x"}]},
    ],
)
def test_aggregate_rejects_malformed(bad):
    with pytest.raises(ValueError):
        aggregate_tests(bad)


def test_principal_theorem_and_rows():
    man = fake_manifest(missing=("dag_floor",))
    t = principal_theorem(man["theorems"], "rope_group")
    assert t["name"].endswith(".rope_group") and t["line"] == 10
    assert principal_theorem(man["theorems"], "dag_floor") is None
    tests = {"status": "failed", "aggregate": aggregate_tests(fixture_results())}
    cc_rows = [
        {"theorems": ["cache_equivalence"], "passed": True},
        {"theorems": ["collapse_absorption"], "passed": False},
    ]
    rows = theorem_rows({"status": "passed", "manifest": man}, tests, cc_rows)
    by = {r["id"]: r for r in rows}
    assert [r["id"] for r in rows] == list(THEOREM_IDS)
    assert by["sdpa_special_case"]["ok"]
    assert by["sdpa_special_case"]["lean"]["status"] == "proved"
    assert by["sdpa_special_case"]["lean"]["tagged"] == 2
    assert by["sdpa_special_case"]["tests"]["kernels"]["status"] == "passed"
    assert not by["softmax_shift"]["ok"]  # a failing kernels test
    assert by["softmax_shift"]["tests"]["kernels"]["status"] == "failed"
    assert by["dag_floor"]["lean"]["status"] == "missing" and not by["dag_floor"]["ok"]
    assert by["prefix_consistency"]["tests"]["reference"]["status"] == "none"
    assert not by["prefix_consistency"]["ok"]  # no tests at all
    assert by["cache_equivalence"]["crosscheck"]["status"] == "passed"
    assert by["collapse_absorption"]["crosscheck"]["status"] == "failed"
    assert by["rope_group"]["crosscheck"]["status"] == "n/a"
    # nothing ran: nothing fails
    idle = theorem_rows({"status": "skipped"}, {"status": "skipped"}, [])
    assert all(r["ok"] for r in idle)


def test_round_and_dumps():
    assert round_sig(1.23456789e-13, 3) == 1.23e-13
    assert round_sig(float("nan")) is None and round_sig(float("inf")) == "inf"
    data = round_floats({"b": (1.0000001, 2), "a": [0.1 + 0.2, True, None]})
    assert data == {"b": [1.0, 2], "a": [0.3, True, None]}
    assert dumps(data).startswith('{\n  "a"')
    with pytest.raises(ValueError):
        dumps({"x": float("nan")})


# --------------------------------------------------------------------------- the report
def test_report_outputs_and_determinism(tmp_path, fake):
    out = tmp_path / "reports"
    lines: list[str] = []
    rc1 = _report(out, fake, tmp_path, progress=lines.append)
    first = (out / "verification.json").read_bytes()
    env1 = json.loads((out / "environment.json").read_text())
    png1 = (out / "commutant_residual.png").read_bytes()
    rc2 = _report(out, fake, tmp_path)
    second = (out / "verification.json").read_bytes()
    assert first == second  # byte-identical despite built/cached, timings, benchmark numbers
    assert png1 == (out / "commutant_residual.png").read_bytes()
    assert rc1 == rc2 == 1  # the fixture has failing tests and theorems without tests
    for name in (
        "index.md",
        "verification.json",
        "measurements.json",
        "environment.json",
        "lean_manifest.json",
        "benchmarks.json",
        "commutant_residual.png",
        "error_by_dtype.png",
        "benchmark_ratios.png",
    ):
        assert (out / name).is_file(), name
    # progress lines for every phase
    for phase in ("[1/5]", "[2/5]", "[3/5]", "[4/5]", "[5/5]", "fake lean build", "crosscheck ["):
        assert any(phase in ln for ln in lines), phase
    # environment kept apart: host, time, durations only there
    data = json.loads(first)
    text = first.decode()
    assert env1["host"] and env1["generated_at"] and "lean" in env1["durations_s"]
    for key in ("generated_at", "host", "durations", "seconds", "ours_ms"):
        assert key not in text, key
    assert str(tmp_path) not in text  # no host paths either
    assert data["benchmarks"]["status"] == "ran"
    assert json.loads((out / "benchmarks.json").read_text())["rows"][0]["ours_ms"] == 3.0
    # the G_LM provenance is in the JSON and the index
    prov = data["diagnostics"]["trained"]["provenance"]
    assert prov["file"] == "trained.npz" and len(prov["sha256"]) == 64
    index = (out / "index.md").read_text()
    assert prov["sha256"] in index
    for tid in THEOREM_IDS:
        assert f"| `{tid}` |" in index, tid
    assert "Pldr.T0.sdpa_special_case" in index
    assert "commutant_residual.png" in index and "error_by_dtype.png" in index
    assert "benchmark_ratios.png" in index
    assert data["status"]["tests"] == "failed" and not data["ok"]


def test_report_passes_when_everything_passes(tmp_path):
    results = {
        "schema": 1,
        "tests": [
            {
                "nodeid": f"t::{tid}[{impl}]",
                "theorems": [tid],
                "implementation": impl,
                "device": "cpu",
                "dtype": "float64",
                "outcome": "passed",
            }
            for tid in THEOREM_IDS
            for impl in ("reference", "kernels")
        ],
    }
    fake = Fake(tmp_path, results=results)
    out = tmp_path / "r"
    assert _report(out, fake, tmp_path) == 0
    data = json.loads((out / "verification.json").read_text())
    assert data["ok"] and all(r["ok"] for r in data["theorems"])
    assert "Overall: **passed**" in (out / "index.md").read_text()


def test_missing_lean_theorem_fails(tmp_path):
    fake = Fake(tmp_path, missing=("dag_floor",))
    out = tmp_path / "r"
    _report(out, fake, tmp_path, tests=False, bench=False)
    data = json.loads((out / "verification.json").read_text())
    row = next(r for r in data["theorems"] if r["id"] == "dag_floor")
    assert row["lean"]["status"] == "missing" and not data["ok"]
    assert "no theorem carries the ID [dag_floor]" in (out / "index.md").read_text()


@pytest.mark.parametrize("phase", ["lean", "tests", "crosscheck", "diagnostics"])
def test_crashing_phase_is_reported(tmp_path, phase):
    fake = Fake(tmp_path, crash=phase)
    out = tmp_path / "r"
    rc = _report(out, fake, tmp_path, bench=False)
    assert rc == 1
    data = json.loads((out / "verification.json").read_text())
    key = {
        "lean": "lean",
        "tests": "tests",
        "crosscheck": "crosscheck",
        "diagnostics": "diagnostics",
    }[phase]
    assert data["status"][key] == "error"
    assert "exploded" in (out / "index.md").read_text()


def test_skipped_phases_and_stale_files(tmp_path, fake):
    out = tmp_path / "r"
    _report(out, fake, tmp_path)
    assert (out / "benchmark_ratios.png").exists()
    # skip everything optional: stale benchmark files go, the old manifest names stay
    rc = _report(out, fake, tmp_path, lean=False, tests=False, bench=False)
    assert rc == 0
    assert not (out / "benchmark_ratios.png").exists() and not (out / "benchmarks.json").exists()
    data = json.loads((out / "verification.json").read_text())
    assert data["status"]["lean"] == "skipped" and data["status"]["bench"] == "skipped"
    row = data["theorems"][0]
    assert row["lean"]["status"] == "not run" and row["lean"]["name"].startswith("Pldr.")
    assert data["options"] == {"lean": False, "tests": False, "bench": False, "quick": True}


def test_verification_data_is_pure(fake):
    """The JSON part alone, twice from the same inputs: identical bytes."""
    lean = fake.lean(None, _quiet)
    tests = fake.tests(None, _quiet)
    cc = fake.crosscheck(True, _quiet)
    diag = fake.diagnostics(_quiet)
    model = fake.model(_quiet)
    kw = dict(
        lean=lean,
        tests=tests,
        crosscheck=cc,
        diagnostics=diag,
        model=model,
        bench={"status": "skipped"},
        options={"quick": True},
    )
    assert dumps(verification_data(**kw)) == dumps(verification_data(**kw))


def test_cli_options(monkeypatch, tmp_path):
    import pyverify.report as rep
    from pyverify.cli import build_parser

    seen = {}

    def fake_generate(out, **kw):
        seen.update(kw, out=out)
        return 0

    monkeypatch.setattr(rep, "generate_report", fake_generate)
    parser = build_parser()
    args = parser.parse_args(["report", "-o", str(tmp_path), "--no-lean", "--no-bench"])
    assert args.func(args) == 0
    assert seen == {"out": tmp_path, "lean": False, "tests": True, "bench": False, "quick": False,
                    "bench_anyway": False, "collapse": False}  # fmt: skip
    args = parser.parse_args(["report", "-o", str(tmp_path), "--quick"])
    assert args.func(args) == 0
    assert seen["quick"] is True and seen["lean"] is True
