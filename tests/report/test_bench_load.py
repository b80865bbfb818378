"""Benchmark figures taken under load are marked, and refused unless --bench-anyway."""

from __future__ import annotations

import json

from report_helpers import Fake

from pyverify.report import generate_report
from pyverify.report.bench_load import apply_load_policy, load_slack, settle_load, under_load

QUIET = {"load_before": 0.1, "load_after": 2.1, "cpu_count": 8, "threads": 2}
LOADED = {"load_before": 25.8, "load_after": 27.0, "cpu_count": 2, "threads": 2}


def test_under_load_rule():
    assert under_load(QUIET) is False
    assert under_load(LOADED) is True
    assert under_load({**QUIET, "load_after": 8.0}) is True  # more than the run explains
    assert under_load({}) is None


def test_policy_refuses_or_marks():
    lines = []
    res = {"status": "passed", "meta": dict(LOADED), "rows": [{"x": 1}]}
    refused = apply_load_policy(res, False, lines.append)
    assert refused["status"] == "refused" and refused["rows"] == []
    assert "under load" in lines[0] and "--bench-anyway" in lines[0]
    kept = apply_load_policy(res, True, lines.append)
    assert kept["status"] == "passed" and kept["meta"]["under_load"] is True and kept["rows"]
    quiet = apply_load_policy({"status": "passed", "meta": dict(QUIET), "rows": []}, False, print)
    assert quiet["status"] == "passed" and quiet["meta"]["under_load"] is False


def _loaded(fake):
    plain = fake.bench

    def bench(progress):
        res = plain(progress)
        res["meta"] = {**res.get("meta", {}), **LOADED}
        return res

    fake.bench = bench
    return fake.phases()


def test_report_refuses_loaded_figures(tmp_path, fake):
    out = tmp_path / "r"
    quiet = {"progress": lambda _s: None, "repo": tmp_path, "quick": True}
    generate_report(out, phases=_loaded(fake), **quiet)
    assert not (out / "benchmarks.json").exists()
    index = (out / "index.md").read_text()
    assert "**Not recorded**: measured under load (load average 25.8" in index
    ver = (out / "verification.json").read_text()
    assert "25.8" not in ver and json.loads(ver)["benchmarks"]["status"] == "ran"
    calm = Fake(tmp_path).phases()  # the same report on a quiet machine: the same verdicts
    generate_report(out / "quiet", phases=calm, **quiet)
    assert (out / "quiet" / "benchmarks.json").exists()
    assert (out / "quiet" / "verification.json").read_text() == ver
    generate_report(out, phases=_loaded(fake), bench_anyway=True, **quiet)
    bench = json.loads((out / "benchmarks.json").read_text())
    assert bench["meta"]["under_load"] is True
    assert "**Measured under load**" in (out / "index.md").read_text()
    # a later refused run keeps the earlier figures (the JSON and its plot) untouched
    kept = {n: (out / n).read_bytes() for n in ("benchmarks.json", "benchmark_ratios.png")}
    generate_report(out, phases=_loaded(fake), **quiet)
    assert {n: (out / n).read_bytes() for n in kept} == kept
    assert "are an earlier run's" in (out / "index.md").read_text()


def test_settle_load_waits_for_the_load_to_decay(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert load_slack(2) == 1.0
    readings, slept, lines = iter([1.9, 1.5, 1.2, 0.9, 0.5]), [], []
    last = settle_load(lines.append, load=lambda: next(readings), sleep=slept.append, poll=5)
    assert last == 0.9 and slept == [5, 5, 5]  # stops at the first reading below the slack
    assert len(lines) == 1 and "1.90" in lines[0]


def test_settle_load_gives_up_after_the_timeout(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    slept = []
    last = settle_load(print, load=lambda: 3.0, sleep=slept.append, poll=5, timeout=20)
    assert last == 3.0 and sum(slept) == 20  # still loaded: the policy decides
    assert settle_load(print, load=lambda: 0.2, sleep=slept.append) == 0.2 and sum(slept) == 20


def test_bench_table_shows_what_a_row_carries_beside_its_ratio():
    from pyverify.bench.rows import row_note as _row_note

    assert _row_note({"ours_peak_mib": 3.0, "baseline_peak_mib": 11.8}) == "peak MiB 3.0 vs 11.8"
    assert _row_note({"learner_gflops": 55.76, "gemm_gflops": 85.28}) == "GFLOP/s 55.8 vs GEMM 85.3"
    assert _row_note({"floor_ratio": 0.71}) == "floor 0.710 (weight products alone)"
    assert _row_note({}) == ""


def test_a_malformed_saved_collapse_run_is_an_error_line_not_a_crash(tmp_path, fake):
    out = tmp_path / "r"
    (out / "collapse").mkdir(parents=True)
    (out / "collapse" / "collapse.json").write_text("{}")  # valid JSON, no settings
    generate_report(out, phases=fake.phases(), progress=lambda _s: None, repo=tmp_path, quick=True)
    index = (out / "index.md").read_text()
    assert "The saved run is not an ablation study: rerun `pyverify collapse`." in index
    assert "collapse.json: not an ablation study (rerun `pyverify collapse`)." in index  # ledger
    assert (out / "environment.json").exists()
