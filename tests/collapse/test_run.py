"""The small run end to end: files, determinism, interrupt + resume, figures from JSON."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
import torch

from pyverify.cli import main
from pyverify.collapse.config import REGIMES, small_config
from pyverify.collapse.measure import commutant_residual
from pyverify.collapse.plots import FIGURES
from pyverify.collapse.runner import RESULT_FILE, TIMINGS_FILE, run_collapse
from pyverify.collapse.train import lr_at


@pytest.fixture(scope="module")
def full_small(tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    assert main(["collapse", "--small", "--no-progress", "-o", str(out)]) == 0
    return out


def test_small_run_writes_json_and_figures(full_small):
    res = json.loads((full_small / RESULT_FILE).read_text())
    cfg = small_config()
    assert set(res["regimes"]) == set(REGIMES)
    for reg in res["regimes"].values():
        steps = [h["step"] for h in reg["history"]]
        assert steps == list(range(0, cfg.steps + 1, cfg.measure_every))
        last = reg["history"][-1]
        L, H = cfg.model.num_layers, cfg.model.num_heads
        for t in ("A", "A_LM", "A_P", "G"):
            arr = np.array(last["order_parameter"][t])
            assert arr.shape == (L, H) and np.all(np.isfinite(arr)) and np.all(arr >= 0)
        assert np.all(np.array(last["numerical_rank_A"]) <= cfg.model.dk)
        fid = reg["fidelity"]
        assert fid["n_prompts"] >= 20
        for k in ("prompt_G", "mean_G"):
            assert 0 <= fid[k]["tokens_identical"] <= fid["n_prompts"]
            # a cached decoder whose logits equal the uncached ones within half the
            # margin cannot change a token (score_perturbation): counts are consistent
            assert fid[k]["margin_covers_gap"] <= fid[k]["tokens_identical"]
        assert reg["order_vs_length"]["S"] == list(cfg.s_sweep)
    timings = json.loads((full_small / TIMINGS_FILE).read_text())
    tc = timings["regimes"]["critical"]
    assert tc["speedup"] > 0 and tc["speedup_g_over_kv_a"] > 0
    assert math.isclose(tc["speedup"], tc["uncached_s_per_token"] / tc["g_cached_s_per_token"])
    for f in FIGURES:
        assert (full_small / f).stat().st_size > 1000


def test_interrupted_and_resumed_run_gives_the_same_numbers(full_small, tmp_path):
    cfg = small_config()
    out = tmp_path / "resumed"
    part = run_collapse(cfg, out, stop_after=6, progress=False)
    assert [h["step"] for h in part["regimes"]["critical"]["history"]] == [0, 4]
    assert not (out / RESULT_FILE).exists()  # nothing final written on interruption
    assert main(["collapse", "--small", "--no-progress", "--resume", "-o", str(out)]) == 0
    assert (out / RESULT_FILE).read_bytes() == (full_small / RESULT_FILE).read_bytes()


def test_plots_only_redraws_from_json(full_small, tmp_path):
    import shutil

    shutil.copy(full_small / RESULT_FILE, tmp_path / RESULT_FILE)
    assert main(["collapse", "--plots-only", "-o", str(tmp_path)]) == 0
    for f in FIGURES:
        assert (tmp_path / f).read_bytes() == (full_small / f).read_bytes()


def test_plots_only_without_json_is_a_one_line_error(tmp_path, capsys):
    from pyverify.collapse.plots import draw_all
    from pyverify.errors import InputValueError, MissingInputError

    with pytest.raises(MissingInputError, match=r"collapse\.json not found"):
        draw_all(tmp_path)
    assert main(["collapse", "--plots-only", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path / RESULT_FILE) in err
    assert "Traceback" not in err and not any((tmp_path / f).exists() for f in FIGURES)
    (tmp_path / RESULT_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(InputValueError, match="unreadable"):
        draw_all(tmp_path)
    assert main(["collapse", "--plots-only", "-o", str(tmp_path)]) == 2


def test_resume_with_other_settings_is_refused(full_small, capsys):
    assert (
        main(
            [
                "collapse",
                "--small",
                "--steps",
                "8",
                "--no-progress",
                "--resume",
                "-o",
                str(full_small),
            ]
        )
        == 2
    )
    assert "other settings" in capsys.readouterr().err


def test_lr_schedule():
    cfg = small_config()
    reg = REGIMES["critical"]
    lrs = [lr_at(s, cfg, reg) for s in range(cfg.steps)]
    peak = int(np.argmax(lrs))
    assert math.isclose(max(lrs), reg.peak_lr)
    assert all(a <= b for a, b in itertools.pairwise(lrs[: peak + 1]))
    assert all(a >= b for a, b in itertools.pairwise(lrs[peak:]))
    assert lrs[-1] >= cfg.min_lr_frac * reg.peak_lr - 1e-15


def test_commutant_residual_spec():
    """Zero on x I + y J blocks, one on a matrix with nothing in the commutant."""
    blocks = torch.zeros(4, 4, dtype=torch.float64)
    blocks[0:2, 0:2] = torch.tensor([[2.0, -3.0], [3.0, 2.0]])
    blocks[2:4, 2:4] = torch.tensor([[1.0, 5.0], [-5.0, 1.0]])
    assert float(commutant_residual(blocks)) < 1e-15
    off = torch.zeros(4, 4, dtype=torch.float64)
    off[0, 2] = 1.0
    off[0, 0], off[1, 1] = 1.0, -1.0  # diag(1, -1) is orthogonal to span{I, J}
    assert math.isclose(float(commutant_residual(off)), 1.0)
