"""The study's model IS the author's ``pldr_model_v510`` model: layout, function, init.

Without ``PYVERIFY_AUTHOR_SRC`` the layout is checked against the documented key list
(:mod:`pyverify.reference.v510`) and the registration order of the author's
constructors (written out below from their code), the function against the suite's
two loaders of v510 state dicts, and the initial weights against the initialisers'
formulas. With a checkout of the author's code, their ``PLDR_Model`` loads the study's
state dict strictly and computes the same logits, and their freshly built model has
the same per-tensor statistics.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from author_code import author_model, author_modules

from pyverify.collapse.config import FULL_MODEL
from pyverify.kernels import load_v510
from pyverify.measure import as_float64, load_model
from pyverify.reference.v510 import check_layout, expected_shapes
from pyverify.reference.v510 import load_v510 as load_reference
from pyverify.trainable.decoder import ModelConfig, PLDRDecoder

SMALL = ModelConfig(vocab=40, d_model=64, num_heads=4, num_layers=2, dff=48, a_dff=24,
                    num_reslayer=2, num_dense=2)  # fmt: skip
"""d_model 64 and dk 16 are squares: the author's float32 sqrt(d_model), sqrt(dk) are exact."""
TOKS = torch.randint(0, 40, (3, 20), generator=torch.Generator().manual_seed(1))


def _layer_keys(i: int, cfg: ModelConfig) -> list[str]:
    """One layer's keys in the order the author's constructors register them:
    plgMultiHeadAttention: wq, wk, wv, plgatt_layer (Wlst, blst, pwlst, alst, balst),
    dense, reslayerAs (denseAs (gluw1..3), layernormA), layernorm1; then
    PLDR_DecoderLayer: ffn (gluw1..3), layernorm1, layernorm2."""
    m = f"decoder.dec_layers.{i}.mha1"
    wb = (".weight", ".bias")
    keys = [f"{m}.{n}{s}" for n in ("wq", "wk", "wv") for s in wb]
    keys += [f"{m}.plgatt_layer.{n}" for n in ("Wlst", "blst", "pwlst", "alst", "balst")]
    keys += [f"{m}.dense{s}" for s in wb]
    for j in range(cfg.num_reslayer):
        r = f"{m}.reslayerAs.{j}"
        for k in range(cfg.num_dense):
            keys += [f"{r}.denseAs.{k}.gluw{g}{s}" for g in (1, 2, 3) for s in wb]
        keys += [f"{r}.layernormA{s}" for s in wb]
    keys += [f"{m}.layernorm1{s}" for s in wb]
    f = f"decoder.dec_layers.{i}"
    keys += [f"{f}.ffn.gluw{g}{s}" for g in (1, 2, 3) for s in wb]
    return keys + [f"{f}.layernorm{n}{s}" for n in (1, 2) for s in wb]


def test_state_dict_has_the_authors_keys_shapes_and_order():
    sd = PLDRDecoder(SMALL, seed=0).state_dict()
    z = check_layout(sd)  # every key and shape of the documented layout, nothing else
    assert set(sd) == set(expected_shapes(z))
    want = ["decoder.embedding.weight"]
    for i in range(SMALL.num_layers):
        want += _layer_keys(i, SMALL)
    want += ["decoder.layernorm1.weight", "decoder.layernorm1.bias"]
    assert list(sd) == [*want, "final_layer.weight", "final_layer.bias"]
    assert [n for n, _ in PLDRDecoder(SMALL).named_parameters()] == list(sd)


def test_the_suites_v510_loaders_give_the_same_logits_in_float64():
    """``pyverify.kernels.load_v510`` and the reference loader read the study's state dict;
    all compute the same float64 function. Measured: <= 1e-14 relative (summation order);
    1e-11 leaves a 1e3 margin and is 1e9 below a layout error (a transposed or swapped
    weight changes logits by O(1))."""
    model = PLDRDecoder(SMALL, seed=3)
    mine = as_float64(model)(TOKS)[0].detach()
    kern, _ = load_v510(model.state_dict(), dtype=torch.float64).forward(TOKS)
    assert float((kern - mine).abs().max() / mine.abs().max()) <= 1e-11
    ref = load_reference(model.state_dict())
    for b in range(TOKS.shape[0]):
        got = torch.as_tensor(ref.forward(TOKS[b].numpy()).logits)
        assert float((got - mine[b]).abs().max() / mine[b].abs().max()) <= 1e-11
    # measure.load_model reads it back into the same class: the same numbers, bitwise
    assert torch.equal(load_model(model.state_dict())(TOKS)[0], mine)


def _rope64(mod):
    """Their RoPE's formula (torchtune: adjacent pairs, theta_p = base^(-2p/dk)) in float64."""

    class Rope64(torch.nn.Module):
        def forward(self, x, *, input_pos=None):
            dk = x.shape[-1]
            theta = 1.0 / (10000.0 ** (torch.arange(0, dk, 2, dtype=torch.float64) / dk))
            pos = torch.arange(x.shape[1], dtype=torch.float64)
            ang = pos[:, None] * theta[None]
            c, s = torch.cos(ang)[None, :, None], torch.sin(ang)[None, :, None]
            x0, x1 = x[..., 0::2], x[..., 1::2]
            return torch.stack((x0 * c - x1 * s, x1 * c + x0 * s), -1).flatten(3)

    for layer in mod.decoder.dec_layers:
        layer.mha1.rotary_embedding = Rope64()


def test_the_authors_model_loads_the_state_dict_and_computes_the_same_logits():
    """Their ``PLDR_Model`` loads the study's state dict with ``strict=True`` (their RoPE
    buffers are not persistent) and, run in float64, gives the study's logits: 1e-11 with
    their RoPE's formula evaluated in float64 (measured 4e-15; the sizes make their float32
    sqrt(d_model) and sqrt(dk) exact), and 1e-5 with their own RoPE module, which builds
    its table and rotates in float32 (measured 1.3e-6, float32's 6e-8 carried through)."""
    model_mod, _ = author_modules()
    ours = PLDRDecoder(SMALL, seed=3)
    torch.manual_seed(0)
    theirs = author_model(model_mod, SMALL)
    assert list(theirs.state_dict()) == list(ours.state_dict())
    theirs.load_state_dict(ours.state_dict(), strict=True)
    theirs = theirs.double().eval()
    mask = 1 - torch.tril(torch.ones(TOKS.shape[1], TOKS.shape[1], dtype=torch.float64))
    want = as_float64(ours)(TOKS)[0].detach()
    with torch.no_grad():
        got = theirs([TOKS, mask])[0]
        assert float((got - want).abs().max() / want.abs().max()) <= 1e-5
        _rope64(theirs)
        got = theirs([TOKS, mask])[0]
    assert float((got - want).abs().max() / want.abs().max()) <= 1e-11


def _law(name: str, cfg: ModelConfig) -> tuple[str, float]:
    """``(kind, std)`` of a tensor's initial law by the author's initialisers (module doc of
    :mod:`pyverify.trainable.decoder`): kind 'zeros', 'ones', 'normal' or 'uniform'."""
    d, dk, H = cfg.d_model, cfg.dk, cfg.num_heads
    if name.endswith(("blst", "balst")) or (name.endswith(".bias") and ".wv." not in name):
        return "zeros", 0.0
    if "layernorm" in name:
        return ("ones", 0.0) if name.endswith("weight") else ("zeros", 0.0)
    if name.endswith(("Wlst", "pwlst", "alst")):
        return "normal", math.sqrt(2.0 / (dk * dk + H * dk))  # xavier_normal_, 3-D fans
    if name == "decoder.embedding.weight":
        return "normal", 1.0
    if ".wv." in name:  # torch's nn.Linear default: U(+-1/sqrt(fan_in)) for weight and bias
        return "uniform", 1.0 / math.sqrt(3 * d)
    shape = dict(_shapes(cfg))[name]
    return "uniform", math.sqrt(2.0 / (shape[0] + shape[1]))  # xavier_uniform_


def _shapes(cfg: ModelConfig):
    return [(n, tuple(p.shape)) for n, p in PLDRDecoder(cfg, init=False).named_parameters()]


def _check_sample(name: str, w: torch.Tensor, kind: str, std: float) -> None:
    """Sample statistics of ``w`` against its law. For n iid draws the sample std is off by
    a relative sqrt((kurtosis - 1) / (4 n)) standard error (normal 1/sqrt(2n), uniform
    sqrt(0.2/n)) and the mean by std/sqrt(n); 5 standard errors (a 6e-7 chance each)."""
    w = w.detach().double().flatten()
    if kind == "zeros":
        assert torch.all(w == 0), name
        return
    if kind == "ones":
        assert torch.all(w == 1), name
        return
    n = w.numel()
    assert abs(float(w.std()) / std - 1) <= 5 / math.sqrt(2 * n), (name, float(w.std()), std)
    assert abs(float(w.mean())) <= 5 * std / math.sqrt(n), name
    if kind == "uniform":
        assert float(w.abs().max()) <= std * math.sqrt(3) * (1 + 1e-6), name


def test_initial_weights_follow_the_authors_initialisers():
    model = PLDRDecoder(FULL_MODEL, seed=0)
    for name, p in model.named_parameters():
        _check_sample(name, p, *_law(name, FULL_MODEL))
    spread = PLDRDecoder(FULL_MODEL, seed=0, p_init="spread")
    P = spread.layers[0].mha1.P.detach()
    assert 0.5 <= float(P.min()) and float(P.max()) <= 1.5
    # deterministic: the same seed, the same weights; torch's global RNG untouched
    state = torch.random.get_rng_state()
    again = PLDRDecoder(FULL_MODEL, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)
    for (_, a), (_, b) in zip(model.named_parameters(), again.named_parameters(), strict=True):
        assert torch.equal(a, b)


def test_initial_statistics_equal_the_authors_freshly_built_model():
    """Their constructors' draws (their global RNG, seeded) and ours (a private generator)
    are different samples of the same laws: per tensor the same zeros and ones, and stds
    within 5 standard errors of each other (the difference of two sample stds has
    sqrt(2) x the error of one). The wv tensors tell their default init (std 1/sqrt(3 d))
    from xavier_uniform's (sqrt(2 / (2 d))) by a factor 1.7, far outside that band."""
    model_mod, _ = author_modules()
    torch.manual_seed(1234)
    theirs = dict(author_model(model_mod, FULL_MODEL).named_parameters())
    for name, p in PLDRDecoder(FULL_MODEL, seed=0).named_parameters():
        t = theirs[name].detach().double().flatten()
        kind, std = _law(name, FULL_MODEL)
        _check_sample(name, t, kind, std)  # their draws follow the laws read off their code
        if kind in ("normal", "uniform"):
            band = 5 * math.sqrt(2) / math.sqrt(2 * t.numel())
            assert abs(float(p.detach().double().std()) / float(t.std()) - 1) <= band, name


@pytest.mark.parametrize("p_init", ["xavier", "spread"])
def test_spread_init_changes_p_alone(p_init):
    a = PLDRDecoder(SMALL, seed=5)
    b = PLDRDecoder(SMALL, seed=5, p_init=p_init)
    for (n, x), (_, y) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert torch.equal(x, y) == (p_init == "xavier" or not n.endswith("pwlst")), n
    assert np.isfinite(as_float64(b)(TOKS)[0].detach().numpy()).all()
