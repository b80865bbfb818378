"""The recall regime's settings (:mod:`pyverify.collapse.regimes`): the study on recall.

:func:`tiny_recall_config` is a test of the whole path (seconds). The regime's own
settings (:func:`recall_config`) are fixed before its first full run from the pilots
recorded in ``docs/recall-pilots.md``; their reasons are in its docstring.
"""

from __future__ import annotations

from dataclasses import replace

from pyverify.collapse.config import RunConfig, full_config
from pyverify.collapse.recall import RecallTask
from pyverify.trainable.decoder import ModelConfig

__all__ = ["tiny_recall_config"]


def _fit(cfg: RunConfig, task: RecallTask) -> RunConfig:
    """``cfg`` on ``task``: its sequence, prompt (the kv section), vocabulary and val set."""
    return replace(cfg, recall=task, seq=task.seq, prompt_len=task.kv_len, n_val=task.n_val,
                   model=replace(cfg.model, vocab=task.vocab))  # fmt: skip


def tiny_recall_config() -> RunConfig:
    """The recall study at test size (a few seconds a run): every measurement, no learning."""
    task = RecallTask(n_keys=8, n_values=8, n_pairs=3, n_queries=2, n_val=8,
                      ngram_train_seqs=64, ngram_max=2)  # fmt: skip
    model = ModelConfig(d_model=16, num_heads=2, num_layers=1, dff=32, a_dff=8,
                        num_reslayer=1, num_dense=1)  # fmt: skip
    sizes = {"steps": 12, "batch": 4, "measure_every": 4, "n_probe": 4, "s_measure": (6, task.seq),
             "n_pairs": 2, "pair_prompt_len": 4, "pair_new": 4, "jac_probes": 1, "n_prompts": 4,
             "n_new": 3, "ngram_max": 2, "online_n": 4, "online_len": 8, "online_prefix": 4,
             "run_factors": False}  # fmt: skip
    return _fit(replace(full_config(), model=model, **sizes), task).validate()
