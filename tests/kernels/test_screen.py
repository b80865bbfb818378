"""The attention's input screen (pyverify.kernels.screen.inputs_pass)."""

from __future__ import annotations

import pytest
import torch

from pyverify.kernels.screen import inputs_pass


def _inputs(dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, 3, 16, 8, generator=g).to(dtype) for _ in range(3))
    G = (torch.eye(8) + 0.3 * torch.randn(3, 8, 8, generator=g)).to(dtype)[None]
    return q, k, v, G


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_ordinary_inputs_pass(dtype):
    assert inputs_pass(*_inputs(dtype))


@pytest.mark.parametrize("which", range(4))
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_entry_anywhere_fails(which, bad):
    args = list(_inputs())
    args[which][0, -1, 0, -1] = bad
    assert not inputs_pass(*args)


def test_scores_beyond_a_quarter_of_the_range_fail():
    """Finite norms (1e18 squared, 96 times, stays below float32's 3.4e38) whose product
    with |G| passes a quarter of the range: refused; the same rows scaled down: passed."""
    q, k, v, G = _inputs()
    q[..., 0], k[..., 0] = 1e18, 1e18
    assert torch.isfinite(q.norm()) and not inputs_pass(q, k, v, G)
    assert inputs_pass(q / 1e10, k, v, G)
