"""The report's collapse and ledger sections, rendered from a hand-made saved study."""

from __future__ import annotations

import json

from fake_study import legacy, study, timings, trending

from pyverify.report.claims_section import CLAIMS_FILE, claims_section
from pyverify.report.collapse_section import collapse_section


def _save(tmp_path, result, tim=None):
    d = tmp_path / "collapse"
    d.mkdir()
    (d / "collapse.json").write_text(json.dumps(result))
    if tim is not None:
        (d / "timings.json").write_text(json.dumps(tim))


def test_sections_show_the_runs_side_by_side_the_trends_and_the_ledger(tmp_path):
    r = study(author_op=1e-8, sub_op=1e-2)
    r["runs"]["frozen"]["history"] = trending((0.5, 0.6))
    _save(tmp_path, r, timings(3.0))
    text = "\n".join(collapse_section(tmp_path))
    for run in ("author", "frozen", "no-decay", "spread-init", "subcritical", "last-only",
                "prompt-A"):  # fmt: skip
        assert f"| {run} |" in text
    assert (
        "| author | 1.4 / 1 (best n-gram, order 5: 1.5) | 0.1 / 0.1 / 0.1 → 1e-08 / 1e-08" in text
    )
    assert "| author | author's KV-cache (A at the prompt) | 20/20 |" in text
    assert "read later tokens through G (a model that is not causal at inference): `author`" in text
    # the trends table: series x runs; frozen's known rates give its slope
    assert "| series | author | frozen |" in text
    row = next(line for line in text.splitlines() if line.startswith("| G (S=64) |"))
    assert "+0.55 [+0.5, +0.6]" in row and "too few records" in row
    ledger = "\n".join(claims_section(tmp_path))
    # the row x regime table first: one seed cannot give a decisive outcome
    assert "| row | bytes |" in ledger and "| E1 | inconclusive (fewer than 3 seeds) |" in ledger
    assert "| E1 invariance" in ledger and "| author (seeds 0) |" in ledger
    assert "Premise (met)" in ledger and "paper 110M parameters" in ledger
    assert "| N7 target-exposure ablation" in ledger
    assert "Findings of the study in regime `bytes`" in ledger and "| F1 target exposure" in ledger
    saved = json.loads((tmp_path / CLAIMS_FILE).read_text())
    (bytes_regime,) = saved["regimes"]
    assert bytes_regime["name"] == "bytes" and bytes_regime["seeds"] == [0]
    assert list(bytes_regime["rows"])[:8] == [f"E{i}" for i in range(1, 9)]
    assert bytes_regime["gate"]["passed"]["author"] == {"0": True}
    e1 = bytes_regime["ledger"][0]
    assert e1["seeds"] == {"0": "supported"}  # the seed's own outcome stays visible
    first = (tmp_path / CLAIMS_FILE).read_bytes()
    claims_section(tmp_path)
    assert (tmp_path / CLAIMS_FILE).read_bytes() == first  # byte-stable


def test_sections_on_a_study_that_predates_the_new_measurements(tmp_path):
    _save(tmp_path, legacy(study()))
    text = "\n".join(collapse_section(tmp_path))
    assert "| row energy A |" in text and "not measured" in text
    ledger = "\n".join(claims_section(tmp_path))
    assert "(not measured)" in ledger


def test_sections_without_a_saved_study(tmp_path):
    assert "No saved study" in "\n".join(collapse_section(tmp_path))
    assert "No ledger" in "\n".join(claims_section(tmp_path))
    assert not (tmp_path / CLAIMS_FILE).exists()
    d = tmp_path / "collapse"
    d.mkdir()
    (d / "collapse.json").write_text(json.dumps({"settings": {}, "regimes": {}}))
    assert "not an ablation study" in "\n".join(collapse_section(tmp_path))
    assert "not an ablation study" in "\n".join(claims_section(tmp_path))
