"""Empirical collapse, measured: an ablation study of a small PLDR decoder.

Modules: :mod:`~pyverify.collapse.corpus` (byte tokenizer, split, batches),
 the torch decoder it trains is
:mod:`pyverify.trainable`'s, :mod:`~pyverify.collapse.config` (settings and the
named runs), :mod:`~pyverify.collapse.inputs` (the study's measurement inputs),
:mod:`~pyverify.collapse.train` (training, the author's checkpoint format),
:mod:`~pyverify.collapse.distributed` (DDP under ``torchrun``: the process group,
the batch split), :mod:`~pyverify.collapse.job` (one run as one job, its folder),
:mod:`~pyverify.collapse.merge` (run folders merged into one study),
:mod:`~pyverify.report.collapse_plots`, :mod:`~pyverify.collapse.runner` (``pyverify
collapse``: the whole study, one job per run), :mod:`~pyverify.collapse.estimate` (the
cost printed before a run), :mod:`~pyverify.collapse.recipe` (``--check-recipe``, the
author's trainer imported by :mod:`~pyverify.collapse.author`),
:mod:`~pyverify.collapse.gpu_check`. Every measurement is :mod:`pyverify.measure`'s.
"""

from pyverify.collapse.config import RUNS, RunConfig, RunSpec, full_config, small_config
from pyverify.collapse.runner import run_collapse
from pyverify.trainable import ModelConfig, PLDRDecoder

__all__ = [
    "RUNS",
    "ModelConfig",
    "PLDRDecoder",
    "RunConfig",
    "RunSpec",
    "full_config",
    "run_collapse",
    "small_config",
]
