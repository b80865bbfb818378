"""Diagnostics of G-caches and of a live model."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pyverify import diagnose as dg
from pyverify.reference import Decoder, DecoderParams, load_g_lm


def _commutant(dk: int, rng: np.random.Generator) -> np.ndarray:
    """Block diagonal with 2 x 2 blocks x I + y J: commutes with every RoPE rotation."""
    G = np.zeros((dk, dk))
    for p in range(dk // 2):
        x, y = rng.normal(size=2)
        G[2 * p : 2 * p + 2, 2 * p : 2 * p + 2] = [[x, -y], [y, x]]
    return G


def test_identity_cache():
    d = dg.diagnose_g_cache(np.broadcast_to(np.eye(8), (2, 3, 8, 8)))
    assert np.all(d.commutant_residual == 0)
    assert np.all(d.identity_distance == 0) and np.all(d.scaled_identity_distance == 0)
    assert d.absorbable.all()
    assert np.all(d.rank == 8) and np.allclose(d.singular_values, 1)
    assert not d.positive.any() and d.nonnegative.all()  # off-diagonal zeros: no Perron
    assert np.all(np.isnan(d.perron_root))
    s = d.summary()
    assert s["is_identity"] and s["absorbable"] and s["total_heads"] == 6


def test_hand_built_commutant_is_absorbable():
    rng = np.random.default_rng(0)
    g = np.stack([[_commutant(16, rng) for _ in range(2)] for _ in range(2)])
    d = dg.diagnose_g_cache(g)
    assert d.commutant_residual.max() < 1e-13
    assert d.absorbable.all()
    assert d.identity_distance.min() > 0.1  # not the identity, still absorbable
    # a generic matrix is far from the commutant
    d2 = dg.diagnose_g_cache(rng.normal(size=(1, 2, 16, 16)))
    assert d2.commutant_residual.min() > 0.5 and not d2.absorbable.any()
    # a small perturbation off the commutant is detected
    g[0, 0, 0, 5] += 1e-3
    assert not dg.diagnose_g_cache(g).absorbable[0, 0]


def test_rank_and_singular_values_of_known_matrix():
    rng = np.random.default_rng(1)
    U, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    V, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    s = np.array([5.0, 3.0, 1.0, 1e-3, 0, 0, 0, 0])
    G = (U * s) @ V.T
    d = dg.diagnose_g_cache(G[None, None])
    np.testing.assert_allclose(d.singular_values[0, 0, :4], s[:4], rtol=1e-10)
    assert np.all(d.singular_values[0, 0, 4:] < 1e-14)
    assert d.rank[0, 0] == 4
    assert dg.diagnose_g_cache(G[None, None], rank_rtol=1e-2).rank[0, 0] == 3
    assert d.condition[0, 0] > 1e14
    np.testing.assert_allclose(d.stable_rank[0, 0], np.sum(s**2) / 25)


def test_perron_structure_of_positive_matrix():
    dk = 6
    G = np.ones((dk, dk)) + np.eye(dk)  # eigenvalues dk + 1 (vector of ones) and 1
    d = dg.diagnose_g_cache(G[None, None])
    assert d.positive[0, 0] and d.perron_vector_positive[0, 0]
    np.testing.assert_allclose(d.perron_root[0, 0], dk + 1)
    np.testing.assert_allclose(d.perron_gap[0, 0], 1 / (dk + 1))
    assert d.dominant_real_positive[0, 0]


def test_trained_g_lm_far_from_commutant():
    g = load_g_lm("trained")
    d = dg.diagnose_g_cache(g)
    assert np.mean(d.commutant_residual > 0.5) >= 0.8  # plga-spec: most heads above 0.5
    assert not d.absorbable.any()
    assert d.identity_distance.min() > 1
    assert d.summary()["absorbable"] is False


def test_run_diagnose_names_paths_and_errors(tmp_path):
    d = dg.run_diagnose("identity")
    assert d["provenance"]["file"] == "identity_G_LM.npz"
    assert len(d["provenance"]["sha256"]) == 64
    assert d["summary"]["is_identity"]
    text = dg.format_diagnostics(d)
    assert d["provenance"]["sha256"] in text and "absorbable" in text
    # a user's file
    path = tmp_path / "mine.npz"
    np.savez(path, G_LM=np.broadcast_to(np.eye(4), (1, 2, 4, 4)).astype(np.float32))
    lines = []
    d2 = dg.run_diagnose(str(path), progress=lines.append)
    assert d2["shape"] == [1, 2, 4, 4] and d2["summary"]["absorbable"] and lines
    with pytest.raises(FileNotFoundError):
        dg.run_diagnose(str(tmp_path / "absent.npz"))
    with pytest.raises(ValueError, match="shape"):
        dg.diagnose_g_cache(np.ones((2, 3, 3)))
    with pytest.raises(ValueError, match="even"):
        dg.diagnose_g_cache(np.ones((1, 1, 3, 3)))


def _constant_g_model() -> Decoder:
    """A live model whose G ignores the input: W = 0 makes A_LM = iSwiGLU(b) + eps."""
    p = DecoderParams.random(seed=3)
    layers = []
    for layer in p.layers:
        heads = [dataclasses.replace(h, W=np.zeros_like(h.W)) for h in layer.mha.heads]
        layers.append(dataclasses.replace(layer, mha=dataclasses.replace(layer.mha, heads=heads)))
    return Decoder(dataclasses.replace(p, layers=layers))


def _inputs(n: int = 5, s: int = 7, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 32, size=s) for _ in range(n)]


def test_order_parameter_zero_for_constant_g_model():
    model = _constant_g_model()
    op = dg.order_parameter(model, _inputs())
    # 0 up to the rounding of the mean of identical values
    assert op.overall["G"] <= 1e-14 and np.all(op.per_head["G"] <= 1e-14)
    assert op.overall["A_LM"] <= 1e-14 and op.overall["A_P"] <= 1e-14
    assert op.overall["A"] > 1e-3  # the metric learner itself still moves
    inv = dg.invariance_error(model, _inputs())
    assert inv.eps_G_max <= 1e-14
    assert max(inv.logits_gap) <= 1e-12  # cache_equivalence: invariant G, equal logits
    # a G-cached run has a constant G by construction
    live = Decoder(DecoderParams.random(seed=4))
    G = np.stack([np.stack([np.eye(8)] * 2)] * 2)
    op_c = dg.order_parameter(live, _inputs(), G_cache=G)
    assert set(op_c.per_head) == {"G"} and op_c.overall["G"] <= 1e-14


def test_live_model_fluctuates():
    model = Decoder(DecoderParams.random(seed=5))
    op = dg.order_parameter(model, np.stack(_inputs()))
    assert all(op.overall[t] > 1e-3 for t in dg.DEDUCTIVE_TENSORS)
    assert op.per_head["G"].shape == (2, 2)
    inv = dg.invariance_error(model, _inputs())
    assert inv.eps_G_max > 1e-3 and inv.logits_gap[0] <= 1e-12  # input 0 is the cache's own
    d = dg.run_model_diagnose(seed=1, n_inputs=3, seq_len=5)
    assert "order parameter" in dg.format_diagnostics(d)


def test_cli(capsys, tmp_path):
    import json

    from pyverify.cli import build_parser

    parser = build_parser()
    out = tmp_path / "d.json"
    args = parser.parse_args(["diagnose", "identity", "--no-progress", "--json", str(out)])
    assert args.func(args) == 0
    assert "identity_G_LM.npz" in capsys.readouterr().out
    assert json.loads(out.read_text())["summary"]["is_identity"] is True


def test_figure_helpers_match_the_spec_written_out():
    # Oracle: the definitions evaluated head by head with plain loops (math.fsum-free, so
    # agreement is to a few ulps of float64, not bitwise): rtol 1e-12 leaves a 1e3 margin.
    from pyverify.diagnose.model import eps_g, fluctuation, relative_gap

    rng = np.random.default_rng(3)
    X = rng.normal(size=(5, 2, 3, 4, 4))
    X[:, 1, 2] = np.arange(16.0).reshape(4, 4) - 7  # constant head, exact mean: order param. 0
    per, overall = fluctuation(X)
    for layer, head in np.ndindex(2, 3):
        m = X[:, layer, head].mean(axis=0)
        dev = np.mean([np.linalg.norm(x - m) ** 2 for x in X[:, layer, head]])
        assert per[layer, head] == pytest.approx(np.sqrt(dev) / np.linalg.norm(m), rel=1e-12)
    assert per[1, 2] == 0.0
    m = X.mean(axis=0)
    dev2 = np.mean(np.sum((X - m) ** 2, axis=(-2, -1)))
    assert overall == pytest.approx(np.sqrt(dev2 / np.mean(np.sum(m**2, axis=(-2, -1)))))
    eps = eps_g(X, X[0])
    for layer, head in np.ndindex(2, 3):
        g0 = X[0, layer, head]
        want = max(np.linalg.norm(x - g0) for x in X[:, layer, head]) / np.linalg.norm(g0)
        assert eps[layer, head] == pytest.approx(want, rel=1e-12)
    assert eps[1, 2] == 0.0 and np.all(eps_g(X[:1], X[0]) == 0)
    assert relative_gap([1.0, -3.0], [1.0, -2.0]) == 0.5
    assert relative_gap([0.5, 0.0], [0.0, 0.0]) == 0.5  # all-zero reference: absolute gap
