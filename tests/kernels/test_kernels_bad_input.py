# ruff: noqa: E501 (one case a line: the table is the contract)
"""Bad input to the kernels' public API: one case a line, the contract as a table.

Every case raises a typed error (``TypeError`` for a wrong kind of value, ``ValueError``
for a wrong shape or a non-finite value) whose one-line message names the argument or the
parameter field; no case returns NaN silently or reports non-finite input as an overflow.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from kernel_helpers import TOL

import pyverify.kernels as kern
from pyverify.kernels.model import from_reference as decoder_from_reference
from pyverify.kernels.validation import row_norm_max
from pyverify.reference import Decoder, PLGAParams
from pyverify.testing.bad_input import one_line_error_test

H, DK, S = 2, 4, 5
HEADS = [PLGAParams.random(DK, 6, 1, 1, seed=h) for h in range(H)]
HP = kern.from_reference(HEADS)
_rng = np.random.default_rng(0)
Q, K, V = (torch.tensor(_rng.normal(size=(1, H, S, DK))) for _ in range(3))
EYE = torch.eye(DK, dtype=torch.float64)
A = kern.compute_g(Q, HP).A
REF = Decoder.random(vocab=16, d_model=8, num_heads=2, num_layers=1, dff=8, seed=0)


def nan_at(t: torch.Tensor, value: float = float("nan")) -> torch.Tensor:
    t = t.clone()
    t.view(-1)[1] = value
    return t


def with_head(i: int, **fields) -> list[PLGAParams]:
    hs = list(HEADS)
    hs[i] = dataclasses.replace(hs[i], **fields)
    return hs


def with_layer(**fields) -> Decoder:
    p = REF.params
    return dataclasses.replace(p, layers=[dataclasses.replace(p.layers[0], **fields)])


def bad_unit(**blk_fields) -> list:
    u = HEADS[0].reslayers[0]
    return [dataclasses.replace(u, dense=[dataclasses.replace(u.dense[0], **blk_fields)])]


MODEL = decoder_from_reference(REF)
TOKS = torch.tensor([[1, 2, 3]])
_L0 = REF.params.layers[0]
_NAN_P = dataclasses.replace(HP, P=nan_at(HP.P))
_U0 = HP.reslayers[0]
_NAN_W1 = dataclasses.replace(
    HP,
    reslayers=[
        dataclasses.replace(
            _U0, dense=[dataclasses.replace(_U0.dense[0], W1=nan_at(_U0.dense[0].W1))]
        )
    ],
)

CASES = [
    # (case, call, exception, message regex)
    ("plga q NaN", lambda: kern.plga_attention(nan_at(Q), K, V, HP), ValueError, r"^q must be finite.*non-finite input"),
    ("plga k Inf", lambda: kern.plga_attention(Q, nan_at(K, np.inf), V, HP), ValueError, r"^k must be finite"),
    ("plga v NaN", lambda: kern.plga_attention(Q, K, nan_at(V), HP), ValueError, r"^v must be finite"),
    ("plga G NaN", lambda: kern.plga_attention(Q, K, V, None, G=nan_at(EYE)), ValueError, r"^G must be finite"),
    ("plga G-cached q NaN", lambda: kern.plga_attention(nan_at(Q), K, V, None, G=EYE), ValueError, r"^q must be finite"),
    ("plga cached A NaN", lambda: kern.plga_attention(Q, K, V, HP, A=nan_at(A)), ValueError, r"^A must be finite"),
    ("plga params.P NaN", lambda: kern.plga_attention(Q, K, V, _NAN_P), ValueError, r"^params\.P must be finite"),
    ("plga params W1 NaN", lambda: kern.plga_attention(Q, K, V, _NAN_W1), ValueError, r"^params\.reslayers\[0\]\.dense\[0\]\.W1 must be finite"),
    ("plga causal='False'", lambda: kern.plga_attention(Q, K, V, HP, causal="False"), TypeError, r"^causal must be a bool; got str"),
    ("compute_g q NaN", lambda: kern.compute_g(nan_at(Q), HP), ValueError, r"^q must be finite"),
    ("energy_curvature A NaN", lambda: kern.energy_curvature(nan_at(A), HP), ValueError, r"^A must be finite"),
    ("attend q NaN", lambda: kern.attend(nan_at(Q), K, V, EYE), ValueError, r"^q must be finite"),
    ("attend G Inf", lambda: kern.attend(Q, K, V, nan_at(EYE, -np.inf)), ValueError, r"^G must be finite"),
    ("attend causal='False'", lambda: kern.attend(Q, K, V, EYE, causal="False"), TypeError, r"^causal must be a bool"),
    ("collapsed k Inf", lambda: kern.collapsed_attention(Q, nan_at(K, np.inf), V, EYE), ValueError, r"^k_rot must be finite"),
    ("collapsed v NaN", lambda: kern.collapsed_attention(Q, K, nan_at(V), EYE), ValueError, r"^v must be finite"),
    ("collapsed G NaN", lambda: kern.collapsed_attention(Q, K, V, nan_at(EYE)), ValueError, r"^G must be finite"),
    ("collapsed causal=1", lambda: kern.collapsed_attention(Q, K, V, EYE, causal=1), TypeError, r"^causal must be a bool; got int"),
    ("rope_commutant_residual G NaN", lambda: kern.rope_commutant_residual(nan_at(EYE)), ValueError, r"^G must be finite"),
    ("in_rope_commutant G Inf", lambda: kern.in_rope_commutant(nan_at(EYE, np.inf)), ValueError, r"^G must be finite"),
    ("project_to_rope_commutant G NaN", lambda: kern.project_to_rope_commutant(nan_at(EYE)), ValueError, r"^G must be finite"),
    ("fold_into_query_projection G NaN", lambda: kern.fold_into_query_projection(torch.eye(8, dtype=torch.float64), torch.zeros(8, dtype=torch.float64), nan_at(EYE)), ValueError, r"^G must be finite"),
    ("from_reference P wrong shape", lambda: kern.from_reference(with_head(1, P=np.ones((3, 3)))), ValueError, r"^p\[1\]\.P must have shape \(4, 4\); got shape \(3, 3\)"),
    ("from_reference W1 wrong shape", lambda: kern.from_reference(dataclasses.replace(HEADS[0], reslayers=bad_unit(W1=np.ones((3, 6))))), ValueError, r"^p\.reslayers\[0\]\.dense\[0\]\.W1 must have shape \(4, a_dff\)"),
    ("from_reference b_a NaN", lambda: kern.from_reference(with_head(0, b_a=np.full((4, 4), np.nan))), ValueError, r"^p\[0\]\.b_a must be finite"),
    ("from_reference reslayers None", lambda: kern.from_reference(with_head(0, reslayers=None)), TypeError, r"^p\[0\]\.reslayers must be a list; got NoneType"),
    ("from_reference dense None", lambda: kern.from_reference(dataclasses.replace(HEADS[0], reslayers=[dataclasses.replace(HEADS[0].reslayers[0], dense=None)])), TypeError, r"^p\.reslayers\[0\]\.dense must be a list"),
    ("from_reference dict", lambda: kern.from_reference({"W": np.eye(4)}), TypeError, r"^p must have a field .*; got dict"),
    ("decoder from_reference ffn.W1 wrong shape", lambda: decoder_from_reference(with_layer(ffn=dataclasses.replace(_L0.ffn, W1=np.ones((3, 3))))), ValueError, r"^ref\.layers\[0\]\.ffn\.W1 must have shape \(8, dff\)"),
    ("decoder from_reference head P wrong shape", lambda: decoder_from_reference(with_layer(mha=dataclasses.replace(_L0.mha, heads=[_L0.mha.heads[0], dataclasses.replace(_L0.mha.heads[1], P=np.ones((3, 3)))]))), ValueError, r"^ref\.layers\[0\]\.mha\.heads\[1\]\.P must have shape \(4, 4\)"),
    ("decoder from_reference Wq NaN", lambda: decoder_from_reference(with_layer(mha=dataclasses.replace(_L0.mha, Wq=np.full((8, 8), np.nan)))), ValueError, r"^ref\.layers\[0\]\.mha\.Wq must be finite"),
    ("from_reference dtype int64", lambda: kern.from_reference(HEADS, dtype=torch.int64), TypeError, r"^dtype must be one of torch\.float64"),
    ("from_reference heads of different a_dff", lambda: kern.from_reference([HEADS[0], PLGAParams.random(DK, 8, 1, 1, seed=5)]), ValueError, r"^p\[1\] has a_dff = 8; p\[0\] has 6$"),
    ("from_reference device 'bogus'", lambda: kern.from_reference(HEADS, device="bogus"), ValueError, r"^device must be a torch device .*; got 'bogus'"),
    ("decoder from_reference device 'mps'", lambda: decoder_from_reference(REF, device="mps"), ValueError, r"^device must be 'cpu' or 'cuda'"),
    ("decoder from_reference dtype int32", lambda: decoder_from_reference(REF, dtype=torch.int32), TypeError, r"^dtype must be one of"),
    ("decoder g_cached G NaN", lambda: MODEL.forward(TOKS, mode="g_cached", G=[nan_at(EYE)]), ValueError, r"^G must be finite"),
    ("decoder collapsed G Inf", lambda: MODEL.forward(TOKS, mode="collapsed", G=[nan_at(EYE, np.inf)]), ValueError, r"^G must be finite"),
    ("decoder decode_step int token", lambda: MODEL.decode_step(5, MODEL.prefill(TOKS)[1]), TypeError, r"^token must be an integer torch\.Tensor .*; got int"),
    ("decoder decode_step use_g_cache='no'", lambda: MODEL.decode_step(torch.tensor([1]), MODEL.prefill(TOKS)[1], use_g_cache="no"), TypeError, r"^use_g_cache must be a bool; got str"),
    ("decoder from_reference dict", lambda: decoder_from_reference({"layers": []}), TypeError, r"^ref must be a pyverify\.reference Decoder or DecoderParams; got dict"),
]  # fmt: skip


test_bad_input_raises_a_typed_one_line_error = one_line_error_test(CASES)


def test_real_overflow_is_still_reported_as_overflow():
    """Finite inputs whose power law overflows: PowerLawOverflowError, not 'non-finite input'."""
    steep = kern.from_reference(
        with_head(0, P=np.full((4, 4), -60.0), W=np.zeros((4, 4)), b=np.zeros((4, 4)))
    )
    with pytest.raises(kern.PowerLawOverflowError, match="overflow"):
        kern.plga_attention(Q, K, V, steep)


def _unreached_equal(out: torch.Tensor, clean: torch.Tensor, reached: torch.Tensor) -> None:
    """Entries a bad value cannot reach equal the clean call's (float64, same shapes and
    dispatch: only summation order could differ, so the kernel tests' float64 TOL is ample)."""
    tol = TOL[torch.float64]
    torch.testing.assert_close(out[~reached], clean[~reached], rtol=tol, atol=tol)


def test_check_finite_false_skips_the_input_check():
    """The documented opt-out: no check and no error; where the NaN reaches, the result is
    unspecified, because torch's CPU SDPA turns a NaN score row into NaN under some CPU
    capabilities and shapes and into zeros under others (this very call: zeros under
    ``ATEN_CPU_CAPABILITY=avx512``, NaN under ``avx2`` and ``default``). So the test holds
    what every dispatch gives: the call returns, and every entry the NaN cannot reach is
    the clean call's."""
    clean = kern.attend(Q, K, V, EYE)
    out = kern.attend(nan_at(Q), K, V, EYE, check_finite=False)  # NaN at q[0, 0, 0, 1]
    reached = torch.zeros(out.shape, dtype=torch.bool)
    reached[0, 0, 0] = True  # query row 0 of head 0: (Q G)[0] and its scores
    _unreached_equal(out, clean, reached)
    clean = kern.plga_attention(Q, K, V, HP)
    out = kern.plga_attention(Q, K, nan_at(V), HP, check_finite=False)  # NaN at v[0, 0, 0, 1]
    reached = torch.zeros(out.shape, dtype=torch.bool)
    reached[0, 0, :, 1] = True  # column 1 of head 0: every causal row weighs key 0
    _unreached_equal(out, clean, reached)


@pytest.mark.parametrize(
    ("dtype", "size"), [(torch.float64, 1e160), (torch.float32, 1e20), (torch.bfloat16, 1e20)]
)
def test_finite_inputs_whose_scores_overflow_raise(dtype, size):
    """Scores beyond the range SDPA accumulates in: ``[scores]`` error before SDPA (after it,
    the overflowed rows would be NaN or zeros depending on torch's CPU dispatch)."""
    e0 = torch.zeros(1, H, S, DK, dtype=dtype)
    e0[..., 0] = size
    v = V.to(dtype)
    eye = EYE.to(dtype)
    calls = {
        "attend": lambda: kern.attend(e0, e0, v, eye),
        "collapsed": lambda: kern.collapsed_attention(e0, e0, v, eye),
        "plga G-cached": lambda: kern.plga_attention(e0, e0, v, None, G=eye),
        # a decode step's form: no input check, the keys' norm bound given instead
        "plga key_norm": lambda: kern.plga_attention(
            e0, e0, v, None, G=eye, check_finite=False, key_norm=row_norm_max(e0)
        ),
    }
    for name, call in calls.items():
        with pytest.raises(kern.NonFiniteStageError, match=r"^\[scores\] a score reaches"):
            call()
            pytest.fail(f"{name}: no error")
    # huge but orthogonal rows: the norm bound fails, the scores are all 0 -> no error,
    # uniform causal weights: row i is the mean of v[0..i] (computed here in float64)
    e1 = torch.zeros_like(e0)
    e1[..., 1] = size
    out = kern.attend(e0, e1, v, eye).double()
    # the same with the (true) keys' norm bound: the exact path decides, no error
    with_bound = kern.plga_attention(e0, e1, v, None, G=eye, key_norm=row_norm_max(e1))
    assert torch.equal(with_bound.double(), out)
    mean = v.double().cumsum(-2) / torch.arange(1, S + 1, dtype=torch.float64)[:, None]
    # bfloat16 output: one rounding of the result plus float32 accumulation, u = 2^-8
    tol = {**TOL, torch.bfloat16: 2**-7}[dtype]  # float64/float32: the kernel tests' TOL
    torch.testing.assert_close(out, mean, rtol=tol, atol=tol * float(v.abs().max()))
