"""``pyverify collapse --check-recipe``: the study's trainer against the author's.

With a checkout of the author's code (``PYVERIFY_AUTHOR_SRC``; torchtune importable)
the check passes where our recipe is theirs, and fails, in the rows that should, for
each deliberate mismatch: clipping by norm, a wrong AdamW eps, the study's warm-up
offset, a wrong initialiser. Without a checkout it is a one-line error (exit 2).
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
import torch
from torch import nn

import pyverify.collapse.recipe as rc
from pyverify.cli import main
from pyverify.collapse.author import ENV
from pyverify.collapse.config import PAPER_MODEL, full_config, small_config
from pyverify.errors import MissingInputError

needs_author = pytest.mark.skipif(
    not os.environ.get(ENV, "").strip(),
    reason=f"{ENV} is not set: no checkout of the author's code to compare with",
)
AUTHOR_RECIPE = replace(small_config(), steps=100, warmup_start=0, batch=4, seq=16)
"""A tiny run on the author's schedule: 300 steps of the author run, 2 of warm-up, so the
20 steps cover the warm-up and the cosine."""


def test_without_a_checkout_the_check_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(MissingInputError, match=f"set {ENV}"):
        rc.check_recipe(AUTHOR_RECIPE, preset="t")
    assert main(["collapse", "--small", "--check-recipe"]) == 2
    err = capsys.readouterr().err
    assert f"set {ENV}" in err and "nothing was checked" in err and err.count("\n") == 1
    monkeypatch.setenv(ENV, "/nonexistent")
    assert main(["collapse", "--small", "--check-recipe"]) == 2
    assert "is not a checkout" in capsys.readouterr().err


def test_the_check_shape_keeps_float32_constants_exact():
    """sqrt(d_model) and sqrt(dk) of the author's code are float32: the check's sizes are
    squares (dk an even square, 4 heads), the recipe's shape family otherwise."""
    for m, dk in ((full_config().model, 16), (PAPER_MODEL, 64), (small_config().model, 4)):
        s = rc.check_shape(m, 256)
        assert s.dk == dk and s.d_model == 4 * dk and s.vocab == 256
        assert int(s.d_model**0.5) ** 2 == s.d_model and int(s.dk**0.5) ** 2 == s.dk
        assert s.num_layers <= 2 and s.num_reslayer <= 2 and s.num_dense == m.num_dense


def _failed(res) -> set[str]:
    return {r.section for r in res.rows if r.ok is False}


@needs_author
def test_the_trainer_is_the_authors_where_the_recipe_is():
    res = rc.check_recipe(AUTHOR_RECIPE, preset="t")
    text = rc.format_recipe(res)
    assert res.verdict == "PASS", text
    assert res.clipped > 0  # the premise: clipping by value was exercised
    sections = {r.section for r in res.rows}
    assert {"settings", "initial weights", "model", "step 0", "schedule", "steps",
            "gradients", "weights"} <= sections  # fmt: skip
    n_params = len(list(rc.PLDRDecoder(res.shape).parameters()))
    assert sum(r.section == "gradients" for r in res.rows) == n_params
    assert sum(r.section == "weights" for r in res.rows) == n_params
    loss = next(r for r in res.rows if r.name == "loss")
    assert loss.value <= rc.LOSS_TOL and text.splitlines()[-1] == "PASS"


def _clip_by_norm(model: nn.Module, opt, loss, cfg, lr: float) -> None:
    for group in opt.param_groups:
        group["lr"] = lr
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip_value)
    opt.step()


@needs_author
@pytest.mark.parametrize(
    ("mismatch", "fails"),
    [
        ("clip by norm", {"weights", "steps"}),
        ("eps 1e-8", {"weights", "steps"}),
        ("the study's warm-up", {"schedule", "weights", "steps"}),
    ],
)
def test_a_deliberate_mismatch_fails(mismatch, fails):
    cfg, upd = AUTHOR_RECIPE, rc.update
    if mismatch == "clip by norm":
        upd = _clip_by_norm
    elif mismatch == "eps 1e-8":
        cfg = replace(cfg, adam_eps=1e-8)
    else:
        cfg = replace(cfg, warmup_start=1)
    res = rc.check_recipe(cfg, preset="t", update_fn=upd)
    assert res.verdict == "FAIL"
    assert _failed(res) == fails, rc.format_recipe(res)  # the loss and gradients still agree


@needs_author
def test_a_wrong_initialiser_fails(monkeypatch):
    """wv drawn by xavier_uniform_ (std sqrt(1/d)) instead of nn.Linear's default (std
    sqrt(1/(3d))): the initial-weight statistics differ by sqrt(3)."""
    import pyverify.trainable.decoder as model_mod

    real = model_mod.init_weights

    def wrong(model, seed, p_init="xavier"):
        real(model, seed, p_init)
        with torch.no_grad():
            for layer in model.layers:
                nn.init.xavier_uniform_(layer.mha1.wv.weight)

    monkeypatch.setattr(model_mod, "init_weights", wrong)
    res = rc.check_recipe(replace(AUTHOR_RECIPE, model=full_config().model), preset="t", steps=2)
    bad = [r.name for r in res.rows if r.ok is False]
    assert bad == ["decoder.dec_layers.*.mha1.wv.weight"], rc.format_recipe(res)
