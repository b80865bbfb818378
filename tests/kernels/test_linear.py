"""Few-row products (pyverify.kernels.linear): every form computes x W + b; one is chosen."""

from __future__ import annotations

import pytest
import torch

import pyverify.kernels.linear as lin


def _operands(n: int, d_in: int = 512, d_out: int = 384, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x, W, b = (torch.randn(*s, generator=g, dtype=torch.float64)
               for s in ((n, d_in), (d_in, d_out), (d_out,)))  # fmt: skip
    return x, lin.output_major(W), b


@pytest.mark.parametrize("form", ["plain", "transposed", "rows"])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_every_form_computes_the_product(monkeypatch, form, n):
    """Each form, forced, against the product formed in float64 by numpy (the forms
    differ only in their summation order: well within 1e-13 of the result's norm)."""
    x, W, b = _operands(n)
    assert W.numel() * W.element_size() >= lin.TIMED_BYTES
    key = (W.shape[0], W.shape[1], n, "float64", True, torch.get_num_threads())
    monkeypatch.setitem(lin.FORMS, key, form)
    out, scratch = x.new_empty(n, W.shape[1]), x.new_empty(W.shape[1], n)
    got = lin.linear_into(x, W, b, out, scratch)
    want = x.numpy() @ W.numpy() + b.numpy()
    assert got.data_ptr() == out.data_ptr()
    assert float(abs(got.numpy() - want).max()) <= 1e-13 * abs(want).max()


def test_the_choice_is_timed_once_and_kept(monkeypatch):
    monkeypatch.setattr(lin, "FORMS", {})
    x, W, b = _operands(3)
    first = lin.few_rows_form(x, W, b, True)
    assert first in ("plain", "transposed", "rows") and len(lin.FORMS) == 1
    monkeypatch.setattr(lin, "_fastest", lambda *a: pytest.fail("timed twice"))
    assert lin.few_rows_form(x, W, b, True) == first
    threads = torch.get_num_threads()
    assert lin.few_row_forms() == {f"512x384, 3 rows, float64, {threads} threads": first}


def test_small_weights_and_row_major_weights_are_not_timed(monkeypatch):
    monkeypatch.setattr(lin, "FORMS", {})
    monkeypatch.setattr(lin, "_fastest", lambda *a: pytest.fail("timed"))
    x, W, b = _operands(3, d_in=16, d_out=8)
    assert lin.few_rows_form(x, W, b, True) == "transposed"
    assert lin.few_rows_form(x, W, b, False) == "plain"
    x, W, b = _operands(1, d_in=16, d_out=8)
    assert lin.few_rows_form(x, W, b, True) == "plain"
    x, W, b = _operands(3)
    assert lin.few_rows_form(x, W.contiguous(), b, True) == "plain"
    assert lin.FORMS == {}
