"""The adapter for the paper author's ``pldr_model_v510`` runs under ``pyverify check``.

Needs a checkout of ``burcgokden/PLDR-LLM-with-KVG-cache`` named by
``PYVERIFY_AUTHOR_SRC`` (never copied here) and torchtune's RoPE module; skipped, with a
message saying so, when they are absent. The per-ID results of a full run are in
``docs/conformance.md``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pyverify.cli import main
from pyverify.paths import repo_root

ROOT = repo_root(Path(__file__).parent)


def test_author_adapter_runs_under_check(monkeypatch, capsys, tmp_path):
    if not os.environ.get("PYVERIFY_AUTHOR_SRC"):
        pytest.skip("PYVERIFY_AUTHOR_SRC is not set: no checkout of the author's code to wrap")
    monkeypatch.chdir(ROOT)
    ids = "sdpa_special_case,softmax_simplex,metric_positivity"
    code = main(["check", "--impl", "examples.author_v510:factory", "--quick", "--dtype",
                 "float32", "--ids", ids, "--no-progress", "-o", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr()
    assert code in (0, 1), out.err
    v = json.loads((tmp_path / "author-v510.json").read_text("utf-8"))
    assert v["suite"] == "ran" and set(v["theorems"]) == set(ids.split(","))
    # their head is SDPA for G = I (the special case holds in their code)
    assert v["theorems"]["sdpa_special_case"]["verdict"] == "passed"
    assert all(d["verdict"] in ("passed", "failed", "not applicable")
               for d in v["theorems"].values())  # fmt: skip
