"""Shared Hypothesis strategies: shapes, arrays, parameters, positions, operators."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyverify.reference import Decoder, DecoderParams, PLGAParams, load_g_lm

CI_EXAMPLES = 30  # max_examples of the ci profile (conftest.py)


def examples(n: int) -> settings:
    """``@settings`` with ``n`` examples under the ci profile, scaled alike under others."""
    factor = settings().max_examples / CI_EXAMPLES
    return settings(max_examples=max(1, round(n * factor)))


# --------------------------------------------------------------------------- arrays
TINY = 1e-3


def floats(scale: float = 3.0, tiny: float = TINY) -> st.SearchStrategy[float]:
    """Floats of magnitude 0 or in ``[tiny, scale]``, either sign.

    These keep every input and every product of two of them in the normal range of every
    dtype involved, where a rounding has relative error ``u``; the absolute (underflow)
    terms ``eta`` of the proved bounds are then never the larger part. The tests that
    exercise ``eta`` draw from :func:`subnormal_floats` instead.
    """
    mag = st.floats(tiny, scale, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    return st.one_of(st.just(0.0), mag, mag.map(lambda x: -x))


#: ``emin`` (the smallest normal is ``2^emin``) and the smallest subnormal's exponent.
_EMIN: dict[str, tuple[int, int]] = {
    "float64": (-1022, -1074),
    "float32": (-126, -149),
    "bfloat16": (-126, -133),
    "float16": (-14, -24),
}


def underflow_band(dtype: str, compute: str) -> tuple[int, int]:
    """Exponents ``[lo, hi]`` of inputs whose pairwise products fall below the normal range.

    Inputs ``m 2^e`` (``1 <= m < 2``) with ``e`` in the band are normal or subnormal
    numbers of ``dtype`` (so rounding them to it stays in its range), and their products
    ``2^(2e)``-ish reach from just above ``compute``'s smallest normal down ``~20`` binades
    into its subnormals, where a rounded product has the absolute error ``eta`` of the
    bounds. Where no such input exists in ``dtype`` (float16 inputs, float32
    arithmetic: every product of two float16 numbers is normal in float32) the band is
    ``dtype``'s own subnormal range: the rounding of the inputs, then, is what underflows.
    """
    emin_c, _ = _EMIN[compute]
    emin_d, sub_d = _EMIN[dtype]
    lo, hi = (emin_c - 20) // 2, (emin_c + 2) // 2
    if hi < sub_d:
        return sub_d, emin_d
    return max(lo, sub_d), hi


def subnormal_floats(band: tuple[int, int]) -> st.SearchStrategy[float]:
    """``0`` or ``+-m 2^e`` with ``e`` in ``band`` (:func:`underflow_band`), ``1 <= m < 2``."""
    lo, hi = band
    mag = st.builds(lambda m, e: m * 2.0**e, st.floats(1.0, 2.0, exclude_max=True),
                    st.integers(lo, hi))  # fmt: skip
    return st.one_of(st.just(0.0), mag, mag.map(lambda x: -x))


def arrays(shape: tuple[int, ...], scale: float = 3.0) -> st.SearchStrategy[np.ndarray]:
    """float64 arrays of ``shape`` with entries in ``[-scale, scale]``."""
    return hnp.arrays(np.float64, shape, elements=floats(scale))


def grid_arrays(shape: tuple[int, ...], bound: int = 8, denom: int = 8):
    """Arrays of multiples of ``1/denom`` in ``[-bound, bound]``.

    With ``bound * denom <= 2^7`` every entry (and the sum of two, for the shift tests) is
    exactly representable in bfloat16 (8 significant bits), float16 and wider.
    """
    elements = st.integers(-bound * denom, bound * denom).map(lambda i: i / denom)
    return hnp.arrays(np.float64, shape, elements=elements)


even_dk = st.sampled_from([2, 4, 6, 8])
seq_len = st.integers(1, 8)
seeds = st.integers(0, 2**32 - 1)
positions = st.integers(0, 4096)


@st.composite
def head_shapes(draw, max_s: int = 8) -> tuple[int, int, int]:
    """``(S, dk, dv)``: dk even (RoPE planes)."""
    return draw(st.integers(1, max_s)), draw(even_dk), draw(st.integers(1, 6))


@st.composite
def qkv(draw, s: int, dk: int, dv: int, scale: float = 2.0, s_k: int | None = None):
    """Queries ``(s, dk)``, keys ``(s_k, dk)`` and values ``(s_k, dv)``."""
    s_k = s if s_k is None else s_k
    return (
        draw(arrays((s, dk), scale)),
        draw(arrays((s_k, dk), scale)),
        draw(arrays((s_k, dv), scale)),
    )


# --------------------------------------------------------------------------- parameters
@st.composite
def head_params(draw, dk: int, p_range: tuple[float, float] = (0.5, 1.5)) -> PLGAParams:
    """A head's parameters: the structure drawn, the weights from a drawn seed."""
    return PLGAParams.random(
        dk=dk,
        a_dff=draw(st.integers(1, 8)),
        num_reslayer=draw(st.integers(0, 2)),
        num_dense=draw(st.integers(0, 2)),
        seed=draw(seeds),
        p_range=p_range,
    )


@st.composite
def multi_head_params(draw, dk: int, H: int) -> list[PLGAParams]:
    """H heads sharing one metric-learner structure (as a batched layer needs)."""
    a_dff, units, dense = draw(st.integers(1, 8)), draw(st.integers(0, 2)), draw(st.integers(0, 2))
    return [PLGAParams.random(dk, a_dff, units, dense, seed=draw(seeds)) for _ in range(H)]


def with_constant_g(params: PLGAParams, G: np.ndarray) -> PLGAParams:
    """The spec's invariant metric: ``a = 0``, ``b_a = G`` so that ``G(X) = G`` for all X.

    The upstream tensors ``A``, ``A_LM``, ``A_P`` still depend on the input.
    """
    dk = params.dk
    return dataclasses.replace(params, a=np.zeros((dk, dk)), b_a=np.array(G, dtype=np.float64))


@st.composite
def commutant_matrix(draw, dk: int, scale: float = 2.0) -> np.ndarray:
    """A matrix in the RoPE commutant: block diagonal, blocks ``x I + y J``."""
    G = np.zeros((dk, dk))
    for p in range(dk // 2):
        x, y = draw(floats(scale)), draw(floats(scale))
        G[2 * p : 2 * p + 2, 2 * p : 2 * p + 2] = [[x, -y], [y, x]]
    return G


def block_diagonal(G: np.ndarray) -> np.ndarray:
    """Per-head operators ``(H, dk, dk)`` as one block-diagonal ``(H dk, H dk)`` matrix."""
    G = np.asarray(G, np.float64)
    H, dk = G.shape[0], G.shape[-1]
    out = np.zeros((H * dk, H * dk))
    for h in range(H):
        out[h * dk : (h + 1) * dk, h * dk : (h + 1) * dk] = G[h]
    return out


def project_commutant_np(G: np.ndarray) -> np.ndarray:
    """The Frobenius projection onto the commutant (NumPy, for building test operators)."""
    dk = G.shape[-1]
    out = np.zeros_like(G)
    for p in range(dk // 2):
        i = 2 * p
        x = (G[i, i] + G[i + 1, i + 1]) / 2
        y = (G[i + 1, i] - G[i, i + 1]) / 2
        out[i : i + 2, i : i + 2] = [[x, -y], [y, x]]
    return out


# --------------------------------------------------------------------------- trained data
_TRAINED: dict[str, np.ndarray] = {}


def trained_g_lm() -> np.ndarray:
    """The trained operator ``G_LM`` (5, 14, 64, 64) from the shared data folder."""
    if "trained" not in _TRAINED:
        _TRAINED["trained"] = load_g_lm("trained")
    return _TRAINED["trained"]


trained_head = st.tuples(st.integers(0, 4), st.integers(0, 13))


# --------------------------------------------------------------------------- models
@st.composite
def small_decoder(draw, **overrides: int) -> Decoder:
    """A small random reference decoder (1-2 layers, 1-2 heads, dk in {2, 4}).

    Both metric-learner forms are drawn: shared by the heads of a layer (the
    ``pldr_model_v510`` form, the kernels' one-GEMM path) or one per head (the
    generalisation, the kernels' batched-per-head path).
    """
    kw = {
        "vocab": 16,
        "num_heads": draw(st.integers(1, 2)),
        "num_layers": draw(st.integers(1, 2)),
        "dff": 12,
        "a_dff": 6,
        "num_reslayer": draw(st.integers(0, 1)),
        "num_dense": 1,
        "seed": draw(seeds),
        "shared_learner": draw(st.booleans()),
    }
    kw["d_model"] = kw["num_heads"] * draw(st.sampled_from([2, 4]))
    kw.update(overrides)
    return Decoder(DecoderParams.random(**kw))


def proved_layers(impl) -> dict[str, int]:
    """:func:`small_decoder` overrides for a decoder with a proved ``fp_decoder_step`` bound.

    One layer at float32 (at two the composed bound's LayerNorm or softmax premises are no
    longer met: ``property_tests/test_fp_decoder_step.py``), else none (one or two layers).
    """
    return {"num_layers": 1} if impl.dtype == "float32" else {}


def tokens(vocab: int = 16, min_size: int = 2, max_size: int = 7):
    """Token sequences."""
    return hnp.arrays(np.int64, st.integers(min_size, max_size), elements=st.integers(0, vocab - 1))


def decoder_constant_g(ref: Decoder, G: list[np.ndarray]) -> Decoder:
    """``ref`` with every head's metric made invariant: head h of layer l has G(X) = G[l][h]."""
    p = ref.params
    layers = []
    for li, layer in enumerate(p.layers):
        heads = [with_constant_g(hp, G[li][h]) for h, hp in enumerate(layer.mha.heads)]
        layers.append(dataclasses.replace(layer, mha=dataclasses.replace(layer.mha, heads=heads)))
    return Decoder(dataclasses.replace(p, layers=layers))


@st.composite
def decoder_g(draw, ref: Decoder, scale: float = 1.0, commutant: bool = False) -> list[np.ndarray]:
    """Per-layer ``(H, dk, dk)`` operators ``I + N`` (N drawn; in the commutant if asked)."""
    mha = ref.params.layers[0].mha
    H, dk = mha.num_heads, mha.dk
    out = []
    for _ in ref.params.layers:
        hs = []
        for _ in range(H):
            N = draw(commutant_matrix(dk, scale)) if commutant else draw(arrays((dk, dk), scale))
            hs.append(np.eye(dk) + N / dk)
        out.append(np.stack(hs))
    return out


@st.composite
def prompted_decoders(draw, impl, max_tokens: int = 6):
    """``(ref, G, toks, n)``: a decoder with a proved pass bound in ``impl``.

    :func:`small_decoder` with :func:`proved_layers`, per-layer metrics (:func:`decoder_g`),
    2 to ``max_tokens`` tokens and a prompt length ``n`` in ``1 .. len(toks) - 1``.
    """
    ref = draw(small_decoder(**proved_layers(impl)), label="decoder")
    G = draw(decoder_g(ref), label="G")
    toks = draw(tokens(16, 2, max_tokens), label="tokens")
    return ref, G, toks, draw(st.integers(1, len(toks) - 1), label="prompt")


# --------------------------------------------------------------------------- exact
@st.composite
def pythagorean(draw, nonzero_sin: bool = True) -> tuple[Fraction, Fraction]:
    """An exact rational point ``(c, s)`` on the unit circle: ``((m^2-n^2)/r, 2mn/r)``."""
    m = draw(st.integers(-12, 12))
    n = draw(st.integers(1 if nonzero_sin else 0, 12))
    if m == 0 and n == 0:
        m = 1
    if nonzero_sin and m == 0:
        m = 1  # s = 2mn / r must be non-zero
    r = m * m + n * n
    return Fraction(m * m - n * n, r), Fraction(2 * m * n, r)


def fractions(bound: int = 9, denom: int = 7) -> st.SearchStrategy[Fraction]:
    """Small rationals ``p / q`` with ``|p| <= bound``, ``1 <= q <= denom``."""
    return st.builds(Fraction, st.integers(-bound, bound), st.integers(1, denom))


def fraction_matrix(rows: int, cols: int, **kw) -> st.SearchStrategy[list[list[Fraction]]]:
    """A ``rows x cols`` matrix of small rationals (list of lists)."""
    return st.lists(
        st.lists(fractions(**kw), min_size=cols, max_size=cols), min_size=rows, max_size=rows
    )
