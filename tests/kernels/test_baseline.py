"""The benchmark baselines compute the same functions as the kernels (else P2/P3 mean nothing)."""

from __future__ import annotations

import torch
from kernel_helpers import make_qkv, rel_err
from test_shared_learner import shared_heads

import pyverify.kernels as kern
from pyverify.kernels.baseline import (
    author_decode_step,
    author_prefill_cache,
    plga_attention_author,
)
from pyverify.kernels.model import from_reference as decoder_from_reference
from pyverify.reference import Decoder


def test_author_formulation_equals_kernels():
    p = kern.from_reference(shared_heads(), "cpu", torch.float64)
    q, k, v = (torch.tensor(x) for x in make_qkv(2, 3, 12, 8, seed=3))
    want, ded = kern.plga_attention(q, k, v, p, return_deductive=True)
    got, G = plga_attention_author(q, k, v, p)
    # the author divides by sqrt(dk) taken in float32 (sqrt(8) rounded: rel. 3e-8), so the
    # scores differ from the exact scaling by ~3e-8 relative; G itself to fp64 rounding
    assert rel_err(G, ded.G) <= 1e-12 and rel_err(got, want) <= 1e-6


def test_author_decode_step_equals_decode_step():
    ref = Decoder.random(vocab=20, d_model=16, num_heads=2, num_layers=2, seed=4)
    m = decoder_from_reference(ref, "cpu", torch.float64)
    toks = torch.tensor([[1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1]])
    _, cache = m.prefill(toks[:, :4])
    ac = author_prefill_cache(cache)
    for t in (4, 5):
        got, ac = author_decode_step(m, toks[:, t], ac)
        want, cache = m.decode_step(toks[:, t], cache)
        assert rel_err(got, want) <= 1e-12
