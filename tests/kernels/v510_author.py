"""An independent re-creation of the author's ``pldr_model_v510.PLDR_Model`` (test oracle).

Written for the tests from the public description of the author's code
(``burcgokden/PLDR-LLM-with-KVG-cache``, ``src/pldr_model_v510``): the same module
tree (hence the same ``state_dict`` keys and shapes) and the same forward
computation, in plain ``torch.nn``: ``nn.Linear`` layers (weights ``(out, in)``),
the shared metric learner applied to the (B, H, dk, dk) stack, per-head
``W, b, P, a, b_a`` tiled per batch element, explicit S x S scores with
``mask * -1e9``, RoPE on adjacent pairs with angles computed in float32
(torchtune's ``RotaryPositionalEmbeddings``). It shares no code with pyverify.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812


def rope_author(x: torch.Tensor, start: int = 0, base: float = 10000.0) -> torch.Tensor:
    """RoPE on (B, S, H, dk), adjacent pairs, float32 angle table (torchtune's formula)."""
    _, S, _, dk = x.shape
    theta = 1.0 / (base ** (torch.arange(0, dk, 2)[: dk // 2].float() / dk))
    idx = torch.arange(start, start + S, dtype=theta.dtype)
    ang = torch.einsum("i,j->ij", idx, theta).float()
    cos, sin = torch.cos(ang)[None, :, None, :], torch.sin(ang)[None, :, None, :]
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    x0, x1 = xs[..., 0], xs[..., 1]
    out = torch.stack([x0 * cos - x1 * sin, x1 * cos + x0 * sin], -1)
    return out.flatten(3).type_as(x)


class GLUVariant(nn.Module):
    def __init__(self, d_in: int, hidden: int, d_out: int) -> None:
        super().__init__()
        self.gluw1 = nn.Linear(d_in, hidden)
        self.gluw2 = nn.Linear(d_in, hidden)
        self.gluw3 = nn.Linear(hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gluw3(F.silu(self.gluw1(x)) * self.gluw2(x))


class ResLayerA(nn.Module):
    def __init__(self, dk: int, a_dff: int, num_dense: int) -> None:
        super().__init__()
        self.denseAs = nn.ModuleList([GLUVariant(dk, a_dff, dk) for _ in range(num_dense)])
        self.layernormA = nn.LayerNorm(dk, eps=1e-6)

    def forward(self, A: torch.Tensor) -> torch.Tensor:
        y = A
        for blk in self.denseAs:
            y = blk(y)
        return self.layernormA(y + A)


class PlgaLayer(nn.Module):
    def __init__(self, dk: int, H: int) -> None:
        super().__init__()
        self.dk = dk
        for n in ("Wlst", "blst", "pwlst", "alst", "balst"):
            setattr(self, n, nn.Parameter(torch.zeros(H, dk, dk)))

    def forward(self, q, k, v, A, mask, G=None):
        B = q.shape[0]
        if G is None:
            We = torch.tile(self.Wlst[None], [B, 1, 1, 1])
            ae = torch.tile(self.alst[None], [B, 1, 1, 1])
            z = torch.matmul(We, A) + self.blst
            AW = z * F.silu(z) + 1e-9
            Ap = torch.pow(AW, torch.tile(self.pwlst[None], [B, 1, 1, 1]))
            G = torch.matmul(ae, Ap) + self.balst
        E = torch.matmul(torch.matmul(q, G), k.transpose(-1, -2)) / math.sqrt(self.dk)
        E = E + mask * -1e9 if mask is not None else E
        return torch.matmul(F.softmax(E, dim=-1), v), G


class MHA(nn.Module):
    def __init__(self, d: int, H: int, a_dff: int, n_res: int, n_dense: int) -> None:
        super().__init__()
        self.H, self.dk = H, d // H
        self.wq, self.wk, self.wv = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.plgatt_layer = PlgaLayer(self.dk, H)
        self.dense = nn.Linear(d, d)
        self.reslayerAs = nn.ModuleList([ResLayerA(self.dk, a_dff, n_dense) for _ in range(n_res)])
        self.layernorm1 = nn.LayerNorm(self.dk, eps=1e-6)

    def forward(self, x, mask, cache=None, use_g=False):
        B, S, d = x.shape
        q, k, v = (f(x).view(B, S, self.H, self.dk) for f in (self.wq, self.wk, self.wv))
        start = 0 if cache is None else cache[0].shape[1]
        q, k = rope_author(q, start), rope_author(k, start)
        q = q.permute(0, 2, 1, 3)
        if cache is None:
            A = self.layernorm1(torch.matmul(q.transpose(-1, -2), q))
            for r in self.reslayerAs:
                A = r(A)
            G = None
        else:
            k = torch.cat([cache[0], k], 1)
            v = torch.cat([cache[1], v], 1)
            A, G = cache[2], (cache[3] if use_g else None)
        out, G = self.plgatt_layer(q, k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3), A, mask, G=G)
        out = out.permute(0, 2, 1, 3).reshape(B, S, d)
        return self.dense(out), [k, v, A, G]


class DecLayer(nn.Module):
    def __init__(self, d, H, dff, a_dff, n_res, n_dense) -> None:
        super().__init__()
        self.mha1 = MHA(d, H, a_dff, n_res, n_dense)
        self.ffn = GLUVariant(d, dff, d)
        self.layernorm1 = nn.LayerNorm(d, eps=1e-6)
        self.layernorm2 = nn.LayerNorm(d, eps=1e-6)

    def forward(self, x, mask, cache=None, use_g=False):
        a, cache = self.mha1(x, mask, cache, use_g)
        x1 = self.layernorm1(a + x)
        return self.layernorm2(self.ffn(x1) + x1), cache


class Decoder(nn.Module):
    def __init__(self, L, d, H, dff, a_dff, n_res, n_dense, vocab) -> None:
        super().__init__()
        self.d = d
        self.embedding = nn.Embedding(vocab, d)
        self.dec_layers = nn.ModuleList(
            [DecLayer(d, H, dff, a_dff, n_res, n_dense) for _ in range(L)]
        )
        self.layernorm1 = nn.LayerNorm(d, eps=1e-6)


class PLDRModel(nn.Module):
    """Same keys, shapes and forward as ``pldr_model_v510.PLDR_Model``."""

    def __init__(self, L=2, d=16, H=2, dff=24, vocab=40, a_dff=12, n_res=2, n_dense=2) -> None:
        super().__init__()
        self.decoder = Decoder(L, d, H, dff, a_dff, n_res, n_dense, vocab)
        self.final_layer = nn.Linear(d, vocab)

    def forward(self, tokens, caches=None, use_g=False):
        S = tokens.shape[1]
        x = self.decoder.embedding(tokens)
        x = x * torch.sqrt(torch.tensor(self.decoder.d).to(torch.float32)).to(x.dtype)
        x = self.decoder.layernorm1(x)
        mask = None
        if caches is None:
            mask = (1 - torch.tril(torch.ones(S, S))).to(x.dtype)
        new = []
        for i, layer in enumerate(self.decoder.dec_layers):
            x, c = layer(x, mask, None if caches is None else caches[i], use_g)
            new.append(c)
        return self.final_layer(x), new


def random_author_model(seed: int = 0, **sizes: int) -> PLDRModel:
    """The author's module tree with well-conditioned random weights (float32)."""
    torch.manual_seed(seed)
    m = PLDRModel(**sizes)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("pwlst"):
                p.uniform_(0.5, 1.5)  # powers: keep A_LM ** P far from overflow
            elif name.endswith(("Wlst", "alst")):
                p.normal_(0.0, p.shape[-1] ** -0.5)
            elif name.endswith(("blst", "balst")):
                p.normal_(0.0, 0.1)
            elif "layernorm" in name and name.endswith("weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.normal_(0.0, 0.1)
            elif name.endswith("embedding.weight"):
                p.normal_(0.0, 1.0)
            else:
                p.normal_(0.0, p.shape[-1] ** -0.5)
    return m.eval()
