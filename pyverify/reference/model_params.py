"""Parameters of the float64 reference decoder (see :mod:`pyverify.reference.model`).

:class:`MHAParams` (one layer's attention: projections and one
:class:`~pyverify.reference.params.PLGAParams` per head, whose metric learner is
shared by all heads in the ``pldr_model_v510`` form), :class:`DecoderLayerParams`
and :class:`DecoderParams`, with seeded random draws.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from pyverify.errors import InputTypeError, InputValueError
from pyverify.reference.params import LN_EPS, PLGAParams, SwiGLUBlock, learners_equal
from pyverify.reference.rope import ROPE_BASE
from pyverify.reference.validation import as_float_array, check_positive_int

__all__ = ["DecoderLayerParams", "DecoderParams", "MHAParams"]

Array = NDArray[np.float64]


def _linear(rng: np.random.Generator, d_in: int, d_out: int) -> tuple[Array, Array]:
    return rng.normal(0.0, 1.0 / np.sqrt(d_in), (d_in, d_out)), rng.normal(0.0, 0.02, d_out)


def _ln(rng: np.random.Generator, n: int) -> tuple[Array, Array]:
    return 1.0 + rng.normal(0.0, 0.1, n), rng.normal(0.0, 0.1, n)


@dataclass(frozen=True)
class MHAParams:
    """Multi-head PLGA attention parameters (row convention ``x @ Wq + bq``).

    Attributes
    ----------
    Wq, Wk, Wv, Wo : numpy.ndarray
        Projections, shape ``(d_model, d_model)``.
    bq, bk, bv, bo : numpy.ndarray
        Biases, shape ``(d_model,)``.
    heads : list of PLGAParams
        One set of head parameters per head (``dk = d_model / H``); in the
        shared form all heads carry the same learner (``ln0_*``, ``reslayers``).
    rope_base : float
        RoPE base (10000).
    """

    Wq: Array
    bq: Array
    Wk: Array
    bk: Array
    Wv: Array
    bv: Array
    Wo: Array
    bo: Array
    heads: list[PLGAParams]
    rope_base: float = ROPE_BASE

    @property
    def num_heads(self) -> int:
        """Number of heads ``H``."""
        return len(self.heads)

    @property
    def d_model(self) -> int:
        """Model width."""
        return int(self.Wq.shape[0])

    @property
    def dk(self) -> int:
        """Head width ``d_model / H``."""
        return self.d_model // self.num_heads

    @property
    def shared_learner(self) -> bool:
        """True when every head's metric learner equals head 0's (``pldr_model_v510``)."""
        return learners_equal(self.heads)

    @classmethod
    def random(
        cls,
        d_model: int,
        num_heads: int,
        a_dff: int,
        num_reslayer: int,
        num_dense: int,
        rng: np.random.Generator,
        *,
        shared_learner: bool = True,
    ) -> MHAParams:
        """Draw random parameters (weights ``N(0, 1/fan_in)``).

        Parameters
        ----------
        d_model, num_heads : int
            Width and number of heads (``d_model / num_heads`` even).
        a_dff, num_reslayer, num_dense : int
            Metric-learner sizes, as :meth:`PLGAParams.random`.
        rng : numpy.random.Generator
            Source of randomness.
        shared_learner : bool, default True
            One learner for all heads (the model's form; head 0's is used by
            all), or one per head.

        Returns
        -------
        MHAParams
            The parameters.
        """
        if d_model % num_heads:
            raise InputValueError(
                f"d_model ({d_model}) must be divisible by num_heads ({num_heads})"
            )
        dk = d_model // num_heads
        check_positive_int(dk, "dk = d_model / num_heads", even=True)
        mats = {}
        for n in "qkvo":
            mats[f"W{n}"], mats[f"b{n}"] = _linear(rng, d_model, d_model)
        heads = [
            PLGAParams.random(dk, a_dff, num_reslayer, num_dense, int(rng.integers(2**31)))
            for _ in range(num_heads)
        ]
        if shared_learner:
            h0 = heads[0]
            heads = [
                replace(h, ln0_gamma=h0.ln0_gamma, ln0_beta=h0.ln0_beta, reslayers=h0.reslayers)
                for h in heads
            ]
        return cls(heads=heads, **mats)

    def validate(self) -> MHAParams:
        """Check shapes, dtypes and finiteness of every field.

        Returns
        -------
        MHAParams
            ``self``.

        Raises
        ------
        TypeError, ValueError
            Naming the bad field.
        """
        if not self.heads:
            raise InputValueError("mha.heads must hold at least one PLGAParams")
        d = int(np.shape(self.Wq)[0]) if np.ndim(self.Wq) == 2 else -1
        for n in "qkvo":
            as_float_array(getattr(self, f"W{n}"), f"mha.W{n}", shape=(d, d))
            as_float_array(getattr(self, f"b{n}"), f"mha.b{n}", shape=(d,))
        if d % self.num_heads:
            raise InputValueError(f"mha: d_model ({d}) must be divisible by num_heads")
        check_positive_int(self.dk, "dk = d_model / num_heads", even=True)
        for i, h in enumerate(self.heads):
            if not isinstance(h, PLGAParams):
                raise InputTypeError(f"mha.heads[{i}] must be a PLGAParams")
            h.validate(self.dk)
        return self


@dataclass(frozen=True)
class DecoderLayerParams:
    """One post-LayerNorm decoder layer.

    Attributes
    ----------
    mha : MHAParams
        Attention.
    ln1_gamma, ln1_beta : numpy.ndarray
        LayerNorm after the attention residual, ``(d_model,)``.
    ffn : SwiGLUBlock
        Feed-forward SwiGLU ``d_model -> dff -> d_model``.
    ln2_gamma, ln2_beta : numpy.ndarray
        LayerNorm after the feed-forward residual.
    ln_eps : float
        LayerNorm epsilon (1e-6).
    """

    mha: MHAParams
    ln1_gamma: Array
    ln1_beta: Array
    ffn: SwiGLUBlock
    ln2_gamma: Array
    ln2_beta: Array
    ln_eps: float = LN_EPS


@dataclass(frozen=True)
class DecoderParams:
    """A whole decoder: embedding, layers, output projection.

    Attributes
    ----------
    embedding : numpy.ndarray
        ``(vocab, d_model)``.
    ln_gamma, ln_beta : numpy.ndarray
        LayerNorm applied to the scaled embeddings.
    layers : list of DecoderLayerParams
        The decoder layers.
    W_out, b_out : numpy.ndarray
        Logit projection ``(d_model, vocab)`` and ``(vocab,)``.
    ln_eps : float
        LayerNorm epsilon (1e-6).
    """

    embedding: Array
    ln_gamma: Array
    ln_beta: Array
    layers: list[DecoderLayerParams]
    W_out: Array
    b_out: Array
    ln_eps: float = LN_EPS

    @property
    def vocab(self) -> int:
        """Vocabulary size."""
        return int(self.embedding.shape[0])

    @property
    def d_model(self) -> int:
        """Model width."""
        return int(self.embedding.shape[1])

    @classmethod
    def random(
        cls,
        vocab: int = 32,
        d_model: int = 16,
        num_heads: int = 2,
        num_layers: int = 2,
        dff: int = 24,
        a_dff: int = 12,
        num_reslayer: int = 2,
        num_dense: int = 2,
        seed: int | None = 0,
        shared_learner: bool = True,
    ) -> DecoderParams:
        """Draw a random decoder.

        Parameters
        ----------
        vocab, d_model, num_heads, num_layers, dff : int
            Model sizes (``d_model / num_heads`` even).
        a_dff, num_reslayer, num_dense : int
            Metric-learner sizes of every head.
        seed : int or None, default 0
            Seed of ``numpy.random.default_rng``.
        shared_learner : bool, default True
            One metric learner per layer shared by its heads (the model's
            form), or one per head (the generalisation).

        Returns
        -------
        DecoderParams
            The parameters.
        """
        rng = np.random.default_rng(seed)
        layers = []
        for _ in range(num_layers):
            mha = MHAParams.random(
                d_model, num_heads, a_dff, num_reslayer, num_dense, rng,
                shared_learner=shared_learner,
            )  # fmt: skip
            g1, b1 = _ln(rng, d_model)
            g2, b2 = _ln(rng, d_model)
            ffn = SwiGLUBlock.random(d_model, dff, d_model, rng)
            layers.append(DecoderLayerParams(mha, g1, b1, ffn, g2, b2))
        g, b = _ln(rng, d_model)
        W_out, b_out = _linear(rng, d_model, vocab)
        emb = rng.normal(0.0, 1.0, (vocab, d_model))
        return cls(emb, g, b, layers, W_out, b_out)
