"""The conformance sweep's honesty: a row without a proved bound fails naming why, what is
left out (deductive stages returned in part, a subject off the CPU) is named in the verdict."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pyverify.conformance import run, sweep
from pyverify.conformance.protocol import HeadResult
from pyverify.conformance.run import CheckRun
from pyverify.conformance.shipped import ReferencePLGA
from pyverify.conformance.subject import Subject
from pyverify.conformance.verdict import format_table, verdict
from pyverify.crosscheck.runners import OFF_CPU
from pyverify.fp.attention import default_path
from pyverify.theorems import CHECK_IDS


class _Dropping(ReferencePLGA):
    """The reference's head under another name, returning only ``keep`` of its tensors."""

    name = "plugin"

    def __init__(self, keep: tuple[str, ...]) -> None:
        self.keep = keep

    def plga(self, q, k, v, params, *, G=None, A=None, causal=True) -> HeadResult:
        r = super().plga(q, k, v, params, G=G, A=A, causal=causal)
        kept = {n: getattr(r, n) if n in self.keep else None for n in ("A", "A_LM", "A_P", "G")}
        return HeadResult(r.out, **kept)


def _sweep(monkeypatch, keep: tuple[str, ...]):
    """The sweep of ``_Dropping(keep)`` on the first quick random case only."""
    first = sweep.sweep_cases(Subject("p", "cpu", "float64", None), quick=True)[:1]
    assert first and first[0].kind == "random"
    monkeypatch.setattr(sweep, "sweep_cases", lambda sub, quick: first)
    sub = Subject("plugin", "cpu", "float64", _Dropping(keep), frozenset({"head"}), "float64")
    return sweep.run_sweep(sub, quick=True)


def test_a_plugin_returning_every_tensor_is_held_to_proved_bounds(monkeypatch):
    rows, left_out = _sweep(monkeypatch, ("A", "A_LM", "A_P", "G"))
    assert [(r.path, r.stage) for r in rows] == [
        ("plugin.uncached", "A_LM"), ("plugin.uncached", "A_P"), ("plugin.uncached", "G"),
        ("plugin.uncached", "output"), ("plugin.g_cached", "output"),
    ]  # fmt: skip
    assert left_out == {}
    assert all(r.passed and r.tolerance_rule.startswith("proved: ") for r in rows), rows


def test_an_output_whose_g_is_not_returned_has_no_bound_and_fails(monkeypatch):
    """Without its G the plugin's own learner error is unbounded: no tolerance, a failure
    naming why (never the reference's G standing in with dG = 0)."""
    rows, left_out = _sweep(monkeypatch, ())
    by = {(r.path, r.stage): r for r in rows}
    assert set(by) == {("plugin.uncached", "output"), ("plugin.g_cached", "output")}
    unc = by["plugin.uncached", "output"]
    assert not unc.passed and unc.tolerance_rule == "no proved bound" and unc.proved is None
    assert unc.proved_note == f"no proved bound: {sweep.NO_G}"
    assert by["plugin.g_cached", "output"].passed  # given the reference's G: bounded
    assert left_out == {}  # none of the deductive tensors: nothing half returned
    run_ = CheckRun("m:f", "plugin", ("plugin-cpu-float64",), ("head",), CHECK_IDS, True, [],
                    rows, 1.0, 0, "")  # fmt: skip
    v = verdict(run_)
    assert v["crosscheck"]["verdict"] == "failed" and not v["ok"]
    bad = [r for r in v["crosscheck"]["rows"] if not r["passed"]]
    assert bad == [{"case": unc.case, "path": "plugin.uncached", "stage": "output",
                    "passed": False, "no_bound": unc.proved_note}]  # fmt: skip
    assert sweep.NO_G in format_table(v)


def test_deductive_tensors_returned_in_part_are_named_not_compared(monkeypatch):
    rows, left_out = _sweep(monkeypatch, ("A", "G"))
    assert [(r.path, r.stage) for r in rows] == [
        ("plugin.uncached", "output"), ("plugin.g_cached", "output"),
    ]  # fmt: skip
    assert all(r.passed for r in rows)  # its G returned: the output is bounded
    assert left_out == {
        "plugin-cpu-float64 uncached A_LM, A_P, G": "not compared: the plugin returns A, G but "
        "not A_LM, A_P (each stage is compared from its own returned input)"
    }


def test_a_subject_off_the_cpu_is_named_in_the_verdict(monkeypatch):
    """The sweep leaves a CUDA subject out by name (no GPU needed: nothing runs on it)."""
    target = _Dropping(("A", "A_LM", "A_P", "G"))
    subs = [Subject("plugin", d, "float64", target, frozenset({"head"}), "float64")
            for d in ("cpu", "cuda")]  # fmt: skip
    monkeypatch.setattr(run, "load", lambda spec, devices, dtypes: subs)
    monkeypatch.setattr(run, "_pytest", lambda *a: ([], 0, ""))
    swept: list[str] = []

    def fake_sweep(sub, *, quick, progress):
        swept.append(str(sub))
        return [], {}

    monkeypatch.setattr(run, "run_sweep", fake_sweep)
    said: list[str] = []
    got = run.run_check("m:f", quick=True, progress=said.append)
    assert swept == ["plugin-cpu-float64"]
    assert got.left_out == {"plugin-cuda-float64": OFF_CPU}
    assert f"check: sweep: plugin-cuda-float64 left out ({OFF_CPU})" in said
    v = verdict(got)
    assert v["crosscheck"]["left_out"] == {"plugin-cuda-float64": OFF_CPU}
    assert v["crosscheck"]["verdict"] == "not run"  # nothing compared, nothing failed
    assert f"plugin-cuda-float64: {OFF_CPU}" in format_table(v)
    assert json.dumps(v, sort_keys=True) == json.dumps(verdict(got), sort_keys=True)
    only_cuda = dataclasses.replace(got, sweep=None, left_out={})
    assert verdict(only_cuda)["crosscheck"] is None  # the sweep did not run at all


@pytest.mark.parametrize(
    ("dtype", "path"), [("float64", "sdpa"), ("float32", "sdpa"), ("bfloat16", "sdpa_split")]
)
def test_the_path_follows_the_arithmetic(dtype, path):
    """The reference's own path for the reference, else the kernels' at the dtype
    (``fp.attention.default_path``, which ``attention_bound`` and ``testing.fp`` use too)."""
    ref = Subject("reference", "cpu", "float64", ReferencePLGA(), frozenset({"head"}))
    assert default_path(sweep._arith(ref)) == "reference"
    other = Subject("plugin", "cpu", dtype, ReferencePLGA(), frozenset({"head"}))
    assert default_path(sweep._arith(other)) == path
