"""Cross-check against PyTorch ops written the way the reference model (pldr_model_v510,
torchtune RoPE) computes them: additive -1e9 mask, torch LayerNorm/SiLU/softmax."""

from __future__ import annotations

import numpy as np
import pytest

from pyverify.reference import PLGAParams, apply_rope, plga_forward_full
from pyverify.reference import numpy_head as nh

torch = pytest.importorskip("torch")
F = torch.nn.functional


def t(x):
    return torch.as_tensor(np.asarray(x), dtype=torch.float64)


def torch_head(q, k, v, p: PLGAParams):
    """Steps 1-8 in torch float64, reference style (additive mask)."""
    q, k, v = t(q), t(k), t(v)
    dk = q.shape[-1]
    A = F.layer_norm(q.T @ q, (dk,), t(p.ln0_gamma), t(p.ln0_beta), eps=p.ln_eps)
    for unit in p.reslayers:
        X = A
        for b in unit.dense:
            X = (F.silu(X @ t(b.W1) + t(b.b1)) * (X @ t(b.W2) + t(b.b2))) @ t(b.W3) + t(b.b3)
        A = F.layer_norm(X + A, (dk,), t(unit.ln_gamma), t(unit.ln_beta), eps=p.ln_eps)
    Y = t(p.W) @ A + t(p.b)
    AW = Y * F.silu(Y) + 1e-9
    G = t(p.a) @ torch.pow(AW, t(p.P)) + t(p.b_a)
    E = q @ G @ k.T / torch.sqrt(torch.tensor(float(dk), dtype=torch.float64))
    S = q.shape[0]
    look_ahead = torch.triu(torch.ones(S, S, dtype=torch.float64), diagonal=1)  # 1 = masked
    W = F.softmax(E + look_ahead * -1e9, dim=-1)
    return (W @ v).numpy(), G.numpy(), AW.numpy()


def torchtune_style_rope(x, base=10000.0):
    """(S, dk) rows rotated the torchtune way: pairs (x[2p], x[2p+1]) via a reshape."""
    x = t(x)
    S, dim = x.shape
    theta = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64)[: dim // 2] / dim))
    idx = torch.outer(torch.arange(S, dtype=torch.float64), theta)
    cos, sin = torch.cos(idx), torch.sin(idx)
    xs = x.reshape(S, dim // 2, 2)
    out = torch.stack(
        [xs[..., 0] * cos - xs[..., 1] * sin, xs[..., 1] * cos + xs[..., 0] * sin], dim=-1
    )
    return out.flatten(1).numpy()


@pytest.mark.parametrize("seed", [0, 1])
def test_head_matches_torch_reference_style(seed):
    rng = np.random.default_rng(seed)
    p = PLGAParams.random(dk=8, a_dff=12, num_reslayer=2, num_dense=2, seed=seed)
    q, k, v = rng.normal(size=(3, 10, 8))
    q, k = apply_rope(q), apply_rope(k)
    res = plga_forward_full(q, k, v, p)
    out_t, G_t, AW_t = torch_head(q, k, v, p)
    np.testing.assert_allclose(res.ded.A_LM, AW_t, rtol=1e-13)
    np.testing.assert_allclose(res.ded.G, G_t, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(res.out, out_t, rtol=1e-12, atol=1e-14)


def test_layer_norm_and_silu_match_torch():
    rng = np.random.default_rng(2)
    X, g, b = rng.normal(size=(5, 6)), rng.normal(size=6), rng.normal(size=6)
    want = F.layer_norm(t(X), (6,), t(g), t(b), eps=1e-6).numpy()
    np.testing.assert_allclose(nh.layer_norm_rows(X, g, b, 1e-6), want, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(nh.silu(X * 30), F.silu(t(X * 30)).numpy(), rtol=1e-15)


def test_rope_matches_torchtune_style():
    x = np.random.default_rng(3).normal(size=(12, 8))
    np.testing.assert_allclose(apply_rope(x), torchtune_style_rope(x), rtol=1e-14, atol=1e-15)
