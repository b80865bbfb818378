"""A PLGA implementation written from ``docs/plga-spec.md`` and ``docs/conformance.md`` alone.

It proves the two pages suffice: NumPy only (nothing numerical from pyverify; the error
class for an overflow is the one the spec names), written without reading the shipped
reference or ``examples/``. ``test_spec_adapter.py`` runs ``pyverify check`` on it and on
its one-defect variants (the factories below ``factory``).
"""

from __future__ import annotations

import numpy as np

from pyverify.errors import PowerLawOverflowError

ROPE_BASE = 10000.0


def sigmoid(z):
    """``1 / (1 + exp(-z))`` without overflow."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1 / (1 + e), e / (1 + e))


def swiglu(x, blk):
    """``(silu(x W1 + b1) * (x W2 + b2)) W3 + b3`` on rows."""
    h = x @ blk.W1 + blk.b1
    return (h * sigmoid(h) * (x @ blk.W2 + blk.b2)) @ blk.W3 + blk.b3


def row_layer_norm(X, gamma, beta, eps):
    """Each row: ``(x - mean) / sqrt(biased var + eps) * gamma + beta``."""
    c = X - X.mean(axis=-1, keepdims=True)
    return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + eps) * gamma + beta


def _finite(x, stage):
    if not np.isfinite(x).all():
        raise PowerLawOverflowError(stage, f"{stage} left float64's range")
    return x


def allowed_keys(s_q, s_k):
    """Causal mask aligned to the key end: query i sees keys j <= i + s_k - s_q."""
    return np.arange(s_k)[None, :] <= np.arange(s_q)[:, None] + (s_k - s_q)


class SpecHead:
    """Groups head, rope, batched and decoder, float64 on the CPU."""

    name = "spec-adapter"
    capabilities = ("head", "rope", "batched", "decoder")
    devices = ("cpu",)
    dtypes = ("float64",)

    # ---------------------------------------------------------------- head
    def metric(self, A, p):
        """Steps 4-6 from A."""
        with np.errstate(over="ignore", invalid="ignore"):
            Z = p.W @ A + p.b
            A_LM = _finite(Z * Z * sigmoid(Z) + p.metric_eps, "metric_tensor")
            A_P = _finite(np.power(A_LM, p.P), "power_law")
            return A_LM, A_P, _finite(p.a @ A_P + p.b_a, "energy_curvature")

    def learner(self, q, p):
        """Steps 1-3: A from the queries."""
        X = row_layer_norm(q.T @ q, p.ln0_gamma, p.ln0_beta, p.ln_eps)
        for unit in p.reslayers:
            Y = X
            for blk in unit.dense:
                Y = swiglu(Y, blk)
            X = row_layer_norm(X + Y, unit.ln_gamma, unit.ln_beta, p.ln_eps)
        return X

    def scores(self, q, k, G):
        """``Q G K^T / sqrt(dk)``."""
        q = np.asarray(q, float)
        return q @ np.asarray(G, float) @ np.asarray(k, float).T / np.sqrt(q.shape[1])

    def softmax(self, E, *, causal=False):
        """Masked rows: masked entries excluded from max and sum, weight exactly 0."""
        E = np.asarray(E, float)
        ok = allowed_keys(*E.shape) if causal else np.ones(E.shape, bool)
        m = np.where(ok, E, -np.inf).max(axis=1, keepdims=True)
        w = np.where(ok, np.exp(np.where(ok, E - m, 0.0)), 0.0)
        return w / w.sum(axis=1, keepdims=True)

    def plga(self, q, k, v, params, *, G=None, A=None, causal=True):
        """Steps 1-8 (G given: 7-8; A given: 4-8)."""
        q, k, v = (np.asarray(x, float) for x in (q, k, v))
        res = {}
        if G is None:
            A = self.learner(q, params) if A is None else np.asarray(A, float)
            res["A"] = A
            res["A_LM"], res["A_P"], G = self.metric(A, params)
        E = self.scores(q, k, G)
        w = self.softmax(E, causal=causal)
        return {**res, "G": np.asarray(G, float), "E": E, "weights": w, "out": w @ v}

    def sdpa(self, q, k, v, *, causal=True):
        """SDPA: the head with G = I."""
        q = np.asarray(q, float)
        return self.softmax(self.scores(q, k, np.eye(q.shape[1])), causal=causal) @ v

    def collapsed(self, q, k, v, G, *, causal=True):
        """Generalised SDPA: SDPA on the queries Q G."""
        return self.sdpa(np.asarray(q, float) @ G, k, v, causal=causal)

    def density(self, q):
        """``Q^T Q``."""
        q = np.asarray(q, float)
        return q.T @ q

    def layer_norm_rows(self, X, gamma, beta, eps):
        """The row LayerNorm of step 2."""
        return row_layer_norm(np.asarray(X, float), gamma, beta, eps)

    # ---------------------------------------------------------------- rope
    def angles(self, positions, dk):
        """``n theta_p`` for each position n and plane p, ``theta_p = base^(-2p/dk)``."""
        theta = ROPE_BASE ** (-np.arange(dk // 2) * 2.0 / dk)
        return np.asarray(positions, float)[..., None] * theta

    def rope(self, x, *, offset=0):
        """Adjacent planes (2p, 2p+1); row i at position offset + i."""
        x = np.asarray(x, float)
        ang = self.angles(offset + np.arange(x.shape[-2]), x.shape[-1])
        c, s = np.cos(ang), np.sin(ang)
        y = np.empty_like(x)
        y[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
        y[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
        return y

    def rotation_matrix(self, n, dk):
        """Block-diagonal R_n, blocks [[cos, -sin], [sin, cos]]."""
        R = np.zeros((dk, dk))
        for p, a in enumerate(self.angles(n, dk)):
            c, s = np.cos(a), np.sin(a)
            R[2 * p : 2 * p + 2, 2 * p : 2 * p + 2] = [[c, -s], [s, c]]
        return R

    # ---------------------------------------------------------------- batched
    def plga_batched(self, q, k, v, heads, *, G=None):
        """(B, H, S, dk): one head per slice; G (H, ..) or (B, H, ..)."""
        B, H = np.shape(q)[:2]
        Gs = None if G is None else np.broadcast_to(G, (B, H, *np.shape(G)[-2:]))
        return [
            [self.plga(q[b][h], k[b][h], v[b][h], heads[h], G=None if Gs is None else Gs[b, h])
             for h in range(H)]
            for b in range(B)
        ]  # fmt: skip

    # ---------------------------------------------------------------- decoder
    def decoder(self, ref):
        """The decoder of spec section 6 on ``ref.params``."""
        return SpecDecoder(self, ref.params)


class SpecDecoder:
    """Post-LayerNorm decoder; decoding with a KV-cache and the prompt's G or A."""

    def __init__(self, head: SpecHead, p) -> None:
        self.head, self.p = head, p

    def embed(self, tokens):
        p = self.p
        x = p.embedding[np.asarray(tokens, int)] * np.sqrt(p.embedding.shape[1])
        return row_layer_norm(x, p.ln_gamma, p.ln_beta, p.ln_eps)

    def layer(self, x, lp, pos, kv=None, G=None, A=None):
        """One layer on new rows at positions pos..; returns (x, head results, (k, v))."""
        m, S = lp.mha, x.shape[0]
        H = len(m.heads)
        dk = m.Wq.shape[1] // H

        def heads(W, b):
            return (x @ W + b).reshape(S, H, dk).transpose(1, 0, 2)

        q = self.head.rope(heads(m.Wq, m.bq), offset=pos)
        k = self.head.rope(heads(m.Wk, m.bk), offset=pos)
        v = heads(m.Wv, m.bv)
        if kv is not None:
            k, v = np.concatenate([kv[0], k], axis=1), np.concatenate([kv[1], v], axis=1)
        res = [
            self.head.plga(q[h], k[h], v[h], m.heads[h],
                           G=None if G is None else G[h], A=None if A is None else A[h])
            for h in range(H)
        ]  # fmt: skip
        att = np.concatenate([r["out"] for r in res], axis=1) @ m.Wo + m.bo
        x1 = row_layer_norm(att + x, lp.ln1_gamma, lp.ln1_beta, lp.ln_eps)
        x2 = row_layer_norm(swiglu(x1, lp.ffn) + x1, lp.ln2_gamma, lp.ln2_beta, lp.ln_eps)
        return x2, res, (k, v)

    def run(self, x, pos=0, kvs=None, Gs=None, As=None):
        results, caches = [], []
        for i, lp in enumerate(self.p.layers):
            x, res, kv = self.layer(
                x, lp, pos, None if kvs is None else kvs[i],
                None if Gs is None else Gs[i], None if As is None else As[i],
            )  # fmt: skip
            results.append(res)
            caches.append(kv)
        return x @ self.p.W_out + self.p.b_out, results, caches

    def forward(self, tokens, G=None):
        """Logits (S, vocab); G: per layer (H, dk, dk)."""
        return self.run(self.embed(tokens), Gs=G)[0]

    def deductive(self, tokens):
        """[layer][head] head results of an uncached pass."""
        return self.run(self.embed(tokens))[1]

    def decode(self, prompt, rest, *, G=None, use_g_cache=True):
        """Prompt pass, then one KV-cached step per token of ``rest``."""
        _, results, kvs = self.run(self.embed(prompt), Gs=G)
        Gs, As = G, None
        if G is None:
            per_layer = [np.stack([r["G" if use_g_cache else "A"] for r in res]) for res in results]
            Gs, As = (per_layer, None) if use_g_cache else (None, per_layer)
        out = []
        for i, tok in enumerate(rest):
            logits, _, kvs = self.run(self.embed([tok]), len(prompt) + i, kvs, Gs, As)
            out.append(logits[0])
        return np.array(out)


def factory(device: str = "cpu", dtype: str = "float64") -> SpecHead:
    """The implementation as the spec describes it."""
    return SpecHead()


# ---------------------------------------------------------------- one defect each
def _variant(name: str, **methods):
    cls = type(name.title().replace("-", ""), (SpecHead,), {"name": name, **methods})

    def make(device: str = "cpu", dtype: str = "float64") -> SpecHead:
        return cls()

    return make


def _no_scale(self, q, k, G):  # the 1/sqrt(dk) left out
    return np.asarray(q, float) @ np.asarray(G, float) @ np.asarray(k, float).T


def _g_transposed(self, q, k, G):  # Q G^T K^T
    return SpecHead.scores(self, q, k, np.asarray(G, float).T)


def _neox_rope(self, x, *, offset=0):  # planes (p, p + dk/2), as NeoX-style code pairs them
    x = np.asarray(x, float)
    half = x.shape[-1] // 2
    ang = self.angles(offset + np.arange(x.shape[-2]), x.shape[-1])
    c, s = np.cos(ang), np.sin(ang)
    lo, hi = x[..., :half], x[..., half:]
    return np.concatenate([lo * c - hi * s, lo * s + hi * c], axis=-1)


def _neox_matrix(self, n, dk):
    R = np.zeros((dk, dk))
    for p, a in enumerate(self.angles(n, dk)):
        i, j = p, p + dk // 2
        R[i, i], R[i, j], R[j, i], R[j, j] = np.cos(a), -np.sin(a), np.sin(a), np.cos(a)
    return R


def _plga_then(edit):
    def plga(self, q, k, v, params, *, G=None, A=None, causal=True):
        res = SpecHead.plga(self, q, k, v, params, G=G, A=A, causal=causal)
        return {**res, "out": edit(res["out"])}

    return plga


def _scores_complex(self, q, k, G):
    return SpecHead.scores(self, q, k, G) + 3j


def _softmax_minus_1e9(self, E, *, causal=False):  # an additive mask, as pldr_model_v510
    E = np.asarray(E, float)
    if causal:
        E = E + np.where(allowed_keys(*E.shape), 0.0, -1e9)
    w = np.exp(E - E.max(axis=1, keepdims=True))
    return w / w.sum(axis=1, keepdims=True)


no_scale = _variant("spec-no-scale", scores=_no_scale)
g_transposed = _variant("spec-g-transposed", scores=_g_transposed)
neox_rope = _variant("spec-neox-rope", rope=_neox_rope, rotation_matrix=_neox_matrix)
complex_out = _variant("spec-complex-out", plga=_plga_then(lambda o: o + 7j))
complex_scores = _variant("spec-complex-scores", scores=_scores_complex)
mask_minus_1e9 = _variant("spec-mask-1e9", softmax=_softmax_minus_1e9)
wrong_shape = _variant("spec-wrong-shape", plga=_plga_then(lambda o: np.hstack([o, o])))
int_dtype = _variant("spec-int-dtype", plga=_plga_then(lambda o: np.rint(o).astype(np.int64)))
nan_out = _variant("spec-nan-out", plga=_plga_then(lambda o: o * np.nan))
