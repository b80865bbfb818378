"""The decoder of ``docs/plga-spec.md`` (section 6, with the caches of section 7), in NumPy.

Built on the heads of :mod:`examples.numpy_plga` (which exposes it as its ``decoder``
capability). Post-LayerNorm layers; the metric learner is shared by a layer's heads
(``heads[h]`` carry identical learner weights, so each head simply uses its own).
Decoding: a prompt pass, then one token at a time with a KV-cache of rotated keys and
values and, per layer, the prompt's G (G-cache) or the prompt's metric-learner output A.
"""

from __future__ import annotations

import numpy as np

from examples.numpy_plga import _swiglu_block, layer_norm_rows


class NumpyDecoder:
    """A decoder with the given :class:`~pyverify.reference.DecoderParams`."""

    def __init__(self, head, params) -> None:
        self.head, self.p = head, params

    def _embed(self, tokens):
        p = self.p
        x = p.embedding[np.asarray(tokens, dtype=np.int64)] * np.sqrt(p.embedding.shape[1])
        return layer_norm_rows(x, p.ln_gamma, p.ln_beta, p.ln_eps)

    def _mha(self, x, m, cache, offset, G=None, A=None):
        """One attention block on new rows ``x``; ``cache`` holds earlier (k, v) per head."""
        S, H = x.shape[0], len(m.heads)
        dk = m.Wq.shape[1] // H
        split = lambda y: y.reshape(S, H, dk).transpose(1, 0, 2)  # noqa: E731
        q = self.head.rope(split(x @ m.Wq + m.bq), offset=offset)
        k = self.head.rope(split(x @ m.Wk + m.bk), offset=offset)
        v = split(x @ m.Wv + m.bv)
        if cache is not None:
            k, v = np.concatenate([cache[0], k], axis=1), np.concatenate([cache[1], v], axis=1)
        res = [self.head.plga(q[h], k[h], v[h], m.heads[h], causal=True,
                              G=None if G is None else G[h], A=None if A is None else A[h])
               for h in range(H)]  # fmt: skip
        out = np.stack([r["out"] for r in res], axis=1).reshape(S, H * dk) @ m.Wo + m.bo
        return out, res, (k, v)

    def _run(self, x, offset=0, caches=None, Gs=None, As=None):
        """All layers on new rows ``x``: logits, per-layer head results, new caches."""
        deds, new = [], []
        for i, layer in enumerate(self.p.layers):
            past = None if caches is None else caches[i]
            G, A = (None if Gs is None else Gs[i]), (None if As is None else As[i])
            h, res, kv = self._mha(x, layer.mha, past, offset, G, A)
            x1 = layer_norm_rows(h + x, layer.ln1_gamma, layer.ln1_beta, layer.ln_eps)
            f = _swiglu_block(x1, layer.ffn)
            x = layer_norm_rows(f + x1, layer.ln2_gamma, layer.ln2_beta, layer.ln_eps)
            deds.append(res)
            new.append(kv)
        return x @ self.p.W_out + self.p.b_out, deds, new

    def forward(self, tokens, G=None):
        """Logits ``(S, vocab)``; with ``G`` (per layer ``(H, dk, dk)``) the G-cached model."""
        return self._run(self._embed(tokens), Gs=G)[0]

    def deductive(self, tokens):
        """``[layer][head]`` head results of an uncached forward."""
        return self._run(self._embed(tokens))[1]

    def decode(self, prompt, rest, *, G=None, use_g_cache=True):
        """Prompt pass, then one KV-cached step per token of ``rest`` (G- or A-cache)."""
        _, deds, caches = self._run(self._embed(prompt), Gs=G)
        Gs, As = G, None
        if G is None:
            stack = lambda key: [np.stack([r[key] for r in layer]) for layer in deds]  # noqa: E731
            Gs, As = (stack("G"), None) if use_g_cache else (None, stack("A"))
        logits, pos = [], len(prompt)
        for tok in rest:
            out, _, caches = self._run(self._embed([tok]), pos, caches, Gs, As)
            logits.append(out[0])
            pos += 1
        return np.array(logits)
