"""Settings of a collapse run: the two regimes, the full run and the small (test) run.

How the regimes were chosen
---------------------------
Gokden's PLDR-LLM papers reach the critical regime ("self-organized
criticality": deductive outputs in a metastable steady state, order parameter
near zero) by the choice of the peak learning rate and the warm-up length, and
contrast it with sub-critical runs. Here the two settings were fixed BEFORE any
run and not tuned afterwards on the order parameter:

* ``critical``: the largest peak learning rate commonly stable for a small
  post-LayerNorm transformer trained with AdamW at this width (3e-3), with a
  short warm-up (5 % of the steps) -- training at the edge of stability, the
  paper's recipe for criticality;
* ``subcritical``: ten times smaller peak learning rate (3e-4) with a long
  warm-up (25 % of the steps) -- the same model, data, seed and step count.

Both decay by a cosine to 10 % of the peak. The report states whether the
measured order parameters differ; a tiny model on a small corpus may show no
collapse in either regime, and that is reported as a finding.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pyverify.collapse.model import ModelConfig
from pyverify.errors import InputValueError

__all__ = ["REGIMES", "Regime", "RunConfig", "full_config", "small_config"]


@dataclass(frozen=True)
class Regime:
    """Learning-rate schedule of one regime."""

    name: str
    peak_lr: float
    warmup_frac: float


REGIMES: dict[str, Regime] = {
    "critical": Regime("critical", 3e-3, 0.05),
    "subcritical": Regime("subcritical", 3e-4, 0.25),
}
"""The two regimes (see the module docstring for how they were chosen)."""


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run's deterministic numbers."""

    model: ModelConfig = field(default_factory=ModelConfig)
    steps: int = 1500
    batch: int = 16
    seq: int = 64
    seed: int = 0
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0
    min_lr_frac: float = 0.1
    measure_every: int = 100
    n_probe: int = 16
    n_val: int = 16
    s_sweep: tuple[int, ...] = (8, 16, 32, 64, 128)
    n_prompts: int = 20
    prompt_len: int = 32
    n_new: int = 16
    rank_rtol: float = 1e-6

    def validate(self) -> RunConfig:
        """Raise ``ValueError`` naming a bad setting."""
        self.model.validate()
        for name in (
            "steps",
            "batch",
            "seq",
            "measure_every",
            "n_probe",
            "n_val",
            "n_prompts",
            "prompt_len",
            "n_new",
        ):
            val = getattr(self, name)
            if not isinstance(val, int) or val < 1:
                raise InputValueError(f"{name} must be a positive int; got {val!r}")
        if self.n_probe < 2:
            raise InputValueError(
                f"n_probe must be >= 2 (a fluctuation needs two inputs); got {self.n_probe}"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings."""
        d = asdict(self)
        d["betas"] = list(self.betas)
        d["s_sweep"] = list(self.s_sweep)
        return d


def full_config() -> RunConfig:
    """The default run of ``pyverify collapse``."""
    return RunConfig()


def small_config() -> RunConfig:
    """The small run (a test: well under a minute on two cores)."""
    return replace(
        RunConfig(),
        model=ModelConfig(
            d_model=16, num_heads=2, num_layers=1, dff=32, a_dff=8, num_reslayer=1, num_dense=1
        ),
        steps=12,
        batch=4,
        seq=16,
        measure_every=4,
        n_probe=4,
        n_val=4,
        s_sweep=(8, 16),
        n_prompts=20,
        prompt_len=8,
        n_new=3,
    )
