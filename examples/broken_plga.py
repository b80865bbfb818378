"""Deliberately broken variants of ``examples/numpy_plga.py``: each one bug, one theorem.

The test suite runs ``pyverify check`` on each and asserts that it fails under the theorem
ID its bug violates, and that IDs the bug cannot touch still pass:

``g_transposed``
    scores ``Q G^T K^T`` instead of ``Q G K^T`` (the operator's orientation). G = I, the
    softmax and RoPE are untouched; a non-symmetric constant G* no longer equals SDPA on
    ``Q G*``: ``collapse_absorption``.
``rope_off_by_one``
    rotates row n at position ``n + 1`` (an offset error). Still a group action and still
    relative-position for commuting G, but ``R_0 != I``: the rotation of a row at a given
    position is wrong, which ``rope_group``'s application test sees (``rope(x, offset)``
    must equal ``x R_{offset + n}^T`` for the implementation's own ``rotation_matrix``).
``softmax_no_shift``
    ``exp(E) / sum exp(E)`` without subtracting the row maximum: overflows for large
    scores, so adding a large constant to a row changes (NaNs) the result:
    ``softmax_shift``. RoPE (``rope_group``) cannot be affected.
``g_cache_wrong_layer``
    token-by-token decoding reads layer 0's G-cache in every layer (the prompt pass and
    the uncached forward are right): ``incremental_decoding`` and the decoding tests of
    ``cache_equivalence`` fail (for two or more layers); heads, softmax and RoPE cannot be
    affected.
``no_metric_eps``
    ``A_LM = iSwiGLU(W A + b)`` without ``+ eps``: entries can be exactly 0, so
    ``metric_positivity`` (A_LM > 0) fails. Softmax and RoPE cannot be affected.
"""

from __future__ import annotations

import numpy as np

import examples.numpy_plga as base
from examples.numpy_decoder import NumpyDecoder


class GTransposed(base.NumpyPLGA):
    """Scores with ``G^T``."""

    name = "broken-g-transposed"

    def scores(self, q, k, G):
        """``Q G^T K^T / sqrt(dk)`` (the bug)."""
        return super().scores(q, k, np.asarray(G).T)


class RopeOffByOne(base.NumpyPLGA):
    """Row n rotated at position ``offset + n + 1``."""

    name = "broken-rope-off-by-one"

    def rope(self, x, *, offset=0):
        """Rotation one position too far (the bug)."""
        return super().rope(x, offset=offset + 1)


class SoftmaxNoShift(base.NumpyPLGA):
    """Softmax without its max shift."""

    name = "broken-softmax-no-shift"

    def softmax(self, E, *, causal=False):
        """``exp(E)`` normalised, masked entries 0, no shift (the bug)."""
        E = np.asarray(E, dtype=np.float64)
        s_q, s_k = E.shape
        allowed = np.ones(E.shape, bool)
        if causal:
            allowed = np.arange(s_k)[None, :] <= np.arange(s_q)[:, None] + (s_k - s_q)
        with np.errstate(over="ignore", invalid="ignore"):
            w = np.where(allowed, np.exp(np.where(allowed, E, 0.0)), 0.0)
            return w / w.sum(axis=1, keepdims=True)


class _WrongLayerDecoder(NumpyDecoder):
    def _run(self, x, offset=0, caches=None, Gs=None, As=None):
        if caches is not None and Gs is not None:  # a decoding step: the bug
            Gs = [Gs[0]] * len(Gs)
        return super()._run(x, offset, caches, Gs, As)


class GCacheWrongLayer(base.NumpyPLGA):
    """Decoding steps use layer 0's G-cache everywhere."""

    name = "broken-g-cache-wrong-layer"

    def decoder(self, ref):
        """The example's decoder with the wrong-layer G-cache."""
        return _WrongLayerDecoder(self, ref.params)


def _energy_without_eps(A, p):
    with np.errstate(over="ignore", invalid="ignore"):
        Z = p.W @ A + p.b
        A_LM = Z * base._silu(Z)  # the bug: no + metric_eps
        A_P = base._finite(A_LM**p.P, "power_law")
        return A_LM, A_P, base._finite(p.a @ A_P + p.b_a, "energy_curvature")


class NoMetricEps(base.NumpyPLGA):
    """``A_LM`` without its ``+ eps``."""

    name = "broken-no-metric-eps"
    energy = staticmethod(_energy_without_eps)


def g_transposed(device: str = "cpu", dtype: str = "float64") -> GTransposed:
    """Factory of :class:`GTransposed`."""
    return GTransposed()


def rope_off_by_one(device: str = "cpu", dtype: str = "float64") -> RopeOffByOne:
    """Factory of :class:`RopeOffByOne`."""
    return RopeOffByOne()


def softmax_no_shift(device: str = "cpu", dtype: str = "float64") -> SoftmaxNoShift:
    """Factory of :class:`SoftmaxNoShift`."""
    return SoftmaxNoShift()


def no_metric_eps(device: str = "cpu", dtype: str = "float64") -> NoMetricEps:
    """Factory of :class:`NoMetricEps`."""
    return NoMetricEps()


def g_cache_wrong_layer(device: str = "cpu", dtype: str = "float64") -> GCacheWrongLayer:
    """Factory of :class:`GCacheWrongLayer`."""
    return GCacheWrongLayer()
