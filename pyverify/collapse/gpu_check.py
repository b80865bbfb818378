"""The GPU check of issue 28 (item 6): one script, at most 10 minutes on one CUDA GPU.

``python -m pyverify.collapse.gpu_check [-o reports/gpu_check]`` (or ``tox -e gpu``) runs,
each step a ``pyverify`` command in a subprocess with its own time limit, all within
:data:`BUDGET_S`:

1. ``collapse --preset gpu-day --dry-run --device cuda`` and the same for ``paper``: the
   estimates from steps timed on the GPU at the presets' full shapes (bf16 autocast),
   hence the measured rate against the ``gpu-day`` preset's sizing assumption
   (:data:`~pyverify.collapse.config.GPU_DAY_TFLOPS`);
2. a few hundred steps of the ``gpu-day`` model and recipe with DDP on one GPU: the
   per-run job (``collapse --run author --settings FILE``) under ``torchrun
   --standalone --nproc_per_node 1`` (NCCL), at context 255 and with the smallest
   measurement sizes (the end-of-run measurements run on the CPU in float64, and
   the causal loss grows with the square of the context: at 1023 it alone would
   take minutes); step 1 times the full context;
3. ``collapse --preset gpu-day --check-recipe --device cuda``: the recipe check in
   float64 on the GPU;
4. ``bench --device cuda --quick``: the benchmark rows on the GPU, among them the
   training step against the author's trainer (``small`` and ``gpu-day``).

Needs: a CUDA device (else it stops at once, exit 2, having run nothing);
``PYVERIFY_AUTHOR_SRC`` (a checkout of the author's repository) and torchtune's
rotary module importable, for steps 3 and 4 (without them those steps fail, with
their one-line message). Writes into the output folder ``gpu_check.json`` (every
step's command, exit status, wall time, parsed figures; machine-dependent),
``gpu_check.md`` (the summary), ``steps.log`` (every step's output) and
``bench.json``. Exit 0 when every step ran and passed, 1 otherwise.

On a lent device machine (no network): carry the author's checkout and torchtune
(its wheel, or ``torchtune/modules/position_embeddings.py``) in git-ignored folders,
then ``PYTHONPATH=.:<torchtune> PYVERIFY_AUTHOR_SRC=<checkout> python3 -m
pyverify.collapse.gpu_check -o $OUT/gpu_check``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

__all__ = ["BUDGET_S", "ddp_settings", "main", "plan"]

BUDGET_S = 570.0
"""Seconds for all the steps (the device tool's limit is 600 a command)."""
DDP_STEPS = 300
DDP_SEQ = 255


def ddp_settings() -> dict[str, Any]:
    """Settings of step 2: the ``gpu-day`` model and recipe, short context, small measurements."""
    from pyverify.collapse.config import preset_config

    cfg = replace(
        preset_config("gpu-day"), steps=DDP_STEPS, seq=DDP_SEQ, run_factors=False,
        measure_every=100, n_probe=2, n_val=2, s_measure=(16, 32), n_pairs=1,
        pair_prompt_len=8, pair_new=8, jac_probes=1, n_prompts=2, prompt_len=16, n_new=4,
        online_n=4, ngram_max=3,
    )  # fmt: skip
    return cfg.validate().to_dict()


def plan(py: str, work: Path, out: Path) -> list[tuple[str, list[str], float]]:
    """``(name, argv, timeout_s)`` of each step (module docstring)."""
    cli = [py, "-m", "pyverify.cli"]
    torchrun = [py, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1"]
    return [
        ("dry-run gpu-day", [*cli, "collapse", "--preset", "gpu-day", "--dry-run",
                             "--device", "cuda"], 120.0),
        ("dry-run paper", [*cli, "collapse", "--preset", "paper", "--dry-run",
                           "--device", "cuda"], 120.0),
        ("ddp gpu-day", [*torchrun, "-m", "pyverify.cli", "collapse", "--run", "author",
                         "--settings", str(work / "ddp-settings.json"), "--device", "cuda",
                         "--restart", "--no-progress", "-o", str(work / "ddp-author")], 300.0),
        ("check-recipe gpu-day", [*cli, "collapse", "--preset", "gpu-day", "--check-recipe",
                                  "--device", "cuda", "--no-progress"], 200.0),
        ("bench", [*cli, "bench", "--device", "cuda", "--quick", "-o",
                   str(out / "bench.json")], 240.0),
    ]  # fmt: skip


def _figures(name: str, text: str, work: Path) -> dict[str, Any]:
    """What a step's output says, parsed (the raw output is in ``steps.log``)."""
    fig: dict[str, Any] = {}
    if name.startswith("dry-run"):
        for line in text.splitlines():
            if line.startswith(("measured on", "estimate:", "parameters:", "FLOPs:")):
                fig[line.split(":")[0].split(" on")[0]] = line
        m = re.search(r"estimate: ([\d.]+) ms a step, ([\d.]+) TFLOP/s", text)
        if m:
            fig["step_ms"], fig["tflops"] = float(m.group(1)), float(m.group(2))
    elif name.startswith("ddp"):
        run = work / "ddp-author" / "run.json"
        timing = work / "ddp-author" / "timing.json"
        if run.is_file():
            entry = json.loads(run.read_text()).get("entry", {})
            fig["history"] = [
                {k: r.get(k) for k in ("step", "lr", "train_loss", "val_loss")}
                for r in entry.get("history", [])
            ]
            fig["val_loss"] = entry.get("val_loss")
            fig["diverged"] = entry.get("diverged")
        if timing.is_file():
            fig["timing"] = json.loads(timing.read_text())
    elif name.startswith("check-recipe"):
        lines = text.strip().splitlines()
        fig["verdict"] = lines[-1] if lines else None
        fig["rows_not_ok"] = [ln for ln in lines if re.search(r"\sNO(\s|$)", ln)]
    return fig


def main(argv: list[str] | None = None) -> int:
    """Run the check; exit status 0 when every step passed."""
    p = argparse.ArgumentParser(prog="python -m pyverify.collapse.gpu_check",
                                description=__doc__.split("\n\n")[0])  # fmt: skip
    p.add_argument("-o", "--output", default="reports/gpu_check", help="output folder")
    args = p.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device (torch.cuda.is_available() is False); nothing was run",
              file=sys.stderr)  # fmt: skip
        return 2
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    host = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "author_src": bool(env.get("PYVERIFY_AUTHOR_SRC")),
    }
    start = time.monotonic()
    steps: list[dict[str, Any]] = []
    log = []
    with tempfile.TemporaryDirectory(prefix="pyverify-gpu-") as tmp:
        work = Path(tmp)
        (work / "ddp-settings.json").write_text(json.dumps(ddp_settings(), indent=1))
        for name, cmd, limit in plan(sys.executable, work, out):
            left = BUDGET_S - (time.monotonic() - start)
            if left < 20:
                steps.append({"name": name, "status": "not run (time budget spent)"})
                continue
            t0 = time.monotonic()
            print(f"gpu_check: {name} ...", file=sys.stderr, flush=True)
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                      timeout=min(limit, left))  # fmt: skip
                rc, text = done.returncode, done.stdout + done.stderr
            except subprocess.TimeoutExpired as exc:
                rc, raw = None, exc.stdout or ""
                text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            wall = time.monotonic() - t0
            status = "passed" if rc == 0 else ("timed out" if rc is None else f"exit {rc}")
            steps.append({"name": name, "command": " ".join(cmd), "status": status,
                          "wall_s": round(wall, 1), **_figures(name, text, work)})  # fmt: skip
            log.append(f"===== {name}: {status} in {wall:.0f} s\n$ {' '.join(cmd)}\n{text}")
            print(f"gpu_check: {name}: {status} in {wall:.0f} s", file=sys.stderr, flush=True)
    result = {"host": host, "budget_s": BUDGET_S, "total_s": round(time.monotonic() - start, 1),
              "steps": steps}  # fmt: skip
    (out / "gpu_check.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "steps.log").write_text("\n".join(log))
    md = [f"# GPU check ({host['device']}, torch {host['torch']})", "",
          "| step | status | wall s |", "| --- | --- | --- |"]  # fmt: skip
    md += [f"| {s['name']} | {s['status']} | {s.get('wall_s', '-')} |" for s in steps]
    for s in steps:
        for key in ("estimate", "verdict"):
            if s.get(key):
                md += ["", f"{s['name']}: {s[key]}"]
    (out / "gpu_check.md").write_text("\n".join(md) + "\n")
    print(f"gpu_check: wrote {out} in {result['total_s']:.0f} s", file=sys.stderr)
    return 0 if all(s["status"] == "passed" for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
