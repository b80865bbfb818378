"""pytest-benchmark cases (timings are recorded, never asserted)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from kernel_helpers import make_heads

import pyverify.kernels as kern
from pyverify.bench import format_table, time_pair

B, H, S, DK = 1, 4, 256, 64


@pytest.fixture(scope="module")
def qkv():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(B, H, S, DK, generator=g) for _ in range(3)]


@pytest.mark.benchmark(group="collapsed")
def test_bench_collapsed(benchmark, qkv):
    G = torch.eye(DK).expand(H, DK, DK)
    out = benchmark(kern.collapsed_attention, *qkv, G)
    assert out.shape == (B, H, S, DK)


@pytest.mark.benchmark(group="collapsed")
def test_bench_sdpa(benchmark, qkv):
    out = benchmark(lambda: F.scaled_dot_product_attention(*qkv, is_causal=True))
    assert out.shape == (B, H, S, DK)


@pytest.mark.benchmark(group="uncached")
def test_bench_uncached(benchmark, qkv):
    p = kern.from_reference(make_heads(H, DK, a_dff=32), "cpu", torch.float32)
    out = benchmark(kern.plga_attention, *qkv, p)
    assert out.shape == (B, H, S, DK)


def test_time_pair_and_table_shape():
    """The timing helper and the table formatter work (no timing assertions)."""
    o, b = time_pair(lambda: None, lambda: None, torch.device("cpu"), reps=3, warmup=1)
    assert o >= 0 and b >= 0
    row = {"benchmark": "x", "shape": [1, 2], "dtype": "float32", "device": "cpu", "ours_ms": o,
           "baseline_ms": b, "ratio": 1.0, "target": 1.1, "meets_target": True}  # fmt: skip
    assert "ratio" in format_table({"rows": [row]})


def test_bench_device_errors_are_one_line(capsys):
    from pyverify.cli import main

    for dev, msg in (("bogus", "not a torch device"), ("mps", "not supported")):
        assert main(["bench", "--device", dev]) == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1 and "Traceback" not in err


def test_peak_extra_bytes_counts_live_temporaries():
    from pyverify.bench.memory import peak_extra_bytes

    x = torch.randn(256, 256)  # 256 KiB

    def two_live():
        a = x * 2
        b = a * 2  # a and b alive together: 512 KiB
        del a
        return b.t()  # a view: nothing new

    assert peak_extra_bytes(two_live, torch.device("cpu")) == 2 * 256 * 256 * 4
    assert peak_extra_bytes(lambda: x.view(-1)[:10], torch.device("cpu")) == 0


def test_rows_against_the_author_run(monkeypatch):
    """The row functions run end to end (tiny sizes, a fake timer: wiring, not timing)."""
    import pyverify.bench.author_rows as br
    import pyverify.bench.cases as bc
    from pyverify.bench.rows import make_row as _row

    for name, val in (("H", 2), ("DK", 8), ("A_DFF", 6), ("N_RES", 1), ("N_DENSE", 2)):
        monkeypatch.setattr(br, name, val)
        monkeypatch.setattr(bc, name, val)
    calls = []

    def timer(ours, base, device, **_kw):
        calls.append((ours(), base()))
        return 1.0, 2.0

    rows: list = []
    cpu, f32 = torch.device("cpu"), torch.float32
    args = (3, lambda _s: None, rows, _row, timer)
    br.bench_p2_author(cpu, f32, [(1, 16)], *args)
    br.bench_learner(cpu, f32, [1], *args)
    br.bench_p3_author(cpu, f32, [(2, 8, 1)], *args)
    br.bench_gcached(cpu, f32, [(1, 16)], *args)
    names = [r["benchmark"] for r in rows]
    assert names == [
        "P2 ours/author", "L learner/GEMM", "P3 decode ours/author", "P3 decode KV+G/full",
        "Gc G-cached/SDPA",
    ]  # fmt: skip
    assert rows[0]["ours_peak_mib"] > 0 and rows[0]["baseline_peak_mib"] > 0
    assert rows[1]["rate_fraction"] == 2.0 and rows[4]["target"] == 1 + 1.5 * 8 / 16
    # P2: ours and the author's layer agree (float32)
    o, (a, _) = calls[0]
    assert torch.allclose(o, a, rtol=1e-4, atol=1e-5)
    # P3: the two decode steps give the same logits
    (ol, _), (al, _) = calls[2]
    assert torch.allclose(ol, al, rtol=1e-4, atol=1e-4)
    # P3 floor: the weight products alone, timed against the same author step
    assert rows[2]["floor_ratio"] == 0.5 and calls[3][0].shape == (2, ol.shape[-1])
    # P3 full recompute: the same step against the forward pass over context + token
    # (the uncached pass recomputes G with the new query, so the logits differ)
    (sl, _), (full, _) = calls[4]
    assert sl.shape == ol.shape and full.shape == (2, 9, ol.shape[-1])


def test_time_pair_with_grad_times_training_steps():
    w = torch.ones(3, requires_grad=True)

    def step():
        (w * 2).sum().backward()

    o, b = time_pair(step, step, torch.device("cpu"), reps=3, warmup=1, grad=True)
    assert o >= 0 and b >= 0 and w.grad is not None
    with pytest.raises(RuntimeError):  # the default: inference mode, no autograd
        time_pair(step, step, torch.device("cpu"), reps=3, warmup=1)


def test_train_step_row_is_skipped_without_a_checkout(monkeypatch):
    from pyverify.bench.train_rows import bench_train_step
    from pyverify.collapse.author import ENV

    monkeypatch.delenv(ENV, raising=False)
    said, rows = [], []
    msg = bench_train_step(torch.device("cpu"), 3, said.append, rows, None, None)
    assert rows == [] and said == [msg] and "skipped" in msg and ENV in msg


@pytest.mark.skipif(
    not __import__("os").environ.get("PYVERIFY_AUTHOR_SRC", "").strip(),
    reason="PYVERIFY_AUTHOR_SRC is not set: no checkout of the author's code to time",
)
def test_train_step_row_times_the_same_step_on_both_sides():
    """Wiring, not timing: both callables train one step of the same model on the same
    batch (their first loss agrees to float32 rounding), and the row is made."""
    from pyverify.bench.rows import make_row
    from pyverify.bench.train_rows import NAME, bench_train_step, step_pair
    from pyverify.collapse import author as au
    from pyverify.collapse.config import preset_config

    cpu = torch.device("cpu")
    mm, rm = au.author_modules(au.author_src("test"), "test")
    with au.quiet(), au.process_group(cpu):
        ours, theirs = step_pair(preset_config("small"), cpu, rm, mm)
        (lo, _), (lt, _) = ours(), theirs()
    assert abs(lo - lt) <= 1e-5 * lt
    calls, rows = [], []

    def timer(o, b, device, **kw):
        calls.append(kw)
        o(), b()
        return 1.0, 2.0

    assert bench_train_step(cpu, 3, lambda _s: None, rows, make_row, timer) is None
    assert [r["benchmark"] for r in rows] == [NAME] and rows[0]["ratio"] == 0.5
    assert calls[0]["grad"] is True and rows[0]["shape"]["preset"] == "small"


def test_machine_facts_name_the_cpu_and_the_dispatch():
    """The bench JSON's meta.machine: what the ratios depend on besides the code."""
    import json

    from pyverify.bench.machine import CPU_FLAGS, machine_facts
    from pyverify.dispatch import capability

    facts = machine_facts()
    json.dumps(facts)  # JSON-serialisable
    assert set(facts["cpu_flags"]) <= set(CPU_FLAGS)
    assert facts["torch_cpu_capability"] == capability()
    assert facts["threads"] == torch.get_num_threads()
    assert facts["sdpa_kernel"].startswith("aten::")
    cpuinfo = open("/proc/cpuinfo").read() if __import__("os").path.exists("/proc/cpuinfo") else ""
    if "avx2" in cpuinfo.split():
        assert "avx2" in facts["cpu_flags"] and facts["cpu_vendor"] in cpuinfo


def test_quiet_summary_takes_the_median_of_the_runs():
    """python -m pyverify.bench.quiet's summary: every run's ratio, their median against
    the target, and the runs taken under load marked."""
    from pyverify.bench.quiet import summarise

    def res(ratio, load):
        row = {"benchmark": "P3 decode ours/author", "shape": {"B": 1, "context": 256},
               "ratio": ratio, "target": 0.7}  # fmt: skip
        meta = {"load_before": load, "load_after": load, "cpu_count": 2, "threads": 2,
                "machine": {"cpu_vendor": "X"}}  # fmt: skip
        return {"meta": meta, "rows": [row]}

    text = summarise([res(0.72, 0.5), res(0.66, 0.6), res(0.69, 3.1)])
    line = next(x for x in text.splitlines() if x.startswith("| P3"))
    assert "| 0.720 | 0.660 | 0.690 | 0.690 | 0.700 | yes |" in line
    assert "| 3 (under load) |" in text and "| 1 |" in text and '"cpu_vendor": "X"' in text
    worse = summarise([res(0.72, 0.5), res(0.71, 0.5)])
    assert "| 0.715 | 0.700 | **no** |" in worse


def test_breakdown_counts_the_operators_of_one_call():
    """python -m pyverify.bench.breakdown's profile: calls per call of the profiled
    function, grouped; the table names them (a profile, no timing is asserted)."""
    from pyverify.bench.breakdown import breakdown, format_breakdown

    a, w = torch.randn(64, 32), torch.randn(32, 16)

    def fn():
        return torch.mm(a, w).add_(1.0).relu()

    res = breakdown(fn, calls=10, warmup=1)
    ops = {r["op"]: r for r in res["ops"]}
    assert ops["aten::mm"]["calls"] == 1 and ops["aten::mm"]["group"] == "weight products"
    assert ops["aten::add_"]["calls"] == 1 and ops["aten::relu"]["group"] == "other operators"
    assert res["cpu_us"] > 0 and "| weight products |" in format_breakdown("t", res)
