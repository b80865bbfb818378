"""The recall regime's settings (:mod:`pyverify.collapse.regimes`): the study on recall.

FIXED BEFORE THE FIRST FULL RUN. The sizes were chosen by the pilots recorded in
``docs/recall-pilots.md`` (pilots that sized the experiment; they are not the study)
and are not to be tuned toward any verdict. :func:`tiny_recall_config` is a test of
the whole path (seconds).

Why these sizes (the pilots' numbers are in ``docs/recall-pilots.md``):

* Task (:data:`RECALL_TASK`): 16 key-value pairs, 8 queries (distinct keys), 16 keys
  and 16 values, no gap: 48 tokens a sequence, the kv section (the prompt) 32. 16
  pairs with 8 queries keep the layout-aware chance (a guesser that knows the layout
  but not the binding) at 0.083 <= 0.1; fewer pairs raise it (4 pairs: 0.52 with 4
  queries). 16 keys and 16 values rather than 64: with 64 the ``author`` run stayed
  at chance for 4,000 steps, with 16 it learned. The best n-gram (orders 1-4 of the
  run's first 32,768 training sequences) scores 0.070-0.073 on the validation
  answers (uniform over the values: 0.0625).
* Model (:data:`RECALL_MODEL`): 2 layers, d_model 64, 2 heads (dk 32), dff 128,
  A_dff 32, 2 residual units of 2 SwiGLU blocks (Zoology's 2-layer models of width
  64-256).
* Recipe: the author's (AdamW (0.9, 0.95), eps 1e-5, decay 0.1 on every parameter,
  clip by value 1, warm-up from lr 0 over 0.8 % of the steps, cosine to 10 %) at the
  author's own peak lr 1e-3; batch 32. Peak 3e-3 (the issue's pilot) left ``author``
  at chance for 6,000 steps with 16 pairs; 1e-3 passed in all 3 pilot seeds.
* Steps: 6,000 for ``author`` and ``frozen`` (``author`` cleared 0.9 by step 4,000 in
  3 of 3 pilot seeds, in both causal inferences). ``prompt-A`` (the exposure-free run:
  A, hence G, from the kv section, which holds no answer; the loss on every token after
  it, queries and answers) learns more slowly: with the loss on the answers alone it
  stayed at chance for 6,000 steps and reached 0.57 in 12,000; with the loss on every
  token after the prompt 0.64 in 6,000 and 0.67 in 12,000 (a 12,000-step schedule); so
  it trains :data:`PROMPT_A_FACTOR` times the steps (:attr:`RunConfig.step_factors`),
  sized by the two pilot seeds of that length. Its slopes and ``author``'s are each
  fitted over their own run (the ledger says so).
* Runs (:data:`RECALL_RUNS`), each with 3 seeds (:data:`RECALL_SEEDS`): ``author``;
  ``prompt-A``; ``frozen`` (the metric learner and ``W, b, P, a, b_a`` at init: E1 and
  E3's control; at chance in its pilot, so it fails the gate and controls only).
  ``subcritical`` (E4) is left out: ``author`` needed the full peak 1e-3 here, so at
  1e-4 it is not expected to be competent, and E4 is "not measured" on this regime.
  ``no-decay``, ``spread-init``, ``last-only`` are left out to keep the set in its
  time budget.
* Gate (:mod:`pyverify.claims.subject`, ``recall_gate``): the answer accuracy with
  A cached from the prompt (the author's deployed decoding, ``A=kvcache[2]``) at
  least 0.9 and above the best n-gram's, with chance and the n-gram at most 0.1, in
  every seed; the causal accuracy with A recomputed from each prefix is reported
  beside it, the teacher-forced one gives the exposure gap.

``recall-b128`` (:func:`recall_b128_config`), the second version, fixed after pilots
p19-p25 and before its first full run: ``recall``'s task, model, runs, seeds and
recipe, with

* batch 128 (4x): the lever the exposure-free run lacked (seed 2, at chance at batch 32
  for 24,000 steps at width 64 and 12,000 at width 128, left chance within 1,000 steps);
* 3,000 steps for ``author`` and ``frozen`` (``author``'s KVG-cache accuracy peaked near
  3,000 steps at batch 128 and declined after), ``prompt-A`` 4x as before (12,000);
* no weight decay on the embedding and the output layer (:attr:`RunConfig.decay_vocab`):
  in the 12,000-step pilot of seed 2 (0.887) decay had shrunk two value tokens' output
  rows to one direction (cosine 0.98, norms 1.2 against 3.5-5 for the others), and the
  model answered those values at 0.35 and 0.05, every other value at 1.00.

Measurement sizes: probes at S = 32 (the prompt) and 47 (the whole input), 16
probes; 4 pair prompts of 32 tokens continued by 15; 20 fidelity prompts of 32
tokens (the kv section) continued by 15; the validation set of 512 sequences for the
losses and answers; a record every 500 steps.
"""

from __future__ import annotations

from dataclasses import replace

from pyverify.collapse.config import RunConfig, full_config
from pyverify.collapse.recall import RecallTask
from pyverify.trainable.decoder import ModelConfig

__all__ = [
    "B128_BATCH",
    "B128_STEPS",
    "PROMPT_A_FACTOR",
    "RECALL_MODEL",
    "RECALL_RUNS",
    "RECALL_SEEDS",
    "RECALL_STEPS",
    "RECALL_TASK",
    "recall_b128_config",
    "recall_config",
    "tiny_recall_config",
]

RECALL_TASK = RecallTask(
    n_keys=16, n_values=16, n_pairs=16, n_queries=8, gap=0, n_filler=0, val_seed=0,
    n_val=512, ngram_train_seqs=32_768, ngram_max=4,
)  # fmt: skip
"""The task (module docstring)."""
RECALL_MODEL = ModelConfig(
    vocab=RECALL_TASK.vocab, d_model=64, num_heads=2, num_layers=2, dff=128, a_dff=32,
    num_reslayer=2, num_dense=2,
)  # fmt: skip
"""The decoder (module docstring)."""
RECALL_STEPS = 6000
PROMPT_A_FACTOR = 4
RECALL_SEEDS = (0, 1, 2)
RECALL_RUNS = ("author", "prompt-A", "frozen")
B128_BATCH = 128
B128_STEPS = 3000


def _fit(cfg: RunConfig, task: RecallTask) -> RunConfig:
    """``cfg`` on ``task``: its sequence, prompt (the kv section), vocabulary and val set."""
    return replace(cfg, recall=task, seq=task.seq, prompt_len=task.kv_len, n_val=task.n_val,
                   model=replace(cfg.model, vocab=task.vocab))  # fmt: skip


def recall_config() -> RunConfig:
    """The recall regime's settings (module docstring); its seeds set ``seed``."""
    t, S = RECALL_TASK, RECALL_TASK.seq
    sizes = {"steps": RECALL_STEPS, "batch": 32, "measure_every": 500, "n_probe": 16,
             "s_measure": (t.kv_len, S), "n_pairs": 4, "pair_prompt_len": t.kv_len,
             "pair_new": S - t.kv_len, "jac_probes": 2, "n_prompts": 20, "n_new": S - t.kv_len,
             "ngram_max": t.ngram_max, "online_n": 16, "online_len": 12, "online_prefix": 4,
             "run_factors": False, "step_factors": (("prompt-A", PROMPT_A_FACTOR),)}  # fmt: skip
    return _fit(replace(full_config(), model=RECALL_MODEL, **sizes), t).validate()


def recall_b128_config() -> RunConfig:
    """The ``recall-b128`` regime's settings (module docstring); its seeds set ``seed``."""
    return replace(recall_config(), batch=B128_BATCH, steps=B128_STEPS,
                   decay_vocab=False).validate()  # fmt: skip


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
