"""Empirical collapse, measured: train a small PLDR decoder and watch its order parameter.

Modules: :mod:`~pyverify.collapse.corpus` (byte tokenizer, split, batches),
:mod:`~pyverify.collapse.model` (the torch decoder), :mod:`~pyverify.collapse.config`
(settings and the two regimes), :mod:`~pyverify.collapse.train` (training,
checkpoints), :mod:`~pyverify.collapse.measure` (order parameters, eps_G, rank
profile, commutant residual), :mod:`~pyverify.collapse.fidelity` (cached vs
uncached decoding), :mod:`~pyverify.collapse.plots`, :mod:`~pyverify.collapse.runner`
(``pyverify collapse``), :mod:`~pyverify.collapse.convert` (weights into the
float64 reference decoder, the oracle).
"""

from pyverify.collapse.config import REGIMES, RunConfig, full_config, small_config
from pyverify.collapse.model import ModelConfig, PLDRDecoder
from pyverify.collapse.runner import run_collapse

__all__ = [
    "REGIMES",
    "ModelConfig",
    "PLDRDecoder",
    "RunConfig",
    "full_config",
    "run_collapse",
    "small_config",
]
