"""The cross-check sweep: options, sharding, a passing tiny sweep, a caught broken kernel."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import pyverify.kernels as kern
from pyverify import crosscheck as cc


@pytest.mark.parametrize("text", ["0/2", "3/2", "a/b", "1", "1/0", "-1/2", "1/2/3", "", " / "])
def test_parse_shard_rejects_bad_input(text):
    with pytest.raises(ValueError, match="k/n"):
        cc.parse_shard(text)


@pytest.mark.parametrize(("text", "want"), [("1/1", (1, 1)), ("2/4", (2, 4)), (" 3/3 ", (3, 3))])
def test_parse_shard_accepts(text, want):
    assert cc.parse_shard(text) == want


def test_parse_dtypes_and_devices():
    assert cc.parse_dtypes(None) == list(cc.DTYPE_NAMES)
    assert cc.parse_dtypes(["bf16", "fp64", "float64"]) == ["float64", "bfloat16"]
    with pytest.raises(ValueError, match="unknown dtype"):
        cc.parse_dtypes(["int8"])
    assert cc.parse_devices(None) == cc.available_devices()
    assert cc.parse_devices(["cpu"]) == ["cpu"]
    with pytest.raises(ValueError, match="device"):
        cc.parse_devices(["tpu"])
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            cc.parse_devices(["cuda"])


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_shards_partition_the_sweep(n):
    cases = cc.list_cases(["cpu"], list(cc.DTYPE_NAMES), quick=False)
    ids = [c.case_id for c in cases]
    assert len(set(ids)) == len(ids)
    parts = [cc.shard_cases(cases, (k, n)) for k in range(1, n + 1)]
    got = [c.case_id for p in parts for c in p]
    assert sorted(got) == sorted(ids)  # every case exactly once
    assert max(len(p) for p in parts) - min(len(p) for p in parts) <= 1


def test_case_ids_and_seeds_are_stable():
    a = cc.Case("random", (2, 3, 9, 8), "cpu", "float32")
    b = cc.Case("random", (2, 3, 9, 8), "cuda", "float16")
    assert a.case_id == "random-B2H3S9dk8-cpu-float32"
    assert a.seed == b.seed == 1817367489  # CRC-32: the same inputs on every device/dtype


def test_slice_errors():
    y = np.ones((2, 3, 4, 4))
    x = y.copy()
    x[1, 2, 0, 0] += 0.5
    e = cc.slice_errors(x, y)
    assert e.shape == (6,) and e[-1] == 0.5 and np.all(e[:-1] == 0)
    assert cc.slice_errors(np.zeros((2, 2)), np.zeros((2, 2)))[0] == 0.0


def test_tiny_sweep_passes_and_serialises():
    lines = []
    res = cc.run_crosscheck(["cpu"], ["float64", "float32"], quick=True, progress=lines.append)
    assert res.ok, cc.format_crosscheck(res)
    assert len(lines) == len(res.cases) > 0
    stages = {(r.dtype, r.stage) for r in res.rows}
    for s in cc.STAGES:
        assert ("float64", s) in stages and ("float32", s) in stages
    assert {r.kind for r in res.rows} == {"random", "mpmath", "trained", "identity"}
    # every stage has a proved bound, and it is the row's tolerance: every entry within it
    for r in res.rows:
        assert r.proved is not None and r.proved_theorems, r
        assert r.tolerance_rule == "proved: " + ", ".join(r.proved_theorems), r
        assert r.proved <= r.tolerance and r.max_rel <= r.tolerance, r
        assert 0.0 <= r.proved_ratio <= 1.0, r
    # the kernels' LayerNorm statistics, certified, within the two-pass worst case
    ln = [r for r in res.rows if r.path == "kernels.uncached" and r.stage in ("A0", "A1", "A")]
    assert ln and all(r.note.startswith("statistics at") for r in ln)
    text = cc.format_crosscheck(res)
    assert "crosscheck passed" in text and "mpmath" in text
    json.dumps(res.to_dict())  # JSON-ready
    # the same seeds give the same numbers
    again = cc.run_crosscheck(["cpu"], ["float64"], quick=True, shard=(1, 4))
    first = {(r.case, r.path, r.stage): r.max_rel for r in res.rows}
    for r in again.rows:
        assert first[(r.case, r.path, r.stage)] == r.max_rel


def test_a_dtype_torch_refuses_is_left_out_and_named(monkeypatch):
    """Simulated refusal (as torch's bf16 SDPA under a forced avx2 on an AMX Xeon)."""
    monkeypatch.setenv("PYVERIFY_TORCH_REFUSES", '{"bf16": "RuntimeError: simulated"}')
    res = cc.run_crosscheck(["cpu"], ["float32", "bfloat16"], quick=True, shard=(1, 4))
    assert res.cases and all(c.endswith("-cpu-float32") for c in res.cases)
    assert res.left_out == {"cpu bfloat16": "torch refuses it on this CPU: RuntimeError: simulated"}
    assert res.to_dict()["left_out"] == res.left_out
    assert "left out: cpu bfloat16 (torch refuses it on this CPU" in cc.format_crosscheck(res)
    monkeypatch.delenv("PYVERIFY_TORCH_REFUSES")
    assert cc.run_crosscheck(["cpu"], ["float64"], quick=True, shard=(1, 8)).left_out == {}


def test_low_precision_case_passes():
    case = cc.Case("random", (1, 2, 17, 8), "cpu", "bfloat16")
    rows = cc.run_case(case)
    assert all(r.passed for r in rows), rows
    out = next(r for r in rows if r.path == "kernels.uncached" and r.stage == "output")
    assert 1e-4 < out.tolerance < 1e-1  # 2 x torch SDPA's own bf16 error


def test_broken_kernel_fails(monkeypatch):
    real = kern.plga_attention

    def broken(*args, **kwargs):
        res = real(*args, **kwargs)
        if isinstance(res, tuple):
            return res[0] * 1.001, res[1]
        return res * 1.001

    monkeypatch.setattr(kern, "plga_attention", broken)
    res = cc.run_crosscheck(["cpu"], ["float64"], quick=True)
    assert not res.ok
    bad = {(r.path, r.stage) for r in res.failures}
    assert ("kernels.uncached", "output") in bad and ("kernels.g_cached", "output") in bad
    assert ("kernels.collapsed", "output") not in bad  # the collapsed path is untouched
    assert "FAILED" in cc.format_crosscheck(res)


def test_broken_metric_tensor_fails_its_stage(monkeypatch):
    import pyverify.kernels.metric as head

    real = head._energy_rows

    def broken(A_rows, p, check):
        A_LM, A_P, G = real(A_rows, p, check)
        return A_LM * 1.01, A_P, G

    monkeypatch.setattr(head, "_energy_rows", broken)
    rows = cc.run_case(cc.Case("random", (1, 2, 9, 8), "cpu", "float64"))
    failed = {r.stage for r in rows if not r.passed}
    assert failed == {"A_LM"}


def test_learner_with_a_bfloat16_product_fails_its_sub_stage(monkeypatch):
    """Issue 35's mutant for the learner: its per-head GEMMs rounded to bfloat16.

    The traced learner runs the same patched function (it reproduces the mutant's ``A``),
    so it is the proved bound, not the trace, that catches it: the first SwiGLU block's
    row (``U1.f1``, measured/proved > 1).
    """
    import pyverify.kernels.metric as km

    real = km._bmm

    def bf16(b, x, W):
        return real(b, x, W).to(torch.bfloat16).float()

    monkeypatch.setattr(km, "_bmm", bf16)
    rows = cc.run_case(cc.Case("random", (1, 2, 17, 16), "cpu", "float32"))
    bad = {r.stage: r for r in rows if not r.passed}
    assert "U1.f1" in bad and bad["U1.f1"].proved_ratio > 1, rows
    assert all(r.passed for r in rows if r.stage in ("D", "A0")), rows


def test_crashing_case_becomes_failed_row(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(kern, "collapsed_attention", boom)
    rows = cc.run_case(cc.Case("trained", (1, 14, 8, 64), "cpu", "float32", 0))
    assert len(rows) == 1 and rows[0].stage == "error" and not rows[0].passed
    assert "kaboom" in rows[0].note


def test_cli_exit_status(monkeypatch, capsys, tmp_path):
    from pyverify.cli import build_parser

    parser = build_parser()
    out = tmp_path / "x.json"
    args = parser.parse_args(
        [
            "crosscheck",
            "--device",
            "cpu",
            "--dtype",
            "fp64",
            "--quick",
            "--shard",
            "2/5",
            "--json",
            str(out),
            "--no-progress",
        ]
    )
    assert args.func(args) == 0
    assert "crosscheck passed" in capsys.readouterr().out
    assert json.loads(out.read_text())["ok"] is True
    monkeypatch.setattr(
        cc.runners,  # the sweep driver's own reference
        "run_case",
        lambda case: [
            cc.CrosscheckRow(
                case.case_id,
                case.kind,
                "p",
                "a",
                case.shape,
                case.device,
                case.dtype,
                "output",
                1.0,
                1.0,
                0.1,
                False,
            )
        ],
    )
    assert args.func(args) == 1


def test_a_stage_without_a_proved_bound_fails_with_its_reason():
    """No tolerance without a theorem: a row whose bound's premises failed is a failure
    naming why, even where the error is 0; with a bound, the bound decides."""
    from pyverify.crosscheck.bounds import stage_bound
    from pyverify.crosscheck.compare import Comparer, Proved

    case = cc.list_cases(["cpu"], ["float64"], True)[0]
    cmp = Comparer(case, "kernels.uncached", "reference.float64")
    x = np.ones((1, 1, 2, 2))

    def premise_fails():
        raise ValueError("a score's error bound reaches 1")

    row = cmp.stage("output", x, x, stage_bound("output", premise_fails))
    assert not row.passed and row.tolerance_rule == "no proved bound"
    assert row.proved_note == "no proved bound: a score's error bound reaches 1"
    assert not cmp.stage("output", x, x, None).passed
    ok = cmp.stage("output", x + 1e-9, x, Proved(np.full(x.shape, 2e-9), ("fp_head_output",), ""))
    bad = cmp.stage("output", x + 1e-9, x, Proved(np.full(x.shape, 5e-10), ("fp_head_output",), ""))
    assert ok.passed and not bad.passed and ok.tolerance_rule == "proved: fp_head_output"


def test_a_subject_off_the_cpu_is_refused_by_the_sweep():
    from pyverify.conformance.subject import Subject
    from pyverify.conformance.sweep import run_sweep
    from pyverify.crosscheck.runners import OFF_CPU

    sub = Subject("plugin", "cuda", "float32", object(), frozenset({"head"}), "float32")
    with pytest.raises(ValueError, match=OFF_CPU.split(":")[0]):
        run_sweep(sub, quick=True)


def test_cuda_cases_are_left_out_by_name_before_any_probe(monkeypatch):
    """A machine with CUDA (simulated: no GPU needed): its cases are left out by name, not
    probed (the reduced dtypes' CUDA arithmetic is not modelled: the probe would raise)."""
    from pyverify.crosscheck import runners
    from pyverify.crosscheck.runners import OFF_CPU

    monkeypatch.setattr(runners, "parse_devices", lambda _d: ["cpu", "cuda"])
    ran: list[str] = []
    monkeypatch.setattr(runners, "run_case", lambda case: ran.append(case.case_id) or [])
    res = cc.run_crosscheck(None, ["float32", "bfloat16", "float16"], quick=True)
    assert res.devices == ["cpu", "cuda"]
    assert {k: v for k, v in res.left_out.items() if k.startswith("cuda")} == {
        "cuda float32": OFF_CPU, "cuda bfloat16": OFF_CPU, "cuda float16": OFF_CPU,
    }  # fmt: skip
    assert ran and ran == res.cases and all("-cpu-" in c for c in ran)
    assert "left out: cuda bfloat16 (no proved bound off the CPU" in cc.format_crosscheck(res)
