"""One run as one job: DDP under the real ``torchrun`` (2 gloo processes) against one process,
a rank killed mid-run and resumed, the job path against the plain loop, run folders merged
into one ledger, and the one-line errors of bad options.

Why the 1- vs 2-process tolerances are what they are
----------------------------------------------------
Both computations see the same tokens (every rank draws the step's global batch from
``(seed, step)`` and takes its rows) and make the same update up to the ORDER of float32
sums: a rank's loss is a mean over its 2 rows and DDP averages the ranks' gradients, where
one process sums the 4 rows at once (u = 6e-8). That moves a step's gradient by ~1e-7
relative, and training amplifies it: after 9 steps of this config the losses differ by
~1e-7 and the order parameters of A_P and G by ~5e-5 (power laws of A_LM, whose logarithm
reaches |ln 1e-9| ~ 21 at its floor, so they magnify weight changes). A one-process run
whose batch rows are merely reversed (the same sums in another order) moves by as much;
the test checks that this control passes too. LOSS_RTOL and ORDER_RTOL leave 20-100x
headroom over rounding, and the bug they exist to catch -- a rank training on its rows
without the gradient average (rank 0 alone on half of the batch) -- moves the same numbers
by ~7e-3 and ~0.3; the test checks that it fails them by 10x at least. (At the full
study's size the amplification is far stronger: 1 against 2 processes after 3 steps, 5e-6 in
the losses and 2.2 % in G's order parameters; after 6 steps 3e-4 and 13 %; one process
against itself with its batch rows reversed, 3e-5 / 2.6 % and 6e-4 / 26 %. So a run is
bitwise reproducible for a fixed world size and thread count only, and the test uses the
small config, where rounding still looks like rounding.)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from pyverify.cli import main
from pyverify.collapse.config import RUNS, small_config
from pyverify.collapse.corpus import Corpus, load_corpus
from pyverify.collapse.distributed import DistEnv, check_split, dist_env, local_rows
from pyverify.collapse.job import RUN_FILE, SETTINGS_FILE, TIMING_FILE, run_job
from pyverify.collapse.merge import load_sources
from pyverify.collapse.train import CHECKPOINT, load_checkpoint, train_run
from pyverify.errors import InputValueError
from pyverify.output import json_text

LOSS_RTOL = 1e-5
ORDER_RTOL = 1e-3
STEPS = 3  # author: 3 x 3 = 9 steps, records at 0, 4, 8, 9
CFG = replace(small_config(), steps=STEPS)
JOB = ["collapse", "--run", "author", "--small", "--steps", str(STEPS), "--no-progress"]
STALL = 6  # rank 1 stalls before step 6's batch: the last checkpoint is step 4's


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """``author`` as one plain process (no process group), one thread."""
    before = torch.get_num_threads()
    out = tmp_path_factory.mktemp("one") / "author"
    try:
        done = run_job(CFG, "author", out, threads=1)
    finally:
        torch.set_num_threads(before)
    return out, done


def _torchrun(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc_per_node", "2", *args]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _deviation(ref: list[dict], other: list[dict]) -> dict[str, float]:
    """Largest relative difference of the losses and of the order parameters, over records."""
    assert [h["step"] for h in ref] == [h["step"] for h in other]
    dev = {"loss": 0.0, "order": 0.0}
    for a, b in zip(ref, other, strict=True):
        for k in ("train_loss", "val_loss"):
            if a[k] is not None:
                dev["loss"] = max(dev["loss"], abs(a[k] - b[k]) / abs(a[k]))
        for s, by_t in a["order_parameter"].items():
            for t, v in by_t.items():
                x, y = np.array(v), np.array(b["order_parameter"][s][t])
                dev["order"] = max(dev["order"], float(np.max(np.abs(x - y) / np.abs(x))))
    return dev


def test_every_world_size_trains_on_the_same_tokens():
    x, _ = load_corpus().batch(0, 7, 8, 16)
    for world in (1, 2, 4, 8):
        parts = [local_rows(x, DistEnv(rank=r, world_size=world)) for r in range(world)]
        assert all(p.shape[0] == 8 // world for p in parts)
        assert torch.equal(torch.cat(parts), x), world
    with pytest.raises(InputValueError, match="does not split over 3 processes"):
        check_split(16, DistEnv(rank=0, world_size=3))


def test_the_launcher_environment():
    assert dist_env("cpu", {}) == DistEnv()  # one plain process: no process group
    env = dist_env("cpu", {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"})
    assert (env.rank, env.world_size, env.distributed, env.backend) == (1, 2, True, "gloo")
    assert not env.is_main and dist_env("cpu", {"WORLD_SIZE": "1"}).distributed
    bad_envs = (
        ({"WORLD_SIZE": "two"}, "not an integer"),
        ({"WORLD_SIZE": "2", "RANK": "2"}, "inconsistent"),
    )
    for bad, msg in bad_envs:
        with pytest.raises(InputValueError, match=msg):
            dist_env("cpu", bad)
    if not torch.cuda.is_available():
        with pytest.raises(InputValueError, match="no CUDA device"):
            dist_env("cuda", {})


def test_torchrun_two_processes_match_one_and_a_killed_rank_resumes(
    one_process, tmp_path, child_bytecode
):
    _, one = one_process
    # 1. the real torchrun, 2 gloo processes, the job as the README gives it
    two_dir = tmp_path / "two"
    r = _torchrun("-m", "pyverify.cli", "--", *JOB, "-o", str(two_dir))
    assert r.returncode == 0, r.stderr[-3000:]
    two = json.loads((two_dir / RUN_FILE).read_text())
    timing = json.loads((two_dir / TIMING_FILE).read_text())
    assert (timing["world_size"], timing["backend"]) == (2, "gloo")
    assert two["settings"] == one["settings"] == CFG.to_dict()
    h1, h2 = one["entry"]["history"], two["entry"]["history"]
    assert h1[0] == h2[0]  # step 0: the same initial model, measured by rank 0 alone
    dev = _deviation(h1, h2)
    assert dev["loss"] <= LOSS_RTOL and dev["order"] <= ORDER_RTOL, dev
    for k in ("val_loss", "causal_val_loss", "prompt_A_val_loss"):
        a, b = one["entry"][k], two["entry"][k]
        assert abs(a - b) <= LOSS_RTOL * abs(a), k

    # 2. the controls: a reordering of the same sums passes; rank 0 without the average fails
    class Reversed(Corpus):
        def batch(self, seed, step, batch, seq):
            x, y = super().batch(seed, step, batch, seq)
            return x.flip(0), y.flip(0)

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        c = load_corpus()
        _, h_rev = train_run(CFG, RUNS["author"], Reversed(c.train, c.val), tmp_path / "rev")
        alone = DistEnv(rank=0, world_size=2)  # its rows, no process group, no average
        _, h_alone = train_run(CFG, RUNS["author"], c, tmp_path / "alone", env=alone)
    finally:
        torch.set_num_threads(before)
    dev_rev, dev_alone = _deviation(h1, h_rev), _deviation(h1, h_alone)
    assert dev_rev["loss"] <= LOSS_RTOL and dev_rev["order"] <= ORDER_RTOL, dev_rev
    assert dev_alone["loss"] >= 10 * LOSS_RTOL and dev_alone["order"] >= 10 * ORDER_RTOL

    # 3. SIGKILL rank 1 mid-run (stalled before step 6; the last checkpoint is step 4's)
    killed, mark = tmp_path / "killed", tmp_path / "rank1.pid"
    stall = Path(__file__).with_name("ddp_stall.py")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           "2", str(stall), "--", str(STALL), str(mark), *JOB, "-o", str(killed)]  # fmt: skip
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as proc:
        deadline = time.monotonic() + 240
        while not mark.exists():
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, "rank 1 never reached the stall"
            time.sleep(0.05)
        os.kill(int(mark.read_text()), signal.SIGKILL)
        out = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode != 0, out[-3000:]  # torchrun saw the rank die and stopped the job
    assert not (killed / RUN_FILE).exists()
    assert load_checkpoint(killed / CHECKPOINT)["trainer"]["step"] == 4  # steps 1-4 kept
    assert main([*JOB, "-o", str(killed)]) == 2  # the work is not overwritten without a word
    r = _torchrun("-m", "pyverify.cli", "--", *JOB, "-o", str(killed), "--resume")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (killed / RUN_FILE).read_bytes() == (two_dir / RUN_FILE).read_bytes()


def test_the_job_path_keeps_the_single_process_numbers(one_process, tmp_path):
    """``train_run`` called in-process (the loop the study ran before runs were jobs) and the
    job give the same history, bit for bit, and the same final weights."""
    one_dir, one = one_process
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model, history = train_run(CFG, RUNS["author"], load_corpus(), tmp_path)
    finally:
        torch.set_num_threads(before)
    assert one["entry"]["history"] == json.loads(json_text(history))
    saved = load_checkpoint(one_dir / CHECKPOINT)["model_state_dict"]
    for k, v in model.state_dict().items():
        assert torch.equal(saved[k], v), k


def test_progress_lines_and_time_based_checkpoints(tmp_path):
    """Rank 0 prints the step, loss, rate and ETA; a checkpoint is also written when
    ``save_every_s`` has passed (0 here: every step), so a kill loses at most that much."""
    lines: list[str] = []
    saved: list[int] = []
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        train_run(CFG, RUNS["frozen"], load_corpus(), tmp_path, stop_after=3, progress=lines.append,
                  progress_every_s=0.0, save_every_s=0.0, on_save=saved.append)  # fmt: skip
    finally:
        torch.set_num_threads(before)
    assert saved == [1, 2, 3]
    assert lines[0] == (f"collapse frozen: {STEPS} steps of a global batch of 4 x 16 tokens on "
                        "1 process (no process group, cpu), from step 0")  # fmt: skip
    assert [ln.split(",")[0] for ln in lines[1:]] == [
        f"collapse frozen: step {k}/3 ({k / 3:.0%})" for k in (1, 2, 3)
    ]
    assert all(" s/step, ETA " in ln and ", loss " in ln for ln in lines[1:])


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line
    return err


def test_run_folders_merge_into_one_ledger(one_process, tmp_path, capsys):
    author, one = one_process
    frozen = tmp_path / "frozen"
    before = torch.get_num_threads()
    try:  # steps may differ between runs: 2 here, 3 for author
        run_job(replace(CFG, steps=2), "frozen", frozen, threads=1)
    finally:
        torch.set_num_threads(before)
    result, timings = load_sources([frozen, author])
    assert list(result["runs"]) == ["author", "frozen"]
    assert result["settings"] == one["settings"]  # the author's folder's settings
    assert result["runs"]["author"] == one["entry"]
    assert result["runs"]["frozen"]["history"][-1]["step"] == 2
    assert set(timings["runs"]) == {"author", "frozen"}
    assert main(["claims", "-i", str(author), str(frozen)]) == 0
    assert "claims ledger" in capsys.readouterr().out
    # a study folder (collapse.json) merges with run folders too
    study = tmp_path / "study"
    study.mkdir()
    (study / "collapse.json").write_text(json.dumps(load_sources([author])[0]))
    assert list(load_sources([study, frozen])[0]["runs"]) == ["author", "frozen"]

    def edited(name: str, change) -> Path:
        d = tmp_path / name
        shutil.copytree(frozen, d)
        run = json.loads((d / RUN_FILE).read_text())
        change(run)
        (d / RUN_FILE).write_text(json.dumps(run))
        return d

    other = edited("other", lambda r: r["settings"].__setitem__("n_val", 8))
    assert main(["claims", "-i", str(author), str(other)]) == 2
    err = _err(capsys)
    assert str(other) in err and "n_val: 8 here, 4 there" in err
    corpus = edited("corpus", lambda r: r["baseline"]["val_loss_by_order"].__setitem__(0, 9.0))
    assert main(["claims", "-i", str(author), str(corpus)]) == 2
    assert "baseline differs" in _err(capsys)
    assert main(["claims", "-i", str(author), str(study)]) == 2
    assert "run 'author' is also in" in _err(capsys)
    assert main(["claims", "-i", str(author), str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in _err(capsys)
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / SETTINGS_FILE).write_text("{}")
    assert main(["claims", "-i", str(unfinished)]) == 2
    err = _err(capsys)
    assert "the run is not finished" in err and "--resume" in err


def test_bad_options_are_one_line_errors(one_process, tmp_path, capsys, monkeypatch):
    author, _one = one_process
    for argv, msg in (
        (["collapse", "--run", "nobody"], "unknown run 'nobody'"),
        ([*JOB, "--jobs", "2", "-o", str(tmp_path / "j")], "--jobs is the whole study's"),
        ([*JOB, "-o", str(author)], "finished: --resume continues it, --restart discards it"),
        (
            ["collapse", "--run", "author", "--settings", str(tmp_path / "none.json")],
            "none.json not found",
        ),
        ([*JOB, "--settings", str(author / RUN_FILE)], "exclude each other"),
    ):
        assert main(argv) == 2, argv
        assert msg in _err(capsys), argv
    # a recall-only run on the byte corpus: refused before the estimate times a step
    assert main(["collapse", "--run", "exposure-free", "--small", "-o", str(tmp_path / "e")]) == 2
    out, err = capsys.readouterr()
    assert "these settings have no recall task" in err and "estimate" not in out
    (tmp_path / "bad.json").write_text(json.dumps({"settings": {"steps": 3}}))
    assert main([*JOB[:3], "--settings", str(tmp_path / "bad.json")]) == 2
    assert "setting 'model' missing" in _err(capsys)
    # --resume on a finished run of these settings keeps it
    assert main([*JOB, "-o", str(author), "--resume"]) == 0
    # --settings reads a run's own record back: the same settings
    assert main(["collapse", "--run", "author", "--settings", str(author / RUN_FILE),
                 "--no-progress", "-o", str(author), "--resume"]) == 0  # fmt: skip
    monkeypatch.setenv("WORLD_SIZE", "3")  # as torchrun --nproc_per_node 3 would set
    monkeypatch.setenv("RANK", "0")
    assert main([*JOB, "-o", str(tmp_path / "three")]) == 2
    assert "global batch of 4 windows does not split over 3 processes" in _err(capsys)
    assert main(["collapse", "--small", "-o", str(tmp_path / "study")]) == 2
    assert "does not run under torchrun" in _err(capsys)
