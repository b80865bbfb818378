"""collapse_absorption: a constant G* is absorbed into the affine query projection.

* Collapse: with a constant G*, the layer is generalised SDPA, ``SDPA(Q G*, K, V)``.
* Absorption: ``(X W_q + 1 b_q^T) G* = X (W_q G*) + 1 (b_q^T G*)`` (weight and bias
  together); with RoPE, absorbing before the rotation is exact when G* commutes with every
  R_n (and, for the real trained G_LM, which does not, it is not).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import Phase, assume, find, given, settings
from hypothesis import strategies as st

import pyverify.kernels as kern
from pyverify.fp.formulas import EVAL_SLACK, UNDERFLOW, fp_elementwise, fp_matmul
from pyverify.kernels.head import rotate_query, sdpa_qg
from pyverify.reference import Decoder, PLGAParams, mp
from pyverify.testing.decoder_bounds import folded_query, pass_bound
from pyverify.testing.decoder_tightness import pinned_decoder
from pyverify.testing.exact import add, block_diag, matmul, ones_col, rot, transpose
from pyverify.testing.fp import MP_DPS, arith
from pyverify.testing.impls import (
    ALL,
    FLOAT,
    REFERENCE,
    UNIT_ROUNDOFF,
    attention_bound,
    impl_ids,
    kernels,
)
from pyverify.testing.rope_bounds import angle_rounding, plane_norm1, rope_row_error, rotated_error
from pyverify.testing.stage_bounds import OutsideModel, or_reject, oracle_gap
from pyverify.testing.strategies import (
    arrays,
    block_diagonal,
    commutant_matrix,
    decoder_g,
    examples,
    fraction_matrix,
    fractions,
    head_params,
    project_commutant_np,
    proved_layers,
    pythagorean,
    qkv,
    small_decoder,
    tokens,
    trained_g_lm,
    trained_head,
)

pytestmark = pytest.mark.theorem("collapse_absorption")

U64 = UNIT_ROUNDOFF["float64"]

#: [non-vacuity] The trained operator folded before the rotation must move some output
#: entry at positions >= 1 by more than this fraction of the largest one there (far above
#: float32 rounding, ~1e-6 relative): the refusal of the fold is not about rounding.
FOLD_GAP = 1e-3
#: [non-vacuity] A witness outside the commutant must move the folded model's logits by
#: more than this many times the proved bound of the two evaluations.
WITNESS_FACTOR = 10


# --------------------------------------------------------------------------- collapse
@st.composite
def collapse_cases(draw):
    s_q = draw(st.integers(1, 8))
    s_k = draw(st.integers(s_q, 8))
    dk = draw(st.sampled_from([2, 4, 6, 8]))
    q, k, v = draw(qkv(s_q, dk, draw(st.integers(1, 6)), s_k=s_k))
    G = np.eye(dk) + draw(arrays((dk, dk), 1.5)) / dk
    return q, k, v, G, draw(head_params(dk)), draw(st.booleans())


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(collapse_cases())
def test_constant_g_layer_is_sdpa_on_q_times_g(impl, case):
    """PLGA with a constant G* equals plain SDPA on the queries Q' = Q G*."""
    q, k, v, G, params, causal = case
    q, k, v, G = impl.round(q), impl.round(k), impl.round(v), impl.round(G)
    q_prime = q @ G  # float64; the SDPA input is then rounded once to the dtype
    plga = impl.plga(q, k, v, params, G=G, causal=causal).out
    # the implementation's own SDPA where it has one, else the reference's textbook SDPA
    oracle = impl if impl.offers("sdpa") else REFERENCE
    q_held = impl.round(q_prime)
    sdpa = oracle.sdpa(q_held, k, v, causal=causal)
    # Each side within attention_bound of its exact value: the PLGA layer of Att(Q, G), the
    # SDPA of Att(fl(Q G), I) on the query it was handed; the two exact values apart by
    # their oracles' distance in mpmath, plus the oracles' own errors (the rounding of
    # Q G moves the scores, not the statement).
    eye = np.eye(q.shape[1])
    exact = mp.plga_forward(q, k, v, params, causal, G=G, dps=MP_DPS)[0]
    exact_sdpa = mp.plga_forward(q_held, k, v, params, causal, G=eye, dps=MP_DPS)[0]
    gap = oracle_gap(exact.tolist(), exact_sdpa.tolist())
    b_sdpa = attention_bound(oracle, q_held, None, k, v, path=_plain(oracle))
    tol = attention_bound(impl, q, G, k, v) + b_sdpa + gap
    assert np.all(np.abs(plga - sdpa) <= tol)
    if impl.offers("collapsed"):  # the fast collapsed path ("rounded": Q G rounded once)
        fast = impl.collapsed(q, k, v, G, causal=causal)
        b_fast = attention_bound(impl, q, G, k, v, path="sdpa_rounded")
        assert np.all(np.abs(fast - sdpa) <= b_fast + b_sdpa + gap)


# --------------------------------------------------------------------------- absorption
@st.composite
def fold_cases(draw, commutant: bool = True):
    H = draw(st.integers(1, 3))
    dk = draw(st.sampled_from([2, 4, 8]))
    d = draw(st.integers(1, 8))
    S = draw(st.integers(1, 6))
    x = draw(arrays((S, d), 2.0))
    Wq = draw(arrays((d, H * dk), 1.0))
    bq = draw(arrays((H * dk,), 1.0))
    if commutant:
        G = np.stack([draw(commutant_matrix(dk, 2.0)) for _ in range(H)])
    else:
        G = np.stack([draw(arrays((dk, dk), 2.0)) for _ in range(H)])
    return x, Wq, bq, G


def _plain(impl) -> str | None:
    """The path of an SDPA handed its queries (``G = I``): the kernels' ``sdpa_plain``."""
    return None if impl.name == "reference" else "sdpa_plain"


def _heads(Y: np.ndarray, H: int, dk: int) -> np.ndarray:
    """(S, H dk) rows as (H, S, dk)."""
    return Y.reshape(Y.shape[0], H, dk).transpose(1, 0, 2)


def _affine64(ax: np.ndarray, aW: np.ndarray, ab: np.ndarray) -> np.ndarray:
    """``[fp_matmul]`` NumPy's float64 ``x W + b`` (``d + 1`` leaves) against the exact one."""
    ones = np.ones((ax.shape[0], 1))
    return fp_matmul(np.hstack([ax, ones]), np.vstack([aW, ab[None, :]]), U64, UNDERFLOW["float64"])


def _rotated(impl, ay: np.ndarray, err: np.ndarray) -> np.ndarray:
    """``[fp_elementwise]`` ``[fp_dot_product]``: ``impl.rope`` of computed (H, S, dk) rows.

    Rows within ``err`` of exact rows of magnitude ``ay``, rounded to the dtype
    (``fp_elementwise``, ``L = 1``), rotated (:func:`~pyverify.testing.rope_bounds.rope_row_error`
    at the angles ``n theta^_p <= n``, the implementation's own frequencies, against the
    exact rotation of the held row) and the input's error carried through the exact
    rotation (:func:`~pyverify.testing.rope_bounds.rotated_error`).
    """
    ar = arith(impl)
    held = fp_elementwise(1.0, err, ar.u_io, ay, ar.eta_io)
    angle = angle_rounding(np.arange(ay.shape[-2], dtype=np.float64))[:, None]
    return rope_row_error(ar, plane_norm1(ay + held), angle) + rotated_error(held)


def _fold_bound(impl, x, Wq, bq, G) -> np.ndarray:
    """``[fp_matmul]`` ``[fp_elementwise]`` ``[fp_dot_product]``: ``|lhs - rhs|`` of the fold
    test, entrywise: both sides against the exact ``rope(x Wq G + bq G) = rope(x Wq + bq) G``.

    Left: the fold ``Wq_h G_h`` in the compute dtype (``fp_matmul``), rounded to the dtype
    (``fp_elementwise``), ``x Wf + bf`` in float64 (:func:`_affine64` plus the fold's error
    through ``|x|``), then :func:`_rotated`. Right: ``x Wq + bq`` in float64, :func:`_rotated`,
    then the float64 product with ``G`` (``fp_matmul`` on the rotated rows, whose plane
    2-norms are those of ``Y``, plus the rotation's error through ``|G|``).
    """
    ar = arith(impl)
    H, dk = G.shape[0], G.shape[-1]
    aG = np.abs(G)
    Gb = block_diagonal(aG)
    ax, aW, ab = np.abs(x), np.abs(Wq), np.abs(bq)
    r_io = ar.u_io if ar.reduced else 0.0
    dWf = fp_elementwise(1.0, fp_matmul(aW, Gb, ar.u_c, ar.eta_c), r_io, aW @ Gb, ar.eta_io)
    dbf = fp_elementwise(1.0, fp_matmul(ab[None, :], Gb, ar.u_c, ar.eta_c), r_io, ab @ Gb,
                         ar.eta_io)[0]  # fmt: skip
    aYG = (ax @ aW + ab) @ Gb
    e_left = _affine64(ax, aW @ Gb + dWf, ab @ Gb + dbf) + ax @ dWf + dbf
    left = _rotated(impl, _heads(aYG, H, dk), _heads(e_left, H, dk))
    aY = ax @ aW + ab
    rot = _rotated(impl, _heads(aY, H, dk), _heads(_affine64(ax, aW, ab), H, dk))
    planes = np.repeat(np.hypot(aY[:, 0::2], aY[:, 1::2]), 2, axis=-1)
    right = fp_matmul(_heads(planes, H, dk) + rot, aG, U64, UNDERFLOW["float64"]) + rot @ aG
    return EVAL_SLACK * (left + right)


@pytest.mark.parametrize("impl", kernels(), ids=impl_ids)
@given(fold_cases())
def test_fold_into_query_projection_with_rope(impl, case):
    """``fold_into_query_projection``: rope(x Wq' + bq') = rope(x Wq + bq) G per head."""
    x, Wq, bq, G = case
    H, dk = G.shape[0], G.shape[-1]
    x, Wq, bq, G = impl.round(x), impl.round(Wq), impl.round(bq), impl.round(G)
    Wf, bf = kern.fold_into_query_projection(impl.t(Wq), impl.t(bq), impl.t(G))
    Wf, bf = Wf.double().cpu().numpy(), bf.double().cpu().numpy()
    lhs = impl.rope(_heads(x @ Wf + bf, H, dk))
    rhs = impl.rope(_heads(x @ Wq + bq, H, dk)) @ G
    assert np.all(np.abs(lhs - rhs) <= _fold_bound(impl, x, Wq, bq, G))


@pytest.mark.parametrize("impl", kernels("float64", "float32"), ids=impl_ids)
@examples(10)
@given(trained_head, st.integers(1, 4), st.data())
def test_trained_operator_cannot_be_folded_before_rotation(impl, head, S, data):
    """The real trained G_LM does not commute with RoPE: the fold is refused, and the
    pre-rotation form really differs from the exact post-rotation one."""
    G = trained_g_lm()[head]
    d = 8
    x = data.draw(arrays((S, d), 2.0), label="x")
    Wq, bq = data.draw(arrays((d, 64), 1.0), label="Wq"), data.draw(arrays((64,), 1.0), label="bq")
    with pytest.raises(ValueError, match="does not commute"):
        kern.fold_into_query_projection(impl.t(Wq), impl.t(bq), impl.t(G))
    assume(S >= 2)  # position 0 is the identity rotation: nothing to see with one row
    pre = impl.rope((x @ Wq + bq) @ G)
    post = impl.rope(x @ Wq + bq) @ G
    row = np.abs(post[1:]).max()
    assume(row > 1.0)
    # the difference at positions >= 1 is O(|G| |row|): far above any rounding (fp32 1e-5)
    assert np.max(np.abs(pre[1:] - post[1:])) > FOLD_GAP * row


@st.composite
def absorbed_models(draw, impl, commutant: bool):
    """A decoder with a proved bound in ``impl`` (one layer at float32:
    :func:`~pyverify.testing.strategies.proved_layers`), per-head operators, tokens."""
    ref = draw(small_decoder(**proved_layers(impl)))
    G = draw(decoder_g(ref, scale=1.5, commutant=commutant))
    return ref, G, draw(tokens(16, 2, 6))


def _tolerance(impl, ref, G, identity, toks) -> np.ndarray:
    """``[fp_decoder_step]`` the original pass's bound plus the folded one's.

    Both around the same exact pass: the original's (``W_q``, ``G`` as held) and the
    folded model's with its query projection taken exactly as ``W_q G``
    (:func:`~pyverify.testing.decoder_bounds.folded_query`; the folded model holds
    ``fl(W_q G)``, whose distance to it enters the bound), which are equal when ``G``
    commutes with the rotations (the statement). Raises ``OutsideModel``.
    """
    b_orig = pass_bound(impl, ref, toks, G)[1]
    q_exact = folded_query(impl, ref, G)
    return b_orig + pass_bound(impl, _fold_reference(ref, G), toks, identity, q_exact)[1]


def _fold_reference(ref: Decoder, G: list[np.ndarray]) -> Decoder:
    """W_q' = W_q diag(G_h), b_q' = b_q diag(G_h) per layer (block diagonal over heads)."""
    p = ref.params
    layers = []
    for li, layer in enumerate(p.layers):
        Gblock = block_diagonal(G[li])
        mha = dataclasses.replace(layer.mha, Wq=layer.mha.Wq @ Gblock, bq=layer.mha.bq @ Gblock)
        layers.append(dataclasses.replace(layer, mha=mha))
    return Decoder(dataclasses.replace(p, layers=layers))


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
@examples(20)
@given(st.data())
def test_whole_model_absorbs_commuting_operator_into_wq(impl, data):
    """A decoder whose heads use a constant commuting G* equals the decoder with
    W_q G*, b_q G* folded in and G = I (plain SDPA heads, before RoPE), within the proved
    bounds of both passes (:func:`_tolerance`)."""
    ref, G, toks = data.draw(absorbed_models(impl, commutant=True))
    identity = [np.broadcast_to(np.eye(g.shape[-1]), g.shape).copy() for g in G]
    tol = or_reject(_tolerance, impl, ref, G, identity, toks)
    with pinned_decoder(impl, ref):
        want = impl.decoder(ref).collapsed(toks, G)
        got = impl.decoder(_fold_reference(ref, G)).forward(toks, identity)
    assert np.all(np.abs(got - want) <= tol)


@pytest.mark.parametrize("impl", FLOAT, ids=impl_ids)
def test_whole_model_absorption_fails_outside_the_commutant(impl):
    """Folding a non-commuting G* before RoPE changes the model: Hypothesis finds a model,
    an operator and tokens where the folded model's logits move by more than
    ``WITNESS_FACTOR`` times the rounding bound. (Not every input is a witness: equal
    values, or d_model = 2, where the LayerNorm leaves rows +-gamma + beta, can hide the
    scores.)"""

    def excess(case) -> float:
        """The largest ``|got - want| / tol`` (0 where no proved bound exists)."""
        ref, G, toks = case
        identity = [np.broadcast_to(np.eye(g.shape[-1]), g.shape).copy() for g in G]
        try:
            tol = _tolerance(impl, ref, G, identity, toks)
        except OutsideModel:
            return 0.0  # no proved bound: not a witness
        with pinned_decoder(impl, ref):
            want = impl.decoder(ref).collapsed(toks, G)
            got = impl.decoder(_fold_reference(ref, G)).forward(toks, identity)
        return float(np.max(np.abs(got - want) / tol))

    def witness(case):
        return excess(case) > WITNESS_FACTOR

    found = find(
        absorbed_models(impl, commutant=False),
        witness,
        settings=settings(
            max_examples=200, derandomize=True, database=None, deadline=None,
            phases=(Phase.generate,),
        ),
    )  # fmt: skip
    assert excess(found) > WITNESS_FACTOR
    _, G, _ = found
    assert max(float(np.linalg.norm(g - project_commutant_np(g))) for gl in G for g in gl) > 0


# --------------------------------------------------------------------------- exact
@pytest.mark.implementation("reference", dtype="exact")
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.data())
def test_affine_absorption_exactly(s, d, dk, data):
    """Exact: (X W + 1 b^T) G = X (W G) + 1 (b^T G) over the rationals."""
    X = data.draw(fraction_matrix(s, d), label="X")
    W = data.draw(fraction_matrix(d, dk), label="W")
    b = data.draw(fraction_matrix(1, dk), label="b")
    G = data.draw(fraction_matrix(dk, dk), label="G")
    lhs = matmul(add(matmul(X, W), matmul(ones_col(s), b)), G)
    rhs = add(matmul(X, matmul(W, G)), matmul(ones_col(s), matmul(b, G)))
    assert lhs == rhs


@pytest.mark.implementation("reference", dtype="exact")
@given(st.lists(st.tuples(pythagorean(False), fractions(), fractions()), min_size=1, max_size=3),
       st.data())  # fmt: skip
def test_absorption_before_rational_rotation_exactly(planes, data):
    """Exact: R block diagonal with rational rotations, G* block diagonal with blocks
    x I + y J: rotating y G* equals rotating y then applying G* (y R^T G = y G R^T)."""
    dk = 2 * len(planes)
    R = block_diag([rot(c, s) for (c, s), _, _ in planes])
    G = block_diag([[[x, -y], [y, x]] for _, x, y in planes])
    Y = data.draw(fraction_matrix(3, dk), label="Y")
    assert matmul(matmul(Y, G), transpose(R)) == matmul(matmul(Y, transpose(R)), G)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(collapse_cases())
def test_constant_g_layer_output_is_exact_generalised_sdpa_within_bound(impl, case):
    """Against exact arithmetic: the G-cached head and (kernels) the collapsed fast path are
    within attention_bound of the exact softmax(Q G* K^T / sqrt(dk)) V (mpmath), G* as the
    implementation holds it (float32 for the low-precision kernels). The fast path rounds
    Q G* to the dtype: u_io |Q||G*| more on the scores, 2 u_io M max|v| on the output."""
    q, k, v, G, params, causal = case
    q, k, v, G = impl.round(q), impl.round(k), impl.round(v), impl.round(G)
    G_used = G if impl.dtype == "float64" else G.astype(np.float32).astype(np.float64)
    want = mp.to_numpy(mp.plga_forward(q, k, v, params, causal, G=G_used, dps=30)[0])
    bound = attention_bound(impl, q, G_used, k, v) + U64 * np.abs(want)
    assert np.all(np.abs(impl.plga(q, k, v, params, G=G, causal=causal).out - want) <= bound)
    if impl.offers("collapsed"):  # Q G* rounded to the dtype first: its path's bound
        fast = impl.collapsed(q, k, v, G, causal=causal)
        b_fast = attention_bound(impl, q, G_used, k, v, path="sdpa_rounded") + U64 * np.abs(want)
        assert np.all(np.abs(fast - want) <= b_fast)


@pytest.mark.parametrize("impl", kernels(), ids=impl_ids)
@given(collapse_cases())
def test_kernel_attend_is_the_g_cached_head(impl, case):
    """``kernels.attend`` (steps 7-8 with a given G) is the G-cached head, bitwise; and the
    kernels' causal default is causal (as the spec's reference API)."""
    q, k, v, G, _, _ = case
    q4, k4, v4 = (impl.t(x)[None, None] for x in (q, k, v))
    G4 = impl.t(G, impl.cdtype)
    cached = kern.plga_attention(q4, k4, v4, None, G=G4)
    assert torch.equal(kern.attend(q4, k4, v4, G4), cached)
    assert torch.equal(kern.attend(q4, k4, v4, G4, causal=True), cached)
    assert torch.equal(kern.plga_attention(q4, k4, v4, None, G=G4, causal=True), cached)
    assert torch.equal(kern.sdpa(q4, k4, v4), kern.sdpa(q4, k4, v4, causal=True))
    assert torch.equal(sdpa_qg(q4, k4, v4, G4[None, None]), cached)
    # the collapsed fast path is, by definition, one SDPA call on Q G* rounded once
    fast = kern.sdpa(rotate_query(q4, G4[None, None]), k4, v4)
    assert torch.equal(kern.collapsed_attention(q4, k4, v4, G4), fast)


@pytest.mark.parametrize("impl", kernels("bfloat16", "float16"), ids=impl_ids)
@given(st.integers(2, 8), st.sampled_from([2, 4, 8]), st.floats(4.0, 16.0), st.data())
def test_low_precision_g_cached_head_keeps_sdpa_accuracy_on_large_scores(impl, s, dk, g, data):
    """The G-cached head (compensated Q G* = hi + lo) stays within attention_bound of the
    exact generalised SDPA on large scores (G* = g I + N, g in [4, 16]): the split keeps ~16
    significant bits of Q G*, so the error of rounding Q G* once (the fast collapsed path)
    is not in its bound. The inputs make that error visible: queries near c (1, ..., 1)
    and keys that are permutations of one vector give large, close scores whose rounding
    errors (u_io |Q G*| times different keys) differ from key to key, where softmax's
    shift invariance cannot hide them."""
    c = data.draw(st.floats(1.0, 3.0), label="c")
    q = impl.round(c * np.ones((s, dk)) + data.draw(arrays((s, dk), 0.1)))
    base = data.draw(arrays((dk,), 3.0), label="base")
    perms = data.draw(st.lists(st.permutations(range(dk)), min_size=s, max_size=s), label="perms")
    k = impl.round(np.stack([base[list(p)] for p in perms]))
    v = impl.round(data.draw(arrays((s, dk), 3.0), label="v"))
    G = impl.round(g * np.eye(dk) + data.draw(arrays((dk, dk), 0.25)))
    G_used = G.astype(np.float32).astype(np.float64)
    ref = PLGAParams.random(dk, 2, 0, 0, seed=0)
    want = mp.to_numpy(mp.plga_forward(q, k, v, ref, True, G=G_used, dps=30)[0])
    got = impl.plga(q, k, v, None, G=G).out
    assert np.all(np.abs(got - want) <= attention_bound(impl, q, G_used, k, v) + U64 * np.abs(want))
