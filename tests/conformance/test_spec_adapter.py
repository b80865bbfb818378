"""``pyverify check`` on an adapter written from ``docs/`` alone, and on its one-defect variants.

``spec_adapter.py`` (beside this file) is copied into a temporary folder outside the
checkout and checked from there, as a user would: the adapter passes every ID and the
sweep, the checkout is left as it was, and each variant gets the verdict its defect
deserves, under the ID whose statement it breaks, or the one-line protocol error naming the
method and the problem. Quick profile (5 examples a test); the variants run only the IDs
asserted on.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pyverify.cli import main
from pyverify.paths import repo_root
from pyverify.theorems import CHECK_IDS

HERE = Path(__file__).parent
ROOT = repo_root(HERE)
#: What a concurrent test session may write into the checkout itself (not the check).
_SESSION_FILES = ("__pycache__", ".hypothesis", ".ruff_cache", ".pytest_cache")


def _workdir(tmp_path: Path, monkeypatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(HERE / "spec_adapter.py", work / "spec_adapter.py")
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(work))
    return work


def _check(capsys, out: Path, impl: str, *extra: str) -> tuple[int, dict, str]:
    code = main(["check", "--impl", impl, "--quick", "--no-progress", "-o", str(out), *extra])
    printed = capsys.readouterr().out
    name = next(p for p in out.glob("*.json") if not p.name.endswith(".measured.json"))
    return code, json.loads(name.read_text("utf-8")), printed


def _snapshot() -> dict[str, int]:
    """Every file of the checkout (but .git, .venv, .tox and test-session files), mtimes."""
    seen = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in (".git", ".venv", ".tox", *_SESSION_FILES)]
        for f in files:
            p = Path(folder) / f
            seen[str(p.relative_to(ROOT))] = p.stat().st_mtime_ns
    return seen


PROBE = """
import json, os, sys
import spec_adapter

def factory(device="cpu", dtype="float64"):
    with open(os.environ["PROBE_LOG"], "a") as f:
        f.write(json.dumps([os.getcwd(), os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"),
                            sys.dont_write_bytecode]) + "\\n")
    return spec_adapter.factory(device, dtype)
"""


def test_spec_adapter_passes_from_another_folder_and_writes_only_its_reports(
    tmp_path, monkeypatch, capsys
):
    work = _workdir(tmp_path, monkeypatch)
    (work / "probe.py").write_text(PROBE, "utf-8")
    monkeypatch.setenv("PROBE_LOG", str(tmp_path / "probe.log"))
    before = _snapshot()
    out = tmp_path / "out"
    junit = tmp_path / "ci" / "check.xml"
    code, v, printed = _check(capsys, out, "probe:factory", "--junit-xml", str(junit))
    assert code == 0 and v["ok"] and v["suite"] == "ran", printed
    assert set(v["theorems"]) == set(CHECK_IDS)
    assert all(d["verdict"] == "passed" for d in v["theorems"].values()), v["theorems"]
    assert v["crosscheck"]["verdict"] == "passed" and v["protocol_violations"] == []
    # the reports, the JUnit file, the copied adapter and the probe's log: nothing else
    assert sorted(p.name for p in out.iterdir()) == [
        "spec-adapter.json", "spec-adapter.md", "spec-adapter.measured.json"
    ]  # fmt: skip
    assert junit.read_text("utf-8").count("<testcase ") == len(CHECK_IDS) + 1
    assert sorted(p.name for p in work.iterdir() if p.name != "__pycache__") == [
        "probe.py", "spec_adapter.py"
    ]  # fmt: skip
    assert _snapshot() == before  # the checkout is untouched
    # the property suite (a subprocess) ran outside the checkout, with Hypothesis's
    # storage in its temporary folder and no bytecode written
    runs = [json.loads(x) for x in (tmp_path / "probe.log").read_text().splitlines()]
    inner = [r for r in runs if r[1] is not None]
    assert inner, runs
    for cwd, storage, no_bytecode in inner:
        for p in (cwd, storage):
            assert not Path(p).resolve().is_relative_to(ROOT.resolve()), p
            assert not Path(p).resolve().is_relative_to(work.resolve()), p
        assert Path(storage).resolve().is_relative_to(Path(cwd).resolve()) and no_bytecode


# factory, IDs asserted failed, IDs asserted passed, protocol violation expected (or None)
VARIANTS = [
    ("no_scale", ["sdpa_special_case"], ["softmax_shift", "rope_group"], None),
    ("g_transposed", ["collapse_absorption"], ["sdpa_special_case", "rope_group"], None),
    ("neox_rope", ["rope_group", "rope_commutant_char"], ["softmax_shift"], None),
    ("complex_out", ["sdpa_special_case"], ["rope_group"], "plga(...).out has dtype complex128"),
    ("complex_scores", ["sdpa_special_case"], ["rope_group"], "scores(...) has dtype complex128"),
    # an additive -1e9 mask: the masked softmax's statement and the head's prefix rows
    ("mask_minus_1e9", ["softmax_simplex", "prefix_consistency"],
     ["softmax_shift", "rope_group"], None),
    ("wrong_shape", ["sdpa_special_case"], ["rope_group"], "plga(...).out has shape"),
    ("int_dtype", ["sdpa_special_case"], ["rope_group"], "plga(...).out has dtype int64"),
    ("nan_out", ["sdpa_special_case"], ["rope_group"], "non-finite entries"),
]  # fmt: skip


@pytest.mark.parametrize(("factory", "failed", "passed", "violation"), VARIANTS,
                         ids=[v[0] for v in VARIANTS])  # fmt: skip
def test_each_defect_fails_under_its_theorem_or_as_one_protocol_line(
    tmp_path, monkeypatch, capsys, factory, failed, passed, violation
):
    _workdir(tmp_path, monkeypatch)
    ids = ",".join(failed + passed)
    code, v, printed = _check(capsys, tmp_path / "out", f"spec_adapter:{factory}", "--ids", ids)
    assert code == 1 and not v["ok"] and v["suite"] == "ran", printed
    for i in failed:
        d = v["theorems"][i]
        assert d["verdict"] == "failed", (i, d)
        ex = d["smallest_failing_example"]["example"].splitlines()
        at = next(ln for ln in ex if ln.startswith("at: "))
        what = next(ln for ln in ex if ln.startswith("failed: "))
        assert at.startswith("at: property_tests/test_") and len(what) > len("failed: ")
        if violation is None:  # an assertion, with its values (pytest's representation)
            assert "assert" in what or "Error" in what, what
    for i in passed:
        assert v["theorems"][i]["verdict"] == "passed", (i, v["theorems"][i])
    if violation is None:
        assert v["protocol_violations"] == []
    else:
        assert any(violation in x for x in v["protocol_violations"]), v["protocol_violations"]
        for x in v["protocol_violations"]:  # one line each, naming the subject and method
            assert "\n" not in x and x.startswith("spec-") and "(...)" in x, x
        shown = [d["smallest_failing_example"]["example"] for d in v["theorems"].values()
                 if d["verdict"] == "failed"]  # fmt: skip
        assert any("ProtocolViolation: spec-" in s and violation in s for s in shown), shown
