"""The learner's sub-stage rows on the forms the sweep's cases do not reach.

The sweep's random heads have per-head learners of two units of two blocks; the shared
learner (``pldr_model_v510``'s form: LayerNorm with its affine fused, one GEMM over every
head's rows) and a unit without blocks (``LayerNorm(X + X)``) go through other branches
of the trace and of the bounds: each must reproduce the kernels' ``A`` bit for bit and
give every sub-stage a proved bound that holds.
"""

from __future__ import annotations

import pytest
import torch

import pyverify.kernels as kern
from pyverify import crosscheck as cc
from pyverify.crosscheck.compare import Comparer
from pyverify.crosscheck.learner_rows import learner_rows_random
from pyverify.reference import PLGAParams, plga_forward_batched


def _rows(heads: list, dtype: str) -> list:
    shape = (2, len(heads), 9, 8)
    g = torch.Generator().manual_seed(3)
    t = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}[dtype]
    q = torch.randn(*shape, generator=g).to(t)
    p = kern.from_reference(heads, "cpu", torch.float64 if dtype == "float64" else torch.float32)
    _, ded = kern.plga_attention(q, q, q, p, return_deductive=True)
    qn = q.double().numpy()
    ref = plga_forward_batched(qn, qn, qn, heads, causal=True)
    cmp = Comparer(cc.Case("random", shape, "cpu", dtype), "kernels.uncached", "reference.float64")
    return p, learner_rows_random(cmp, q, heads, p, ded.A, ref.ded.A)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_shared_learner_rows_are_bounded(dtype):
    p, rows = _rows([PLGAParams.random(8, 12, 2, 2, seed=5)] * 3, dtype)
    assert p.shared_learner
    assert [r.stage for r in rows] == list(cc.LEARNER_STAGES)
    for r in rows:
        assert r.passed and r.proved is not None and r.proved_ratio <= 1, r


def test_units_without_blocks_are_bounded():
    heads = [PLGAParams.random(8, 12, 2, 0, seed=h) for h in range(2)]
    p, rows = _rows(heads, "float32")
    assert not p.shared_learner
    assert [r.stage for r in rows] == ["D", "A0", "U1.Z", "A1", "U2.Z", "A"]
    for r in rows:
        assert r.passed and r.proved is not None and r.proved_ratio <= 1, r
