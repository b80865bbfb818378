"""Empirical collapse, measured: an ablation study of a small PLDR decoder.

Modules: :mod:`~pyverify.collapse.corpus` (byte tokenizer, split, batches),
:mod:`~pyverify.collapse.model` (the torch decoder), :mod:`~pyverify.collapse.config`
(settings and the five named runs), :mod:`~pyverify.collapse.train` (training,
checkpoints), :mod:`~pyverify.collapse.measure` (order parameters, eps_G, rank
profile, commutant residual), :mod:`~pyverify.collapse.fidelity` (cached vs
uncached decoding), :mod:`~pyverify.collapse.plots`, :mod:`~pyverify.collapse.runner`
(``pyverify collapse``), :mod:`~pyverify.collapse.convert` (weights into the
float64 reference decoder, the oracle).
"""

from pyverify.collapse.config import RUNS, RunConfig, RunSpec, full_config, small_config
from pyverify.collapse.model import ModelConfig, PLDRDecoder
from pyverify.collapse.runner import run_collapse

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
