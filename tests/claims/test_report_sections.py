"""The report's collapse and claims sections, rendered from a hand-made saved study."""

from __future__ import annotations

import json

from fake_study import study, timings

from pyverify.report.claims_section import CLAIMS_FILE, claims_section
from pyverify.report.collapse_section import collapse_section


def _save(tmp_path, result, tim=None):
    d = tmp_path / "collapse"
    d.mkdir()
    (d / "collapse.json").write_text(json.dumps(result))
    if tim is not None:
        (d / "timings.json").write_text(json.dumps(tim))


def test_sections_show_the_runs_side_by_side_and_the_ledger(tmp_path):
    _save(tmp_path, study(author_op=1e-8, sub_op=1e-2), timings(3.0))
    text = "\n".join(collapse_section(tmp_path))
    for run in ("author", "frozen", "no-decay", "spread-init", "subcritical"):
        assert f"| {run} |" in text
    assert "| author | 1.5 / 1 (3-gram 2.2) | 0.1 / 0.1 / 0.1 | 1e-08 / 1e-08 / 1e-08 |" in text
    assert "| author | author's KV-cache (A at the prompt) | 20/20 |" in text
    assert "read later tokens through G (a model that is not causal at inference): `author`" in text
    ledger = "\n".join(claims_section(tmp_path))
    assert "| E1 invariance" in ledger and "| **supported** | author |" in ledger
    assert "| E4 criticality" in ledger and "paper 110M parameters" in ledger
    saved = json.loads((tmp_path / CLAIMS_FILE).read_text())
    assert [c["claim"] for c in saved["claims"]] == [f"E{i}" for i in range(1, 9)]
    first = (tmp_path / CLAIMS_FILE).read_bytes()
    claims_section(tmp_path)
    assert (tmp_path / CLAIMS_FILE).read_bytes() == first  # byte-stable


def test_sections_without_a_saved_study(tmp_path):
    assert "No saved study" in "\n".join(collapse_section(tmp_path))
    assert "No ledger" in "\n".join(claims_section(tmp_path))
    assert not (tmp_path / CLAIMS_FILE).exists()
    d = tmp_path / "collapse"
    d.mkdir()
    (d / "collapse.json").write_text(json.dumps({"settings": {}, "regimes": {}}))
    assert "not an ablation study" in "\n".join(collapse_section(tmp_path))
    assert "not an ablation study" in "\n".join(claims_section(tmp_path))
