"""The training-step row: the study's step against the author's trainer's (``pyverify bench``).

``T train step ours/author``: one optimiser step of the study's trainer
(:func:`~pyverify.collapse.train.forward_loss` and :func:`~pyverify.collapse.train.update`
after setting the learning rate, then the loss and accuracy read back as floats, as its
loop does) / one ``dist_train_step`` of the author's trainer (``pldr_run_model_v510.py``,
built by :func:`pyverify.collapse.author.author_trainer`: their FSDP wrap, AdamW,
scheduler and GradScaler), the same model (the study's initial weights loaded into their
``PLDR_Model``), the same batch, timed interleaved. Target <= 1.0.

Shapes: the ``small`` preset in float32 on a CPU, one thread (as the study trains a
run; their autocast and FSDP mixed precision are CUDA paths: off); on CUDA also the
``gpu-day`` preset, each side under its own bf16 recipe (ours: autocast; theirs:
autocast, FSDP bf16 parameters and their GradScaler). Skipped, with a message, when
``PYVERIFY_AUTHOR_SRC`` is unset.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from pyverify.bench.rows import row_line
from pyverify.output import Progress

__all__ = ["bench_train_step", "step_pair"]

NAME = "T train step ours/author"


def step_pair(cfg: Any, device: torch.device, run_mod: Any, model_mod: Any) -> tuple[Any, Any]:
    """``(ours, theirs)``: zero-argument callables, one training step each (module doc).

    Call inside :func:`pyverify.collapse.author.process_group`.
    """
    from pyverify.collapse import author as au
    from pyverify.collapse.config import RUNS
    from pyverify.collapse.corpus import load_corpus
    from pyverify.collapse.train import forward_loss, make_optimizer, update
    from pyverify.trainable.decoder import PLDRDecoder

    run = RUNS["author"]
    ours_m = PLDRDecoder(cfg.model, seed=cfg.seed).to(device)
    init = {k: v.detach().cpu().clone() for k, v in ours_m.state_dict().items()}
    opt = make_optimizer(ours_m, cfg, run)
    bf16 = device.type == "cuda" and cfg.bf16_autocast
    theirs_m = au.author_model(model_mod, cfg.model, max_seq_len=cfg.seq + 1, state_dict=init,
                               device=device)  # fmt: skip
    hp = au.author_hparams(cfg, run, amp=bf16, fsdp_mp=bf16)
    trainer = au.author_trainer(run_mod, hp, theirs_m, device)
    corpus = load_corpus(cfg.corpus)
    x, y = (t.to(device) for t in corpus.batch(cfg.seed, 0, cfg.batch, cfg.seq))
    window = torch.cat([x, y[:, -1:]], 1)
    ours_m.train()

    def ours() -> tuple[float, float]:
        loss, acc = forward_loss(ours_m, x, y, cfg, run.objective)
        update(ours_m, opt, loss, cfg, run.peak_lr)
        return float(loss.detach()), float(acc)

    def theirs() -> tuple[float, float]:
        return trainer.dist_train_step(window)

    return ours, theirs


def bench_train_step(
    device: torch.device, reps: int, say: Progress, rows: list, row: Any, timer: Any
) -> str | None:
    """Append the row(s) (module doc); return a skip message instead when there is no checkout."""
    from pyverify.collapse import author as au

    if not os.environ.get(au.ENV, "").strip():
        msg = f"{NAME}: skipped ({au.ENV} is not set: no checkout of {au.REPO} to time)"
        say(msg)
        return msg
    root = au.author_src("bench")
    model_mod, run_mod = au.author_modules(root, "bench")
    presets = ["small"] + (["gpu-day"] if device.type == "cuda" else [])
    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(1)  # as the study trains: one thread a run
    try:
        _rows(device, presets, reps, say, rows, row, timer, run_mod, model_mod)
    finally:
        torch.set_num_threads(threads)
    return None


def _rows(device, presets, reps, say, rows, row, timer, run_mod, model_mod) -> None:
    from pyverify.collapse import author as au
    from pyverify.collapse.config import preset_config

    with au.quiet(), au.process_group(device):
        for name in presets:
            cfg = preset_config(name)
            ours, theirs = step_pair(cfg, device, run_mod, model_mod)
            o, b = timer(ours, theirs, device, reps=reps, max_seconds=60, grad=True)
            bf16 = device.type == "cuda" and cfg.bf16_autocast
            shape = {"preset": name, "B": cfg.batch, "S": cfg.seq, "d": cfg.model.d_model}
            dtype = torch.bfloat16 if bf16 else torch.float32
            r = row(NAME, shape, dtype, device, o, b, 1.0)
            r["threads"] = torch.get_num_threads()
            rows.append(r)
            say(row_line(r))
