"""Empirical collapse, measured: an ablation study of a small PLDR decoder.

Modules: :mod:`~pyverify.collapse.corpus` (byte tokenizer, split, batches),
:mod:`~pyverify.collapse.model` (the torch decoder, in the author's
``pldr_model_v510`` layout), :mod:`~pyverify.collapse.config` (settings and the
named runs), :mod:`~pyverify.collapse.inputs` (the study's measurement inputs),
:mod:`~pyverify.collapse.train` (training, the author's checkpoint format),
:mod:`~pyverify.collapse.distributed` (DDP under ``torchrun``: the process group,
the batch split), :mod:`~pyverify.collapse.job` (one run as one job, its folder),
:mod:`~pyverify.collapse.merge` (run folders merged into one study),
:mod:`~pyverify.collapse.plots`, :mod:`~pyverify.collapse.runner` (``pyverify
collapse``: the whole study, one job per run), :mod:`~pyverify.collapse.estimate` (the
cost printed before a run), :mod:`~pyverify.collapse.recipe` (``--check-recipe``, the
author's trainer imported by :mod:`~pyverify.collapse.author`),
:mod:`~pyverify.collapse.gpu_check`. Every measurement is :mod:`pyverify.measure`'s.
"""

from typing import Any

from pyverify.collapse.config import RUNS, RunConfig, RunSpec, full_config, small_config
from pyverify.collapse.model import ModelConfig, PLDRDecoder

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


def __getattr__(name: str) -> Any:
    """``run_collapse``, imported on first use.

    The runner imports :mod:`pyverify.measure`, which imports the model from this package.
    """
    if name == "run_collapse":
        from pyverify.collapse.runner import run_collapse

        return run_collapse
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
