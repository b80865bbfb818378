"""Loading a ``pldr_model_v510`` state dict: layout checks and equality with the author's model.

The oracle is ``v510_author.PLDRModel``, an independent re-creation of the
author's module tree and forward pass (same state-dict keys and shapes).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_helpers import rel_err
from v510_author import random_author_model

from pyverify.kernels import load_v510
from pyverify.reference.v510 import CheckpointError, load_v510_params
from pyverify.reference.v510 import load_v510 as load_v510_reference

SIZES = {"L": 2, "d": 16, "H": 2, "dff": 24, "vocab": 40, "a_dff": 12, "n_res": 2, "n_dense": 2}
TOKS = torch.tensor(
    [[1, 5, 7, 3, 9, 2, 11, 4, 8, 39, 0, 17], [0, 31, 6, 6, 2, 17, 9, 1, 30, 3, 3, 12]]
)


@pytest.fixture(scope="module")
def author():
    return random_author_model(seed=0, **SIZES)


@pytest.fixture(scope="module")
def state(author):
    return {k: v.clone() for k, v in author.state_dict().items()}


def test_state_dict_has_the_documented_layout(state):
    """The oracle's keys are the ones the loader documents (a sanity check of the oracle)."""
    assert "decoder.dec_layers.1.mha1.reslayerAs.1.denseAs.0.gluw3.weight" in state
    assert state["decoder.dec_layers.0.mha1.plgatt_layer.pwlst"].shape == (2, 8, 8)
    assert state["decoder.dec_layers.0.mha1.layernorm1.weight"].shape == (8,)


def test_sizes_inferred_from_shapes(state):
    _, z = load_v510_params(state)
    assert dict(z) == {
        "num_layers": 2, "d_model": 16, "num_heads": 2, "dk": 8, "dff": 24, "A_dff": 12,
        "num_reslayerA": 2, "num_denseA": 2, "input_vocab_size": 40,
    }  # fmt: skip


def test_loaded_kernels_logits_equal_author_float32(author, state):
    """Acceptance: float32 logits within 1e-5 relative of the author's model (same tokens).

    Both run the same float32 operations up to summation order, so agreement is at
    a few ulps of the largest logit (issue 14 measured 4.9e-7 on the real model)."""
    with torch.no_grad():
        want, _ = author(TOKS)
    model = load_v510(state)
    assert model.dtype == torch.float32
    assert all(lp.heads.shared_learner for lp in model.params.layers)
    got, _ = model.forward(TOKS)
    assert rel_err(got, want) <= 1e-5


def test_loaded_reference_equals_author_float64(author, state):
    """The float64 reference loader against the author's model run in float64: the same
    function, up to the author's RoPE, which builds its angle table in float32 and casts
    x to float32 (kept as is in the re-created author code). Measured: 1e-7 to 5e-7;
    1e-5 leaves a 20x margin and still fails any layout or weight mix-up (errors O(1))."""
    a64 = random_author_model(seed=0, **SIZES).double()
    with torch.no_grad():
        want, _ = a64(TOKS)
    ref = load_v510_reference(state)
    for b in range(2):
        assert rel_err(ref.forward(TOKS[b].numpy()).logits, want[b]) <= 1e-5
    # the float32 kernels loaded as float64 agree with the float64 oracle too
    got, _ = load_v510(state, dtype=torch.float64).forward(TOKS)
    assert rel_err(got, want) <= 1e-5


def test_cached_decoding_equals_author_cached_decoding(author, state):
    """KV-cache (A stored) and KV+G-cache steps equal the author's cached steps."""
    model = load_v510(state)
    prompt, rest = TOKS[:, :6], TOKS[:, 6:9]
    with torch.no_grad():
        _, caches = author(prompt)
        for use_g in (False, True):
            _, cache = model.prefill(prompt)
            ac = [list(c) for c in caches]
            for t in range(rest.shape[1]):
                want, ac = author(rest[:, t : t + 1], ac, use_g=use_g)
                got, cache = model.decode_step(rest[:, t], cache, use_g_cache=use_g)
                assert rel_err(got, want[:, -1]) <= 1e-5


def test_loads_from_file_checkpoint_dict_and_prefix(tmp_path, author, state):
    with torch.no_grad():
        want, _ = author(TOKS)
    f1 = tmp_path / "plain.pt"
    torch.save(state, f1)
    f2 = tmp_path / "ckpt.pth"  # the author's training checkpoint format
    torch.save({"model_state_dict": state, "loss": 1.0, "accuracy": 0.5}, f2)
    f3 = tmp_path / "ddp.pt"
    torch.save({f"module.{k}": v for k, v in state.items()}, f3)
    for f in (f1, f2, f3):
        got, _ = load_v510(str(f)).forward(TOKS)
        assert rel_err(got, want) <= 1e-5


def test_bfloat16_checkpoint_keeps_its_dtype(state):
    sd = {k: v.to(torch.bfloat16) for k, v in state.items()}
    model = load_v510(sd)
    assert model.dtype == torch.bfloat16
    logits, _ = model.forward(TOKS)
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda sd: sd.pop("decoder.dec_layers.1.mha1.plgatt_layer.alst"), "missing keys "
         "decoder.dec_layers.1.mha1.plgatt_layer.alst"),
        (lambda sd: sd.pop("final_layer.bias"), "missing keys final_layer.bias"),
        (lambda sd: sd.__setitem__("decoder.extra.weight", torch.zeros(2)),
         "unexpected keys decoder.extra.weight"),
        (lambda sd: sd.__setitem__("decoder.dec_layers.0.ffn.gluw3.bias", torch.zeros(3)),
         "decoder.dec_layers.0.ffn.gluw3.bias (3,) (expected (16,))"),
        (lambda sd: sd.pop("decoder.embedding.weight"), "not a pldr_model_v510 state dict"),
    ],
)  # fmt: skip
def test_layout_errors_name_the_keys(state, edit, message):
    sd = dict(state)
    edit(sd)
    with pytest.raises(CheckpointError) as err:
        load_v510(sd)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_non_finite_weight_is_named(state):
    sd = dict(state)
    bad = sd["decoder.dec_layers.0.mha1.wq.weight"].clone()
    bad[0, 0] = float("nan")
    sd["decoder.dec_layers.0.mha1.wq.weight"] = bad
    with pytest.raises(CheckpointError, match=r"mha1\.wq\.weight: holds inf or NaN"):
        load_v510(sd)


def test_file_errors_are_one_line(tmp_path):
    with pytest.raises(CheckpointError, match="no such file"):
        load_v510(tmp_path / "absent.pt")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a torch file")
    with pytest.raises(CheckpointError, match="not a readable torch file"):
        load_v510(junk)
    # the same checks and messages as from_reference, before the file is read
    with pytest.raises(TypeError, match=r"^dtype must be one of"):
        load_v510(tmp_path / "absent.pt", dtype=torch.int32)
    with pytest.raises(ValueError, match=r"^device must be a torch device"):
        load_v510(tmp_path / "absent.pt", device="bogus")


def test_ignored_rope_buffers(state):
    sd = dict(state)
    sd["decoder.dec_layers.0.mha1.rotary_embedding.cache"] = torch.zeros(4, 4, 2)
    got, _ = load_v510(sd).forward(TOKS)
    want, _ = load_v510(state).forward(TOKS)
    assert torch.equal(got, want)
    assert np.isfinite(got.numpy()).all()
