"""The GPU check script, on a CPU: it stops at once without CUDA, its steps are valid
commands of this CLI, its DDP settings are the ``gpu-day`` model, and it parses what the
steps print. (The check itself runs where a GPU is lent.)"""

from __future__ import annotations

import pytest
import torch

from pyverify.cli import build_parser
from pyverify.collapse import gpu_check as gc
from pyverify.collapse.config import GPU_DAY_MODEL, RunConfig


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_without_cuda_it_stops_at_once_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "gpu"
    assert gc.main(["-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no CUDA device" in err and "nothing was run" in err and err.count("\n") == 1
    assert not out.exists()


def _cli_args(argv: list[str]) -> list[str]:
    return argv[argv.index("pyverify.cli") + 1 :]


def test_its_steps_are_commands_of_this_cli(tmp_path):
    parser = build_parser()
    steps = gc.plan("python", tmp_path, tmp_path)
    assert [s[0] for s in steps] == [
        "dry-run gpu-day", "dry-run paper", "ddp gpu-day", "check-recipe gpu-day", "bench",
    ]  # fmt: skip
    assert sum(t for _, _, t in steps) <= 1000 and gc.BUDGET_S < 600
    for name, argv, _ in steps:
        if name.startswith("ddp"):
            continue  # the per-run job's options: next test
        args = parser.parse_args(_cli_args(argv))
        assert args.device == "cuda"


def test_the_ddp_step_is_the_per_run_job_under_torchrun(tmp_path):
    _, argv, _ = gc.plan("python", tmp_path, tmp_path)[2]
    assert argv[1:6] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1"]
    args = build_parser().parse_args(_cli_args(argv))
    assert args.run and args.settings  # the per-run job entry point, with the check's settings


def test_the_ddp_settings_are_the_gpu_day_model_and_recipe():
    d = gc.ddp_settings()
    fields = {k: v for k, v in d.items() if k != "model"}
    cfg = RunConfig(**{**fields, "betas": tuple(d["betas"]), "s_measure": tuple(d["s_measure"])},
                    model=GPU_DAY_MODEL).validate()  # fmt: skip
    assert d["model"] == cfg.to_dict()["model"]
    assert (cfg.steps, cfg.seq, cfg.run_factors, cfg.warmup_start) == (300, 255, False, 0)
    assert cfg.bf16_autocast and cfg.measure_every < cfg.steps


def test_it_parses_what_the_steps_print(tmp_path):
    dry = (
        "parameters: 52,187,474 (...)\nFLOPs: 3.838e+12 a training step\n"
        "measured on cuda: 3 steps under bf16 autocast at this shape, 40.0 ms a step\n"
        "estimate: 40.0 ms a step, 95.95 TFLOP/s; the author run 6.7 h\n"
    )
    f = gc._figures("dry-run gpu-day", dry, tmp_path)
    assert f["step_ms"] == 40.0 and f["tflops"] == 95.95 and f["estimate"].startswith("estimate")
    rec = "section ...\nweights  x  1.0  1e-08  NO  step 3\nFAIL (1 of 9 quantities)\n"
    f = gc._figures("check-recipe gpu-day", rec, tmp_path)
    assert f["verdict"].startswith("FAIL") and len(f["rows_not_ok"]) == 1


def test_it_runs_the_steps_and_writes_its_files(tmp_path, monkeypatch):
    """The driver on stand-in steps (no GPU here): statuses, figures, the three files."""
    import json
    import sys

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda _i=0: "stand-in GPU")
    ok = [sys.executable, "-c", "print('estimate: 12.5 ms a step, 300.00 TFLOP/s')"]
    bad = [sys.executable, "-c", "import sys; print('FAIL (1 of 2 quantities)'); sys.exit(1)"]
    slow = [sys.executable, "-c", "import time; time.sleep(30)"]
    monkeypatch.setattr(gc, "plan", lambda py, work, out: [
        ("dry-run x", ok, 60.0), ("check-recipe x", bad, 60.0), ("ddp x", slow, 1.0)])  # fmt: skip
    out = tmp_path / "gpu"
    assert gc.main(["-o", str(out)]) == 1
    res = json.loads((out / "gpu_check.json").read_text())
    steps = {s["name"]: s for s in res["steps"]}
    assert steps["dry-run x"]["status"] == "passed" and steps["dry-run x"]["tflops"] == 300.0
    assert steps["check-recipe x"]["status"] == "exit 1"
    assert steps["check-recipe x"]["verdict"].startswith("FAIL")
    assert steps["ddp x"]["status"] == "timed out" and res["host"]["device"] == "stand-in GPU"
    assert "| dry-run x | passed |" in (out / "gpu_check.md").read_text()
    assert "===== check-recipe x: exit 1" in (out / "steps.log").read_text()
