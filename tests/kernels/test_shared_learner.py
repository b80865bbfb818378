"""The shared metric learner (the ``pldr_model_v510`` form) against the per-head form and
the float64 reference."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from kernel_helpers import make_heads, make_qkv, rel_err

import pyverify.kernels as kern
from pyverify.kernels.model import from_reference as decoder_from_reference
from pyverify.reference import Decoder, plga_forward


def shared_heads(H: int = 3, dk: int = 8):
    """Reference heads of one layer carrying head 0's learner (distinct W, b, P, a, b_a)."""
    h = make_heads(H, dk)
    return [dataclasses.replace(x, ln0_gamma=h[0].ln0_gamma, ln0_beta=h[0].ln0_beta,
                                reslayers=h[0].reslayers) for x in h]  # fmt: skip


def test_form_detection_and_replication():
    heads = shared_heads()
    ps = kern.from_reference(heads)
    assert ps.shared_learner and ps.ln0_gamma.shape == (8,)
    assert ps.reslayers[0].dense[0].W1.shape == (8, 12) and ps.W.shape == (3, 8, 8)
    pp = kern.from_reference(heads, shared=False)
    assert not pp.shared_learner and pp.reslayers[0].dense[0].W1.shape == (3, 8, 12)
    assert not kern.from_reference(make_heads(3, 8)).shared_learner  # distinct learners
    with pytest.raises(ValueError, match="learners differ"):
        kern.from_reference(make_heads(3, 8), shared=True)
    for a, b in zip(ps.per_head().reslayers[1].dense[1].__dict__.values(),
                    pp.reslayers[1].dense[1].__dict__.values(), strict=True):  # fmt: skip
        assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_shared_equals_per_head_and_reference(device, dtype):
    """Same weights in both forms: the same function. Against the float64 reference per
    (batch, head) within the dtype's usual tolerance (fp64 1e-12, fp32 1e-5). bf16: the
    learner runs in fp32 in both forms, so G agrees to 1e-5; the bf16 outputs may then
    differ by one bf16 ulp (2^-8) where the forms' G straddle a rounding boundary, hence
    1e-2 (~2.5 ulp) there; bf16 is not compared with the reference here."""
    heads = shared_heads()
    q, k, v = (torch.tensor(x, device=device) for x in make_qkv(2, 3, 10, 8, seed=1))
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    ps = kern.from_reference(heads, device, torch.float64)
    pp = kern.from_reference(heads, device, torch.float64, shared=False)
    out_s, ded_s = kern.plga_attention(q, k, v, ps, return_deductive=True)
    out_p, ded_p = kern.plga_attention(q, k, v, pp, return_deductive=True)
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 1e-5}[dtype]
    assert rel_err(ded_s.G, ded_p.G) <= tol
    assert rel_err(out_s.float(), out_p.float()) <= (tol if dtype != torch.bfloat16 else 1e-2)
    if dtype == torch.bfloat16:
        return
    for b in range(2):
        for h in range(3):
            qn, kn, vn = (x[b, h].double().cpu().numpy() for x in (q, k, v))
            ro, rd = plga_forward(qn, kn, vn, heads[h], causal=True)
            assert rel_err(out_s[b, h], ro) <= tol
            assert rel_err(ded_s.A[b, h], rd.A) <= tol
            assert rel_err(ded_s.G[b, h], rd.G) <= tol


@pytest.mark.parametrize("shared", [True, False])
def test_head_slice_matches_the_full_layer(shared):
    """``head(h)`` of either form computes head h of the full layer."""
    ps = kern.from_reference(shared_heads() if shared else make_heads(3, 8))
    assert ps.shared_learner is shared
    q, k, v = (torch.tensor(x) for x in make_qkv(1, 3, 6, 8, seed=2))
    full = kern.plga_attention(q, k, v, ps)
    one = kern.plga_attention(q[:, 1:2], k[:, 1:2], v[:, 1:2], ps.head(1))
    assert rel_err(one, full[:, 1:2]) <= 1e-14


@pytest.mark.parametrize("shared", [True, False])
def test_decoder_both_forms_match_reference(device, shared):
    """Reference decoders drawn in either form; the kernels pick the matching path."""
    ref = Decoder.random(vocab=20, d_model=16, num_heads=2, num_layers=2, seed=5,
                         shared_learner=shared)  # fmt: skip
    assert ref.params.layers[0].mha.shared_learner is shared
    m = decoder_from_reference(ref, device, torch.float64)
    assert m.params.layers[0].heads.shared_learner is shared
    toks = np.array([3, 1, 4, 1, 5, 9, 2, 6])
    logits, _ = m.forward(torch.tensor(toks[None], device=device))
    assert rel_err(logits[0], ref.forward(toks).logits) <= 1e-12


def test_kv_buffer_grows_in_place_and_truncates():
    ref = Decoder.random(vocab=20, d_model=8, num_heads=2, num_layers=1, seed=1)
    m = decoder_from_reference(ref)
    toks = torch.tensor([[1, 2, 3, 4, 5, 6, 7]])
    _, cache = m.prefill(toks[:, :3])
    outs = []
    for t in range(3, 7):
        step, cache = m.decode_step(toks[:, t], cache)
        outs.append(step)
    lc = cache.layers[0]
    assert lc.k.shape[2] == 7 and lc.k_buf is not None and lc.k.data_ptr() == lc.k_buf.data_ptr()
    ptr = lc.k_buf.data_ptr()
    cache.truncate(5)
    again, cache = m.decode_step(toks[:, 5], cache)
    assert torch.equal(again, outs[2]) and cache.layers[0].k_buf.data_ptr() == ptr
    with pytest.raises(ValueError, match="length"):
        cache.truncate(99)


def test_kv_buffer_from_inference_mode_is_usable_outside():
    ref = Decoder.random(vocab=20, d_model=8, num_heads=2, num_layers=1, seed=1)
    m = decoder_from_reference(ref)
    toks = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.inference_mode():
        _, cache = m.prefill(toks[:, :3])
        _, cache = m.decode_step(toks[:, 3], cache)  # buffers made in inference mode
    b, cache = m.decode_step(toks[:, 4], cache)  # grows/copies them outside: no error
    want, _ = m.forward(toks[:, :5], mode="g_cached", G=[lc.G for lc in cache.layers])
    assert rel_err(b[0], want[0, 4]) <= 1e-12


@pytest.mark.parametrize("num_dense", [0, 1, 3])
@pytest.mark.parametrize("shared", [True, False])
def test_learner_unit_shapes_against_the_reference(num_dense, shared):
    """Units of 0, 1 and 3 SwiGLU blocks (0: LayerNorm(2 X); the residual is accumulated
    into the last block's W3 product): A per (batch, head) against the float64
    reference, in both learner forms (float64, 1e-12 as above)."""
    from pyverify.reference import PLGAParams

    base = [PLGAParams.random(dk=8, a_dff=5, num_reslayer=2, num_dense=num_dense, seed=s)
            for s in range(3)]  # fmt: skip
    learner = {"ln0_gamma": base[0].ln0_gamma, "ln0_beta": base[0].ln0_beta,
               "reslayers": base[0].reslayers}  # fmt: skip
    heads = [dataclasses.replace(x, **learner) for x in base] if shared else base
    p = kern.from_reference(heads, shared=shared)
    assert p.shared_learner is shared
    q, k, v = (torch.tensor(x) for x in make_qkv(2, 3, 7, 8, seed=4))
    _, ded = kern.plga_attention(q, k, v, p, return_deductive=True)
    for b in range(2):
        for h in range(3):
            qn, kn, vn = (x[b, h].numpy() for x in (q, k, v))
            _, rd = plga_forward(qn, kn, vn, heads[h], causal=True)
            assert rel_err(ded.A[b, h], rd.A) <= 1e-12
