"""``pyverify check`` end to end: the example passes; each broken variant fails under the
theorem ID its bug violates while IDs it cannot touch still pass; the JSON is deterministic.

Each check runs the property suite in a subprocess with the ``quick`` Hypothesis profile
(5 derandomised examples a test) and, for the broken variants, only the IDs asserted on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyverify.cli import main
from pyverify.paths import repo_root
from pyverify.theorems import CHECK_IDS

ROOT = repo_root(Path(__file__).parent)


def _check(monkeypatch, capsys, out: Path, impl: str, *extra: str) -> tuple[int, dict]:
    monkeypatch.chdir(ROOT)  # examples/ is imported from the working directory
    code = main(["check", "--impl", impl, "--quick", "--no-progress", "-o", str(out), *extra])
    capsys.readouterr()
    name = next(p for p in out.glob("*.json") if not p.name.endswith(".measured.json"))
    return code, json.loads(name.read_text("utf-8"))


def test_example_implementation_passes(monkeypatch, capsys, tmp_path):
    code, v = _check(monkeypatch, capsys, tmp_path, "examples.numpy_plga:factory")
    assert code == 0 and v["ok"] and v["suite"] == "ran"
    th = v["theorems"]
    assert set(th) == set(CHECK_IDS)
    assert all(d["verdict"] != "failed" for d in th.values())
    assert all(d["verdict"] == "passed" for d in th.values())
    # it offers every group: the decoder IDs really run; the only not-applicable test is
    # the embedding LayerNorm (not part of the protocol), and it says why
    assert th["incremental_decoding"]["verdict"] == "passed"
    assert th["layernorm_invariance"]["not_applicable"] == [
        "the decoder's embedding LayerNorm is not part of the protocol"
    ]
    assert v["crosscheck"]["verdict"] == "passed" and v["crosscheck"]["rows"]
    measured = json.loads((tmp_path / "numpy-example.measured.json").read_text("utf-8"))
    assert "seconds" in measured and "seconds" not in json.dumps(v)


BROKEN = [
    # factory, IDs its bug violates, IDs it cannot affect
    ("g_transposed", ["collapse_absorption"], ["sdpa_special_case", "softmax_shift", "rope_group"]),
    ("rope_off_by_one", ["rope_group"], ["softmax_shift", "sdpa_special_case", "density_psd"]),
    ("softmax_no_shift", ["softmax_shift"], ["rope_group", "density_psd"]),
    ("no_metric_eps", ["metric_positivity"], ["rope_group", "softmax_shift"]),
    ("g_cache_wrong_layer", ["incremental_decoding"], ["rope_group", "sdpa_special_case"]),
]


@pytest.mark.parametrize(("factory", "violated", "unaffected"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_variant_fails_under_its_theorem(
    monkeypatch, capsys, tmp_path, factory, violated, unaffected
):
    ids = ",".join(violated + unaffected)
    code, v = _check(monkeypatch, capsys, tmp_path, f"examples.broken_plga:{factory}", "--ids", ids)
    assert code == 1 and not v["ok"]
    assert set(v["theorems"]) == set(violated + unaffected)  # (JSON keys are sorted)
    for i in violated:
        d = v["theorems"][i]
        assert d["verdict"] == "failed", (i, d)
        ex = d["smallest_failing_example"]
        assert ex["test"] in d["failed_tests"]
        assert "failed:" in ex["example"] and "0x" not in ex["example"]
    for i in unaffected:
        assert v["theorems"][i]["verdict"] == "passed", (i, v["theorems"][i])
    assert v["crosscheck"] is None  # the sweep runs only for all IDs


def test_verdict_json_is_byte_identical_across_runs(monkeypatch, capsys, tmp_path):
    args = ("examples.broken_plga:softmax_no_shift", "--ids", "softmax_shift")
    _check(monkeypatch, capsys, tmp_path / "a", *args)
    _check(monkeypatch, capsys, tmp_path / "b", *args)
    name = "broken-softmax-no-shift"
    for suffix in (".json", ".md"):
        a = (tmp_path / "a" / (name + suffix)).read_bytes()
        assert a == (tmp_path / "b" / (name + suffix)).read_bytes()
