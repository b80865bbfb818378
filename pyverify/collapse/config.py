"""Settings of the ablation study: five named runs of one model, the full and small sizes.

The runs (``pyverify collapse``, study ``ablation``)
----------------------------------------------------
One model, one corpus split, one seed, one step count; each run changes one
cause of the paper's collapse against ``author``:

* ``author``: the author's recipe at small scale (``pldr_model_v510``,
  ``pldr_run_model_v510.py`` and ``sample-train-script-pldrv510.sh``):
  ``W, P, a`` drawn by ``xavier_normal_``, ``b, b_a`` zero; AdamW betas
  (0.9, 0.95), eps 1e-5, weight decay 0.1 on every parameter, gradients
  clipped by value at 1.0, peak lr 1e-3, linear warm-up over 0.8 % of the
  steps (their 2,000 of 250,000), cosine to 10 %;
* ``frozen``: ``author`` with the metric learner and ``W, b, P, a, b_a`` frozen
  at their init (what the init alone gives);
* ``no-decay``: ``author`` without weight decay on ``P`` and ``a``;
* ``spread-init``: ``author`` with ``P ~ U[0.5, 1.5]`` (the suite's former
  specimen init), every other weight drawn exactly as in ``author``;
* ``subcritical``: ``author`` with a 10x smaller peak lr and a 10x longer warm-up.

The settings below were FIXED IN CODE BEFORE THE FIRST FULL RUN and have not
been tuned toward any result. The sizes were chosen from a speed probe alone
(steps per second on one thread) so that the five runs fit the time budget;
the only quality target named in advance is that ``author`` should beat an
n-gram count model of the same split, and the ledger says "inconclusive" for
every claim it would decide if it does not.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pyverify.collapse.model import ModelConfig
from pyverify.errors import InputValueError

__all__ = ["RUNS", "STUDY_RUNS", "RunConfig", "RunSpec", "full_config", "small_config"]

AUTHOR_PEAK_LR = 1e-3
AUTHOR_WARMUP_FRAC = 2000 / 250_000


@dataclass(frozen=True)
class RunSpec:
    """What one named run changes against ``author``."""

    name: str
    peak_lr: float = AUTHOR_PEAK_LR
    warmup_frac: float = AUTHOR_WARMUP_FRAC
    p_init: str = "xavier"
    frozen_metric: bool = False
    decay_p_a: bool = True

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


RUNS: dict[str, RunSpec] = {
    "author": RunSpec("author"),
    "frozen": RunSpec("frozen", frozen_metric=True),
    "no-decay": RunSpec("no-decay", decay_p_a=False),
    "spread-init": RunSpec("spread-init", p_init="spread"),
    "subcritical": RunSpec(
        "subcritical", peak_lr=AUTHOR_PEAK_LR / 10, warmup_frac=10 * AUTHOR_WARMUP_FRAC
    ),
}
"""The named runs of the ablation study (see the module docstring)."""

STUDY_RUNS = tuple(RUNS)

FULL_MODEL = ModelConfig(
    d_model=128, num_heads=4, num_layers=2, dff=384, a_dff=96, num_reslayer=2, num_dense=2
)
"""The study's model: dk 32 (the author's is 64), A_dff 3 dk (theirs 180 ~ 2.8 dk)."""


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run's deterministic numbers."""

    model: ModelConfig = field(default_factory=lambda: FULL_MODEL)
    steps: int = 4000
    batch: int = 16
    seq: int = 64
    seed: int = 0
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    adam_eps: float = 1e-5
    grad_clip_value: float = 1.0
    min_lr_frac: float = 0.1
    measure_every: int = 250
    n_probe: int = 16
    n_val: int = 256
    s_measure: tuple[int, ...] = (32, 64)
    n_pairs: int = 4
    pair_prompt_len: int = 32
    pair_new: int = 32
    jac_probes: int = 2
    n_prompts: int = 20
    prompt_len: int = 32
    n_new: int = 16
    rank_rtol: float = 1e-6
    ngram_max: int = 5

    def validate(self) -> RunConfig:
        """Raise :class:`~pyverify.errors.InputValueError` naming a bad setting."""
        self.model.validate()
        for name in (
            "steps",
            "batch",
            "seq",
            "measure_every",
            "n_probe",
            "n_val",
            "n_pairs",
            "pair_prompt_len",
            "pair_new",
            "jac_probes",
            "n_prompts",
            "prompt_len",
            "n_new",
            "ngram_max",
        ):
            val = getattr(self, name)
            if not isinstance(val, int) or val < 1:
                raise InputValueError(f"{name} must be a positive int; got {val!r}")
        if self.n_probe < 2:
            raise InputValueError(
                f"n_probe must be >= 2 (a fluctuation needs two inputs); got {self.n_probe}"
            )
        if len(self.s_measure) < 2 or max(self.s_measure) > self.seq:
            raise InputValueError(
                f"s_measure must hold >= 2 lengths <= seq ({self.seq}); got {self.s_measure}"
            )
        if self.pair_prompt_len + self.pair_new > self.seq:
            raise InputValueError("pair_prompt_len + pair_new must not exceed seq")
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings."""
        d = asdict(self)
        d["betas"] = list(self.betas)
        d["s_measure"] = list(self.s_measure)
        return d


def full_config() -> RunConfig:
    """The default study of ``pyverify collapse`` (fixed before the first full run)."""
    return RunConfig()


def small_config() -> RunConfig:
    """The small study (a test: about a minute on two cores)."""
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
        s_measure=(8, 16),
        n_pairs=2,
        pair_prompt_len=8,
        pair_new=8,
        jac_probes=1,
        n_prompts=20,
        prompt_len=8,
        n_new=3,
        ngram_max=3,
    )
