"""Settings of the ablation study: seven named runs of one model, its presets and sizes.

The runs (``pyverify collapse``, study ``ablation``)
----------------------------------------------------
One model, one corpus split, one seed; each run changes one cause of the
paper's collapse against ``author``:

* ``author``: the author's recipe at small scale (``pldr_model_v510``,
  ``pldr_run_model_v510.py`` and ``sample-train-script-pldrv510.sh``): the
  author's initialisers tensor by tensor (:mod:`pyverify.trainable.decoder`);
  AdamW betas (0.9, 0.95), eps 1e-5, weight decay 0.1 on every parameter,
  gradients clipped by value at 1.0, peak lr 1e-3, linear warm-up over 0.8 %
  of the steps (their 2,000 of 250,000), cosine to 10 %; the loss on every
  position of a teacher-forced window (objective ``all``);
* ``frozen``: ``author`` with the metric learner and ``W, b, P, a, b_a`` frozen
  at their init (what the init alone gives);
* ``no-decay``: ``author`` without weight decay on ``P`` and ``a``;
* ``spread-init``: ``author`` with ``P ~ U[0.5, 1.5]`` (the suite's former
  specimen init), every other weight drawn exactly as in ``author``;
* ``subcritical``: ``author`` with a 10x smaller peak lr and a 10x longer warm-up;
* ``last-only``: ``author`` with the loss on the final position of each window
  only (objective ``last``): the author's target-exposure ablation (loss mode
  ``last`` of ``vendor/row/experiments/train_run.py`` in the dynamics study);
* ``prompt-A``: ``author`` with A, hence G, computed from the first
  ``prompt_len`` tokens of each window and the loss on every token after them
  (objective ``prompt-A``): the author's deployed decoding (the KV-cache keeps
  the prompt's A, ``A=kvcache[2]``), trained without the leak of later tokens
  through G.

Settings and their reasons
--------------------------
The settings below were FIXED IN CODE BEFORE THE FIRST FULL RUN and are not
tuned toward any result. The sizes were chosen from a speed probe alone
(steps per second on one thread) so that the study fits its time budget; the
only quality target named in advance is that ``author`` should beat an n-gram
count model of the same split.

* The warm-up is the author's (``warmup_start`` 0: step t of the warm-up takes
  peak t / W, so the first optimiser step has lr 0, as their ``LambdaLR``, built at
  step 0 and stepped after each optimiser step, gives). The first study's warm-up
  ran one step ahead (peak (t + 1) / W); ``pyverify collapse --check-recipe`` found
  the offset against their trainer, and it was corrected before the first full run
  of this study (the one with the author's module layout and initialisers, whose
  numbers replace the first study's), from the check alone, not from any result.
* Step counts: 4,000 steps of 16 x 64 bytes per run, except ``author`` and
  ``subcritical`` (``steps_factor`` 3: 12,000 steps), because the one trend the
  first study showed (ln of the median order parameter of G falling about 4 %
  per 1,000 steps in ``author``, rising in ``subcritical``) needs a longer
  series than 15 correlated points to be read; the schedule is stretched with
  the run (warm-up fraction and cosine over its own steps), nothing else
  changes. The budget: the seven runs (44,000 steps) on 2 cores, two at a
  time, within 60 minutes.
* Objectives ``last`` and ``prompt-A`` (``last-only``, ``prompt-A``): the
  first study measured target exposure (``spread-init``: 0.51 nats/byte
  teacher-forced, 7.06 causal), so two runs on the ``author`` recipe remove it,
  the author's way (last position only) and the deployed way (A from a prompt
  prefix); ``prompt_len`` is the fidelity prompts' length (32 of 64 bytes), so
  a ``prompt-A`` model is evaluated as it was trained. Every run also reports
  the validation loss with A from the first ``prompt_len`` bytes (the author's
  KV-cache decoding after such a prompt, leak-free in one pass) beside the
  teacher-forced and the causal loss.
* Measurements every 250 steps (``measure_every``), on fixed validation
  windows: 16 probes at S = 32 and 64, 4 prompts continued twice by 32 sampled
  bytes (the author's pairwise form; the same seeds at every step, so a trend
  is not sampling noise), 2 probes for the Jacobian.
* The online contract uses the author's audit constants (``audit_online.py``
  O1: 16 sequences of 12 tokens, the first 4 kept, the rest replaced), on
  validation text windows rather than random ids (a byte model reads text).
* E5 timing: every run times its three decoders in ``TIMING_REPEATS`` = 7
  interleaved repeats (:mod:`pyverify.measure.decoding`) and keeps each repeat,
  because E5's rule decides only where the spread of at least 5 repeats clears
  its cut-off (the first study kept the best of 3, and the same architecture
  gave 1.10x to 2.13x across runs). Cost: about 0.9 s per repeat at the full
  size under load 4 (3 s more per run than 3 repeats); nothing else is timed.
* N1 (the mean-operator cache): the 16 probe windows of 64 bytes as the
  calibration contexts (the author's count: 16) and the 256 validation
  windows as the assessment panel (the author: 64), the final position of each
  scored against the byte after the window.

Presets (``pyverify collapse --preset``)
----------------------------------------
* ``small`` (the default): the study above, :func:`full_config`.
* ``paper``: the author's 110M model and recipe. From
  ``src/pldr_model_v510/scripts/sample-train-script-pldrv510.sh``: NUM_LAYERS=5,
  NUM_HEADS=14, DK=64, NUM_RESLAYERA=8, NUM_DENSEA=2, ADFF=180, CONTEXT_LENGTH=1024,
  BATCH_SIZE=16 (per GPU), TRAIN_BATCHES_CNT=250000, WARMUP_STEPS=2000,
  LEARNING_RATE=1e-3, LR_ALPHA=0.1, ADAMW_DECAY=0.1. From
  ``dist_pldr_v510_train_main.py``: dff = floor(num_heads dk 4 2/3) = 2389 (the script
  passes none); the vocabulary is the tokenizer's (their SentencePiece model: 32,000
  pieces; a ``--corpus`` brings its own). From ``pldr_run_model_v510.py``: AdamW betas
  (0.9, 0.95), eps 1e-5, ``clip_grad_value_(..., 1.0)``, bf16 autocast around the
  forward pass and loss (CUDA), ``LinearWarmupCosineLRSchedule`` (a ``LambdaLR``
  built at step 0 and stepped after each optimiser step: step t takes peak t / 2000 in
  the warm-up, so :attr:`RunConfig.warmup_start` is 0). ``pldr_data_prep.py`` packs
  chunks of CONTEXT_LENGTH tokens and ``dist_train_step`` trains on ``inp[:, :-1]`` to
  predict ``inp[:, 1:]``: 1023 positions, ``seq=1023``. Every run takes 250,000 steps
  (:attr:`RunConfig.run_factors` False: the ``author`` run is their run). Measurements
  every 2,500 steps at S = 512 and 1023, 64 validation windows (the author's N1 panel
  count), continuations of 64 tokens (their pairwise form).
* ``gpu-day``: the paper's depth (5 layers), head width (dk 64), metric learner (8
  units of 2 blocks, A_dff 180), context, batch and recipe with 8 heads (d_model 512,
  dff 1365): 52M parameters with a 32,000 vocabulary. Sized so the seven runs of the
  study (the small study's design: ``author`` and ``subcritical`` 3x, 11 x ``steps``
  steps in all) take about 24 h on one NVIDIA H200 at an ASSUMED 100 TFLOP/s
  sustained (10 % of its dense bf16 peak; FLOPs as :mod:`~pyverify.collapse.estimate`
  counts them, 3.84e12 a step): 86,400 s x 1e14 / (11 x 3.84e12) = 204,700 steps,
  rounded to 200,000. No GPU was at hand when it was sized: ``--preset gpu-day
  --dry-run --device cuda`` (and the GPU check) measure the rate; the steps are to be
  re-sized from that measurement before the preset's first full run, never after.

Not reproduced from the author's trainer (``--check-recipe`` runs theirs in float64,
where none of these acts): their FSDP mixed precision (parameters, gradient reduction
and buffers in bf16 on top of autocast; DDP here keeps float32 parameters under
autocast), their GradScaler (with bf16 a no-op unless a gradient overflows, when it
skips the step) and their loss's mask of target id 0 (their ``[PAD]``; packed chunks
hold none; this trainer scores every position).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pyverify.collapse.recall import RecallTask
from pyverify.errors import InputValueError
from pyverify.trainable.decoder import ModelConfig

__all__ = [
    "LATER_DEFAULTS",
    "OBJECTIVES",
    "PRESETS",
    "RUNS",
    "STUDY_RUNS",
    "RunConfig",
    "RunSpec",
    "full_config",
    "preset_config",
    "small_config",
]

AUTHOR_PEAK_LR = 1e-3
AUTHOR_WARMUP_FRAC = 2000 / 250_000
OBJECTIVES = ("all", "last", "prompt-A", "prompt-A-answers")
"""Loss modes: every position (the author's), the final position only, and A from a
prompt prefix with the loss on the rest (see the module docstring); ``prompt-A-answers``
(the recall task, :mod:`pyverify.collapse.recall`): A from the first ``prompt_len``
tokens (the kv section, which holds no answer) and the loss on the positions of a mask
the task supplies (its answers) only."""


@dataclass(frozen=True)
class RunSpec:
    """What one named run changes against ``author``."""

    name: str
    peak_lr: float = AUTHOR_PEAK_LR
    warmup_frac: float = AUTHOR_WARMUP_FRAC
    p_init: str = "xavier"
    frozen_metric: bool = False
    decay_p_a: bool = True
    objective: str = "all"
    steps_factor: int = 1

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise InputValueError(f"objective must be one of {OBJECTIVES}; got {self.objective!r}")
        if not isinstance(self.steps_factor, int) or self.steps_factor < 1:
            raise InputValueError(f"steps_factor must be a positive int; got {self.steps_factor}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


RUNS: dict[str, RunSpec] = {
    "author": RunSpec("author", steps_factor=3),
    "frozen": RunSpec("frozen", frozen_metric=True),
    "no-decay": RunSpec("no-decay", decay_p_a=False),
    "spread-init": RunSpec("spread-init", p_init="spread"),
    "subcritical": RunSpec(
        "subcritical",
        peak_lr=AUTHOR_PEAK_LR / 10,
        warmup_frac=10 * AUTHOR_WARMUP_FRAC,
        steps_factor=3,
    ),
    "last-only": RunSpec("last-only", objective="last"),
    "prompt-A": RunSpec("prompt-A", objective="prompt-A"),
}
"""The named runs of the ablation study (see the module docstring)."""

STUDY_RUNS = tuple(RUNS)
"""The byte study's seven runs."""

RUNS["exposure-free"] = RunSpec("exposure-free", objective="prompt-A-answers")
"""The recall task's run without target exposure: ``author`` with A (hence G) from the kv
section (the prompt an inference cache holds, never an answer) and the loss on the
answers alone (:mod:`pyverify.collapse.recall`); the byte study does not train it."""

FULL_MODEL = ModelConfig(
    d_model=128, num_heads=4, num_layers=2, dff=384, a_dff=96, num_reslayer=2, num_dense=2
)
"""The study's model: dk 32 (the author's is 64), A_dff 3 dk (theirs 180 ~ 2.8 dk)."""


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run's deterministic numbers (with its :class:`RunSpec`)."""

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
    online_n: int = 16
    online_len: int = 12
    online_prefix: int = 4
    # Settings added after the study's first full run. Their defaults are what that run
    # did, and :meth:`to_dict` leaves a field out while it holds its default, so the
    # study's settings (collapse.json, checkpoint stamps) are what they were.
    warmup_start: int = 1
    """Numerator offset of the warm-up: step ``t < W`` takes ``peak (t + warmup_start) / W``.
    1: the study (its first step already trains); 0: the author's ``LambdaLR`` (their
    scheduler is built at step 0 and stepped after each optimiser step, so their first
    step takes lr 0 and step ``t`` takes ``peak t / W``)."""
    bf16_autocast: bool = False
    """Forward pass and loss under ``torch.autocast("cuda", torch.bfloat16)`` on a CUDA
    device (the author's ``dist_train_step``); nothing changes on a CPU."""
    run_factors: bool = True
    """Multiply each run's steps by its :attr:`RunSpec.steps_factor` (the study's design);
    False: every run takes ``steps`` (the ``paper`` preset, whose ``author`` run is
    exactly the author's 250,000 steps)."""
    step_factors: tuple[tuple[str, int], ...] = ()
    """``(run name, factor)`` pairs: these settings' own step factors, in place of the
    runs' :attr:`RunSpec.steps_factor` (a regime sized by its pilots,
    :mod:`pyverify.collapse.recall_regime`)."""
    corpus: str | None = None
    """A tokenised corpus file (:func:`pyverify.collapse.corpus.load_corpus`); None: the
    vendored byte corpus."""
    recall: RecallTask | None = None
    """The in-context recall task (:mod:`pyverify.collapse.recall`) in place of a corpus;
    None: a corpus. Its sequences fix ``seq``, ``prompt_len`` (the kv section) and the
    vocabulary."""
    decay_vocab: bool = True
    """The embedding and the output layer decay with the rest (the author's recipe, which
    decays every parameter); False: weight decay 0 on them (a regime sized by its pilots:
    decay shrank two value tokens' output rows to one direction, ``docs/recall-pilots.md``)."""

    def run_steps(self, run: RunSpec) -> int:
        """Steps of ``run``.

        ``steps`` times the run's factor in :attr:`step_factors` where it has one, else
        ``steps * run.steps_factor``; ``steps`` alone when not :attr:`run_factors`.
        """
        factors = dict(self.step_factors)
        if run.name in factors:
            return self.steps * factors[run.name]
        return self.steps * (run.steps_factor if self.run_factors else 1)

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
            "online_n",
            "online_len",
            "online_prefix",
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
        if self.prompt_len >= self.seq:
            raise InputValueError("prompt_len must be < seq (prompt-A needs tokens after it)")
        if not self.online_prefix < self.online_len <= self.seq:
            raise InputValueError("need online_prefix < online_len <= seq")
        for name, factor in self.step_factors:
            if not isinstance(factor, int) or isinstance(factor, bool) or factor < 1:
                raise InputValueError(f"step_factors: {name}'s factor must be an int >= 1")
        if self.warmup_start not in (0, 1):
            raise InputValueError(f"warmup_start must be 0 or 1; got {self.warmup_start!r}")
        if self.recall is not None:
            t = self.recall.validate()
            if self.corpus is not None:
                raise InputValueError("a recall task takes no corpus; give one or the other")
            for name, want in (("seq", t.seq), ("prompt_len", t.kv_len), ("vocab", t.vocab)):
                got = self.model.vocab if name == "vocab" else getattr(self, name)
                if got != want:
                    raise InputValueError(f"{name} must be the recall task's {want}; got {got}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings (the later fields only where they differ from their default)."""
        d = asdict(self)
        d["betas"] = list(self.betas)
        d["s_measure"] = list(self.s_measure)
        for name, default in LATER_DEFAULTS.items():
            if d[name] == default:
                del d[name]
        if "step_factors" in d:
            d["step_factors"] = [list(pair) for pair in d["step_factors"]]
        return d


LATER_DEFAULTS: dict[str, Any] = {
    "warmup_start": 1,
    "bf16_autocast": False,
    "run_factors": True,
    "corpus": None,
    "recall": None,
    "step_factors": (),
    "decay_vocab": True,
}
"""Fields added after the first full study, with the values that study used."""


def full_config() -> RunConfig:
    """The default study of ``pyverify collapse`` (fixed before its first full run).

    ``warmup_start`` 0: the author's warm-up (module docstring); the dataclass keeps 1,
    the first study's, so that its saved settings read back as they ran.
    """
    return RunConfig(warmup_start=0)


def small_config() -> RunConfig:
    """The small study (a test: about a minute on two cores)."""
    return replace(
        full_config(),
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
        online_n=4,
        online_len=12,
        online_prefix=4,
    )


PAPER_MODEL = ModelConfig(
    vocab=32000, d_model=896, num_heads=14, num_layers=5, dff=2389, a_dff=180, num_reslayer=8,
    num_dense=2,
)  # fmt: skip
"""The author's 110M model (module docstring, *Presets*)."""

GPU_DAY_MODEL = ModelConfig(
    vocab=32000, d_model=512, num_heads=8, num_layers=5, dff=1365, a_dff=180, num_reslayer=8,
    num_dense=2,
)  # fmt: skip
"""The middle model: the paper's depth, head width and metric learner; 8 heads of 14."""

_LARGE_MEASURES: dict[str, Any] = {
    "n_probe": 16,
    "n_val": 64,
    "s_measure": (512, 1023),
    "n_pairs": 4,
    "pair_prompt_len": 512,
    "pair_new": 64,
    "jac_probes": 2,
    "n_prompts": 20,
    "prompt_len": 512,
    "n_new": 16,
    "ngram_max": 4,
}
"""Measurement sizes of the two large presets (module docstring, *Presets*)."""

GPU_DAY_STEPS = 200_000
GPU_DAY_TFLOPS = 100.0
"""The sustained rate (TFLOP/s of :mod:`~pyverify.collapse.estimate`'s count) assumed when
the ``gpu-day`` preset was sized; ``pyverify collapse --preset gpu-day --dry-run`` on the
GPU measures the real one."""

PRESET_NOTES = {
    "small": "the study (fixed before its first full run): 0.61M parameters, "
    "context 64 bytes, 4,000 steps a run (author and subcritical 12,000)",
    "gpu-day": "the paper's depth, dk 64, A_dff 180 and 8 residual units with 8 heads: sized "
    f"so the seven runs (11 x {GPU_DAY_STEPS:,} steps) take about 24 h on one NVIDIA H200 "
    f"at an assumed {GPU_DAY_TFLOPS:.0f} TFLOP/s sustained (10 % of its dense bf16 peak); "
    "the --dry-run on the GPU prints the measured rate",
    "paper": "the author's 110M model and recipe (sample-train-script-pldrv510.sh, "
    "dist_pldr_v510_train_main.py, pldr_run_model_v510.py): every run 250,000 steps",
}
"""One line per preset: what it is and how it was sized."""

PRESETS = ("small", "gpu-day", "paper")


def preset_config(name: str, *, vocab: int | None = None, corpus: str | None = None) -> RunConfig:
    """The settings of preset ``name`` (module docstring, *Presets*).

    ``vocab``: the model's vocabulary (a corpus's own; default the preset's: 256 bytes
    for ``small``, the author's 32,000 for the others); ``corpus``: its file.
    """
    if name == "small":
        cfg = full_config()
    elif name == "paper":
        cfg = replace(
            RunConfig(), model=PAPER_MODEL, steps=250_000, seq=1023, measure_every=2500,
            warmup_start=0, bf16_autocast=True, run_factors=False, **_LARGE_MEASURES,
        )  # fmt: skip
    elif name == "gpu-day":
        cfg = replace(
            RunConfig(), model=GPU_DAY_MODEL, steps=GPU_DAY_STEPS, seq=1023,
            measure_every=5000, warmup_start=0, bf16_autocast=True, **_LARGE_MEASURES,
        )  # fmt: skip
    else:
        raise InputValueError(f"--preset must be one of {', '.join(PRESETS)}; got {name!r}")
    if vocab is not None:
        cfg = replace(cfg, model=replace(cfg.model, vocab=vocab))
    if corpus is not None:
        cfg = replace(cfg, corpus=corpus)
    return cfg.validate()
