"""A small PLGA implementation written from ``docs/plga-spec.md`` alone (NumPy, float64).

It imports nothing from pyverify's numerics: only the parameter dataclasses it is handed
and the error class the spec asks for on overflow. ``pyverify check --impl
examples.numpy_plga:factory`` runs the theorem suite on it (capabilities ``head``,
``rope``, ``batched``, and ``decoder`` from :mod:`examples.numpy_decoder`).
"""

from __future__ import annotations

import numpy as np

from pyverify.errors import PowerLawOverflowError

BASE = 10000.0  # RoPE base


def _silu(x):
    return x / (1.0 + np.exp(-np.clip(x, -700, 700)))


def _finite(x, stage):
    if not np.all(np.isfinite(x)):
        raise PowerLawOverflowError(stage, f"{stage} is not finite in float64")
    return x


def layer_norm_rows(X, gamma, beta, eps):
    """Each row ``(x - mean) / sqrt(var + eps) * gamma + beta``."""
    X = np.asarray(X, dtype=np.float64)
    mu = X.mean(axis=-1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)
    return (X - mu) / np.sqrt(var + eps) * gamma + beta


def _swiglu_block(x, blk):
    return (_silu(x @ blk.W1 + blk.b1) * (x @ blk.W2 + blk.b2)) @ blk.W3 + blk.b3


def learner(D, p):
    """Steps 2-3 from the density operator: ``A = Phi(LayerNorm_rows(D))``."""
    A = layer_norm_rows(D, p.ln0_gamma, p.ln0_beta, p.ln_eps)
    for unit in p.reslayers:
        f = A
        for blk in unit.dense:
            f = _swiglu_block(f, blk)
        A = layer_norm_rows(A + f, unit.ln_gamma, unit.ln_beta, p.ln_eps)
    return A


def energy(A, p):
    """Steps 4-6: ``A_LM = iSwiGLU(W A + b) + eps``, ``A_P = A_LM ** P``, ``G = a A_P + b_a``."""
    with np.errstate(over="ignore", invalid="ignore"):
        Z = p.W @ A + p.b
        A_LM = _finite(Z * _silu(Z) + p.metric_eps, "metric_tensor")
        A_P = _finite(A_LM**p.P, "power_law")
        return A_LM, A_P, _finite(p.a @ A_P + p.b_a, "energy_curvature")


class NumpyPLGA:
    """Capabilities head, rope, batched, decoder; float64 on the CPU."""

    name = "numpy-example"
    capabilities = ("head", "rope", "batched", "decoder")
    devices = ("cpu",)
    dtypes = ("float64",)
    energy = staticmethod(energy)  # steps 4-6 (a variant may replace them)

    def scores(self, q, k, G):
        """``Q G K^T / sqrt(dk)``."""
        return (np.asarray(q) @ G) @ np.asarray(k).T / np.sqrt(np.shape(q)[1])

    def softmax(self, E, *, causal=False):
        """Row softmax with its max shift; masked entries exactly 0."""
        E = np.asarray(E, dtype=np.float64)
        s_q, s_k = E.shape
        allowed = np.ones(E.shape, bool)
        if causal:  # aligned to the key end: query i sees keys j <= i + s_k - s_q
            allowed = np.arange(s_k)[None, :] <= np.arange(s_q)[:, None] + (s_k - s_q)
        shift = np.max(np.where(allowed, E, -np.inf), axis=1, keepdims=True)
        w = np.where(allowed, np.exp(np.where(allowed, E - shift, 0.0)), 0.0)
        return w / w.sum(axis=1, keepdims=True)

    def plga(self, q, k, v, params, *, G=None, A=None, causal=True):
        """One head: steps 1-8 (``G`` given: 7-8; ``A`` given: 4-8)."""
        q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
        ded = dict(A=None, A_LM=None, A_P=None)
        if G is None and A is not None:
            A_LM, A_P, G = self.energy(np.asarray(A, dtype=np.float64), params)
            ded = dict(A=np.asarray(A), A_LM=A_LM, A_P=A_P)
        elif G is None:
            A = learner(self.density(q), params)  # D = Q^T Q over all S rows
            A_LM, A_P, G = self.energy(A, params)
            ded = dict(A=A, A_LM=A_LM, A_P=A_P)
        E = self.scores(q, k, np.asarray(G, dtype=np.float64))
        w = self.softmax(E, causal=causal)
        return dict(out=w @ v, G=np.asarray(G, dtype=np.float64), weights=w, E=E, **ded)

    def sdpa(self, q, k, v, *, causal=True):
        """Plain SDPA: ``softmax(Q K^T / sqrt(dk)) V``."""
        return self.softmax(self.scores(q, k, np.eye(np.shape(q)[1])), causal=causal) @ v

    def density(self, q):
        """``D = Q^T Q`` (all rows)."""
        return np.asarray(q).T @ np.asarray(q)

    def layer_norm_rows(self, X, gamma, beta, eps):
        """The row LayerNorm of step 2."""
        return layer_norm_rows(X, gamma, beta, eps)

    def rotation_matrix(self, n, dk):
        """Block-diagonal ``R_n``: ``rot(n theta_p)`` on adjacent planes."""
        R = np.zeros((dk, dk))
        for p in range(dk // 2):
            c, s = np.cos(n * BASE ** (-2 * p / dk)), np.sin(n * BASE ** (-2 * p / dk))
            R[2 * p : 2 * p + 2, 2 * p : 2 * p + 2] = [[c, -s], [s, c]]
        return R

    def rope(self, x, *, offset=0):
        """Row at position ``offset + n`` becomes ``x R_n^T``."""
        x = np.asarray(x, dtype=np.float64)
        rows = [x[..., n, :] @ self.rotation_matrix(offset + n, x.shape[-1]).T
                for n in range(x.shape[-2])]  # fmt: skip
        return np.stack(rows, axis=-2)

    def plga_batched(self, q, k, v, heads, *, G=None):
        """``(B, H, S, dk)``: one head call per ``(b, h)``."""
        B, H = np.shape(q)[:2]
        G = None if G is None else np.broadcast_to(G, (B, H, *np.shape(G)[-2:]))
        return [[self.plga(q[b, h], k[b, h], v[b, h], heads[h],
                           G=None if G is None else G[b, h]) for h in range(H)]
                for b in range(B)]  # fmt: skip

    def decoder(self, ref):
        """The decoder of the spec with ``ref``'s parameters (these heads inside)."""
        from examples.numpy_decoder import NumpyDecoder

        return NumpyDecoder(self, ref.params)


def factory(device: str = "cpu", dtype: str = "float64") -> NumpyPLGA:
    """The example implementation (one device, one dtype)."""
    return NumpyPLGA()
