"""The training model against the float64 reference decoder (independent oracle).

The state dict of a briefly trained PLDRDecoder (a ``pldr_model_v510`` state
dict) is read by the reference's own loader
(:func:`pyverify.reference.v510.load_v510_params`: the shared learner
replicated per head, ``nn.Linear`` weights transposed) and both are run in
float64 on real validation text. Tolerance: both compute the
same expression in float64 (unit roundoff 1.1e-16) in a different operation
order; the forward pass chains ~20 stages per layer, LayerNorm of the
dk x dk Gram divides by a row spread that can be ~1e-2 of its entries, and
``A_LM ** P`` multiplies relative errors by ``|P log A_LM|`` (< 30 for
``A_LM >= 1e-9``, |P| <= 1; the author's init draws |P| ~ 0.1). A relative
bound of 1e-9 leaves a factor > 1e3 above
those amplifications, and is still 1e7 below any real modelling error
(a wrong sign, transpose or missing term moves results by O(1e-2) or more).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pyverify.collapse.config import RUNS, small_config
from pyverify.collapse.corpus import load_corpus
from pyverify.collapse.train import train_run
from pyverify.diagnose import order_parameter
from pyverify.measure import as_float64, deductive_stack
from pyverify.measure.order import order_param
from pyverify.reference import Decoder
from pyverify.reference.v510 import load_v510_params
from pyverify.testing.bounds import rel_err
from pyverify.trainable.decoder import DEDUCTIVE


def to_reference(model):
    """The reference parameters of ``model``'s state dict (the reference's v510 loader)."""
    return load_v510_params(model.state_dict())[0]


RTOL = 1e-9


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    cfg = small_config()
    model, history = train_run(cfg, RUNS["author"], load_corpus(), tmp_path_factory.mktemp("ck"))
    return cfg, model, history


def test_logits_and_deductive_tensors_match_reference(trained):
    cfg, model, _ = trained
    m64 = as_float64(model)
    ref = Decoder(to_reference(model))
    toks = load_corpus().windows(3, 24, phase=0.3)
    for row in toks:
        logits, deds, _ = m64(row[None])
        out = ref.forward(row.numpy())
        assert rel_err(logits[0].detach().numpy(), out.logits) < RTOL
        for layer in range(cfg.model.num_layers):
            for h in range(cfg.model.num_heads):
                for t in DEDUCTIVE:
                    mine = deds[layer][t][0, h].detach().numpy()
                    assert rel_err(mine, getattr(out.deductive[layer][h], t)) < RTOL, (layer, h, t)


def test_g_cached_decoding_matches_reference(trained):
    """KV+G-cached decoding in torch equals the reference's decode_step with the prompt's G."""
    _, model, _ = trained
    m64 = as_float64(model)
    ref = Decoder(to_reference(model))
    toks = load_corpus().windows(1, 12, phase=0.7)[0]
    prompt, new = toks[:8], toks[8:]
    logits, deds, kv = m64(prompt[None])
    G = [d["G"] for d in deds]
    out = ref.forward(prompt.numpy())
    cache = out.cache
    cache.G = [g.detach().numpy()[0] for g in G]
    for t in new:
        logits, _, kv = m64(t.view(1, 1), G, kv)
        out = ref.decode_step(int(t), cache)
        cache = out.cache
        assert rel_err(logits[0].detach().numpy(), out.logits) < RTOL


def test_kv_a_cached_decoding_matches_reference(trained):
    """KV-cache decoding with the prompt's stored A equals the reference's (no G-cache)."""
    _, model, _ = trained
    m64 = as_float64(model)
    ref = Decoder(to_reference(model))
    toks = load_corpus().windows(1, 12, phase=0.6)[0]
    prompt, new = toks[:8], toks[8:]
    _, deds, kv = m64(prompt[None])
    A = [d["A"] for d in deds]
    cache = ref.forward(prompt.numpy()).cache
    assert cache.G is None
    for t in new:
        logits, _, kv = m64(t.view(1, 1), None, kv, A)
        out = ref.decode_step(int(t), cache)
        cache = out.cache
        assert rel_err(logits[0].detach().numpy(), out.logits) < RTOL


def test_order_parameter_matches_diagnose(trained):
    """The recorded order parameter equals pyverify.diagnose's on the reference decoder."""
    cfg, model, history = trained
    probes = load_corpus().windows(cfg.n_probe, cfg.seq, phase=0.0)
    X = deductive_stack(as_float64(model), (probes,))
    mine = {t: order_param(X[t]).tolist() for t in DEDUCTIVE}
    assert history[-1]["order_parameter"][str(cfg.seq)] == mine  # recorded = recomputed, bitwise
    theirs = order_parameter(Decoder(to_reference(model)), probes.numpy())
    for t in DEDUCTIVE:
        # an RMS over 4 probes of differences of O(1) tensors: cancellation in
        # T_i - mean costs at most ~1/order-parameter digits; values are O(0.1..1)
        np.testing.assert_allclose(mine[t], theirs.per_head[t], rtol=1e-8)


def test_model_rejects_bad_tokens():
    from pyverify.trainable.decoder import ModelConfig, PLDRDecoder

    with pytest.raises(ValueError, match="tokens"):
        PLDRDecoder(ModelConfig(d_model=8, num_heads=2, num_layers=1))(torch.zeros(3))
    with pytest.raises(ValueError, match="num_heads"):
        ModelConfig(d_model=10, num_heads=4).validate()
