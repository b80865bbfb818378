"""pytest-benchmark cases (timings are recorded, never asserted)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from kernel_helpers import make_heads

import pyverify.kernels as kern
from pyverify.bench import format_table, time_pair

B, H, S, DK = 1, 4, 256, 64


@pytest.fixture(scope="module")
def qkv():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(B, H, S, DK, generator=g) for _ in range(3)]


@pytest.mark.benchmark(group="collapsed")
def test_bench_collapsed(benchmark, qkv):
    G = torch.eye(DK).expand(H, DK, DK)
    out = benchmark(kern.collapsed_attention, *qkv, G)
    assert out.shape == (B, H, S, DK)


@pytest.mark.benchmark(group="collapsed")
def test_bench_sdpa(benchmark, qkv):
    out = benchmark(lambda: F.scaled_dot_product_attention(*qkv, is_causal=True))
    assert out.shape == (B, H, S, DK)


@pytest.mark.benchmark(group="uncached")
def test_bench_uncached(benchmark, qkv):
    p = kern.from_reference(make_heads(H, DK, a_dff=32), "cpu", torch.float32)
    out = benchmark(kern.plga_attention, *qkv, p)
    assert out.shape == (B, H, S, DK)


def test_time_pair_and_table_shape():
    """The timing helper and the table formatter work (no timing assertions)."""
    o, b = time_pair(lambda: None, lambda: None, torch.device("cpu"), reps=3, warmup=1)
    assert o >= 0 and b >= 0
    row = {"benchmark": "x", "shape": [1, 2], "dtype": "float32", "device": "cpu", "ours_ms": o,
           "baseline_ms": b, "ratio": 1.0, "target": 1.1, "meets_target": True}  # fmt: skip
    assert "ratio" in format_table({"rows": [row]})
