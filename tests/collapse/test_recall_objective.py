"""The recall task's objectives and its three inference modes, on a tiny model."""

from __future__ import annotations

import math

import pytest
import torch

from pyverify.collapse.config import RunConfig, RunSpec
from pyverify.collapse.recall import RecallTask
from pyverify.collapse.train import objective_loss, train_run
from pyverify.errors import InputValueError
from pyverify.measure import as_float64
from pyverify.measure.answers import answer_logits, answer_scores, prompt_cache_logits
from pyverify.measure.loss import causal_val_loss
from pyverify.trainable.decoder import ModelConfig, PLDRDecoder

TASK = RecallTask(n_keys=8, n_values=8, n_pairs=4, n_queries=3, gap=2, n_filler=2, n_val=32)


def tiny_model(task: RecallTask = TASK, seed: int = 0) -> PLDRDecoder:
    m = ModelConfig(
        vocab=task.vocab, d_model=16, num_heads=2, num_layers=2, dff=32, a_dff=8,
        num_reslayer=1, num_dense=1,
    )  # fmt: skip
    return PLDRDecoder(m, seed=seed)


# -- the exposure-free objective -------------------------------------------------------
def _perturb_answers(t: RecallTask, x: torch.Tensor) -> torch.Tensor:
    """``x`` with every answer among the inputs replaced by another value."""
    x2 = x.clone()
    cols = [int(p) + 1 for p in t.answer_positions() if int(p) + 1 < x.shape[1]]
    x2[:, cols] = t.n_keys + (x2[:, cols] - t.n_keys + 1) % t.n_values
    assert not torch.equal(x, x2)
    return x2


def _capture_A(model, objective, x, y, t):
    seen = []
    hook = model.register_forward_hook(lambda m, a, out: seen.append([d["A"] for d in out[1]]))
    loss, _ = objective_loss(model, x, y, objective, t.kv_len, t.answer_mask())
    hook.remove()
    return seen[0], loss


def test_exposure_free_objective_never_lets_A_see_an_answer():
    t, model = TASK, tiny_model()
    x, y = t.batch(0, 0, 8, t.seq)
    x2 = _perturb_answers(t, x)
    A, loss = _capture_A(model, "prompt-A-answers", x, y, t)
    A2, _ = _capture_A(model, "prompt-A-answers", x2, y, t)
    assert all(torch.equal(a, b) for a, b in zip(A, A2, strict=True))
    # the author's objective forms A from the whole window: the answers move it
    Aa, _ = _capture_A(model, "all", x, y, t)
    Ab, _ = _capture_A(model, "all", x2, y, t)
    assert not all(torch.equal(a, b) for a, b in zip(Aa, Ab, strict=True))
    # the loss is the mean over the answer positions only, A from the kv section
    logits, _, _ = model(x, a_prefix=t.kv_len)
    m = t.answer_mask()
    ref = torch.nn.functional.cross_entropy(logits[:, m].flatten(0, 1), y[:, m].flatten())
    assert float(loss.detach()) == pytest.approx(float(ref.detach()), rel=1e-6)


def test_exposure_free_objective_needs_a_mask_after_the_prompt():
    t, model = TASK, tiny_model()
    x, y = t.batch(0, 0, 2, t.seq)
    with pytest.raises(InputValueError, match="score mask"):
        objective_loss(model, x, y, "prompt-A-answers", t.kv_len)
    bad = torch.zeros(t.seq, dtype=torch.bool)
    bad[0] = True
    with pytest.raises(InputValueError, match="in the prompt"):
        objective_loss(model, x, y, "prompt-A-answers", t.kv_len, bad)


# -- the three inference modes -----------------------------------------------------------
def test_prompt_cache_equals_a_from_the_prompt():
    t, m64 = TASK, as_float64(tiny_model())
    x = t.validation()[:, :-1]
    cached = prompt_cache_logits(m64, x, t.kv_len)
    one_pass, _, _ = m64(x, a_prefix=t.kv_len)
    torch.testing.assert_close(cached, one_pass, rtol=1e-12, atol=1e-12)
    pos = t.answer_positions().tolist()
    torch.testing.assert_close(
        answer_logits(m64, x, pos, "prompt-cache", t.kv_len), one_pass[:, pos]
    )
    # the answers are never in the cached A: perturbing them moves no earlier prediction
    x2 = _perturb_answers(t, x)
    c2 = prompt_cache_logits(m64, x2, t.kv_len)
    first_changed = t.kv_len + t.gap + 1  # the input position of the first answer
    torch.testing.assert_close(c2[:, :first_changed], cached[:, :first_changed])


def test_causal_equals_each_prefix_run_alone():
    t, m64 = TASK, as_float64(tiny_model(seed=1))
    x = t.validation()[:5, :-1]
    pos = t.answer_positions().tolist()
    got = answer_logits(m64, x, pos, "causal", t.kv_len)
    for i in range(x.shape[0]):
        for j, p in enumerate(pos):
            alone, _, _ = m64(x[i : i + 1, : p + 1])
            torch.testing.assert_close(got[i, j], alone[0, -1], rtol=1e-12, atol=1e-12)
    # at every position it is the causal validation loss of pyverify.measure.loss
    every = answer_scores(m64, t.validation(), range(t.seq), t.kv_len, modes=("causal",))
    assert every["causal"]["loss"] == pytest.approx(causal_val_loss(m64, (t.validation(),)))


def test_answer_scores_modes_and_gap():
    t, m64 = TASK, as_float64(tiny_model())
    pos = t.answer_positions().tolist()
    sc = answer_scores(m64, t.validation(), pos, t.kv_len)
    x, y = t.validation()[:, :-1], t.validation()[:, 1:]
    tf = m64(x)[0][:, pos]
    assert sc["teacher-forced"]["accuracy"] == pytest.approx(
        float((tf.argmax(-1) == y[:, pos]).double().mean())
    )
    for mode in ("causal", "prompt-cache"):
        gap = sc["teacher-forced"]["accuracy"] - sc[mode]["accuracy"]
        assert sc["exposure_gap"][mode] == pytest.approx(gap)
        assert 0.0 <= sc[mode]["accuracy"] <= 1.0 and sc[mode]["loss"] > 0
    with pytest.raises(InputValueError, match="mode must be"):
        answer_logits(m64, x, pos, "greedy", t.kv_len)


# -- the study's trainer takes the task ------------------------------------------------
@pytest.mark.parametrize("objective", ["all", "prompt-A-answers"])
def test_train_run_takes_the_task(tmp_path, objective):
    t = TASK
    model = tiny_model()
    cfg = RunConfig(
        model=model.cfg, steps=4, batch=4, seq=t.seq, measure_every=4, n_probe=2, n_val=4,
        s_measure=(t.kv_len, t.seq), n_pairs=1, pair_prompt_len=t.seq - 1,
        pair_new=1, jac_probes=1, n_prompts=2, prompt_len=t.kv_len, n_new=2,
        online_n=2, online_len=12, online_prefix=4, warmup_start=0,
    ).validate()  # fmt: skip
    run = RunSpec("author", peak_lr=3e-3, objective=objective)
    _, hist = train_run(cfg, run, t, tmp_path)  # type: ignore[arg-type]
    assert [h["step"] for h in hist] == [0, 4] and math.isfinite(hist[-1]["train_loss"])
