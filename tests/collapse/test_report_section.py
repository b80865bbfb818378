"""The report's collapse section: rendered from the saved JSON, verdicts from the numbers."""

from __future__ import annotations

import json

from pyverify.collapse.config import small_config
from pyverify.report.collapse_section import collapse_section

TENSORS = ("A", "A_LM", "A_P", "G")


def _record(step: int, value: float) -> dict:
    grid = [[value, value / 2]]
    return {
        "step": step, "lr": 1e-3, "train_loss": 1.0, "val_loss": 2.0,
        "order_parameter": {t: grid for t in ("A", "A_LM", "A_P", "G")},
        "eps_G": grid, "commutant_residual_G": [[0.5, 0.5]],
        "identical_rows_residual_A": grid, "sigma2_over_sigma1_A": grid,
        "sigma2_over_sigma1_A_LM": [[0.3, 0.3]], "numerical_rank_A": [[1.0, 1.0]],
        "numerical_rank_A_LM": [[8.0, 8.0]],
    }  # fmt: skip


def _regime(end_value: float, identical: int) -> dict:
    fid = {"n_prompts": 20, "n_new": 4, "min_top1_margin": 0.1, "median_top1_margin": 0.5}
    for k in ("prompt_G", "mean_G"):
        fid[k] = {"tokens_identical": identical, "max_logit_gap": 1e-12,
                  "median_logit_gap": 1e-13, "margin_covers_gap": identical}  # fmt: skip
    return {"peak_lr": 1e-3, "warmup_frac": 0.1, "fidelity": fid,
            "history": [_record(0, 0.7), _record(10, end_value)],
            "order_vs_length": {"S": [8, 16], **{t: [0.1, 0.2] for t in TENSORS}}}  # fmt: skip


def test_section_reports_measured_verdicts(tmp_path):
    d = tmp_path / "collapse"
    d.mkdir()
    res = {"settings": small_config().to_dict(),
           "regimes": {"critical": _regime(3e-9, 20), "subcritical": _regime(0.4, 11)}}  # fmt: skip
    (d / "collapse.json").write_text(json.dumps(res))
    text = "\n".join(collapse_section(tmp_path))
    assert "## Empirical collapse (measured)" in text
    crit = next(line for line in text.splitlines() if line.startswith("- **critical**"))
    sub = next(line for line in text.splitlines() if line.startswith("- **subcritical**"))
    assert "reproduced for A, A_LM, A_P, G" in crit and "every prompt: yes" in crit
    assert "**not reproduced** (largest" in sub and "every prompt: **no**" in sub
    assert "| critical | prompt's G-cache | 20/20 |" in text
    assert "0.7 → 3e-09" in text


def test_section_without_a_saved_run(tmp_path):
    assert "No saved run" in "\n".join(collapse_section(tmp_path))


def test_section_cells_without_a_number(tmp_path):
    # A speed-up that was not measured (None) or is a note (a string) is shown, not a crash.
    d = tmp_path / "collapse"
    d.mkdir()
    res = {"settings": small_config().to_dict(), "regimes": {"critical": _regime(3e-9, 20)}}
    walls = {"speedup": None, "speedup_g_over_kv_a": "n/a", "train_s": 1.0, "final_s": 2.0}
    tim = {"threads": 1, "total_s": 3.0, "regimes": {"critical": walls}}
    (d / "collapse.json").write_text(json.dumps(res))
    (d / "timings.json").write_text(json.dumps(tim))
    lines = collapse_section(tmp_path)
    assert "| critical | prompt's G-cache | 20/20 | 1e-12 | 0.1 | 20/20 | –× (n/a×) |" in lines
    assert "| critical | probe-mean G | 20/20 | 1e-12 | 0.1 | 20/20 | – |" in lines
    assert sum(line.startswith("| --- |") for line in lines) == 3
