"""Adapter: the paper author's ``pldr_model_v510`` code under the theorem suite.

Set ``PYVERIFY_AUTHOR_SRC`` to a checkout of ``burcgokden/PLDR-LLM-with-KVG-cache`` (its
code is not copied here), then::

    PYVERIFY_AUTHOR_SRC=/path/to/checkout pyverify check --impl examples.author_v510:factory

What runs is their code: the head is their ``plga_layer`` (``cg_align_one``: iSwiGLU,
``+1e-9``, ``torch.pow``, ``a A_P + b_a``, ``/ sqrt(dk)``, ``mask * -1e9``, softmax), the
metric learner is their ``plgMultiHeadAttention.layernorm1`` and ``ResLayerA`` units, and
RoPE is the ``RotaryPositionalEmbeddings`` module their model builds (torchtune's). The
adapter only moves the suite's parameters into their modules (``nn.Linear`` holds
``W^T``) and forms ``D = Q^T Q`` with the same single ``matmul`` as their forward.
Two things are not observable in their API and are rebuilt with their own operation:
``A_P = torch.pow(A_LM, P)`` (their layer returns ``A_LM``, ``P`` and ``G`` but not
``A_P``) and the causal mask (``triu(ones, 1)``, as their training script builds it,
aligned to the key end when there are more keys than queries).

torchtune: their model imports ``torchtune.modules.RotaryPositionalEmbeddings``. If the
``torchtune`` package is importable it is used; otherwise, if it is installed but its
package ``__init__`` cannot import (it needs ``torchao``, ``datasets``, ...), the adapter
loads that one file, ``torchtune/modules/position_embeddings.py``, by path (still
torchtune's code). ``pip install --no-deps --target DIR torchtune==0.6.1`` and
``PYTHONPATH=DIR`` are enough.

Capabilities ``head`` and ``rope`` (float32 as trained, and float64 by ``module.double()``;
their ``sqrt(dk)`` stays float32); their RoPE is a position table, so a rotation at a
negative or non-integer position, and a decoder whose heads have separate metric learners,
are outside its domain (``outside_domain``: Hypothesis draws another example).
"""

from __future__ import annotations

import numpy as np
import torch

from pyverify.collapse.author import author_src, model_module
from pyverify.conformance import outside_domain
from pyverify.conformance.protocol import HeadResult
from pyverify.errors import InputValueError

MAX_SEQ_LEN = 4096
_TORCH = {"float32": torch.float32, "float64": torch.float64}


def _author_modules():
    """Their ``pldr_model_v510``, from the checkout ``PYVERIFY_AUTHOR_SRC`` names."""
    return model_module(author_src("examples.author_v510"), "examples.author_v510")


def _t(x, dtype) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float64)).to(dtype)


def _set_head_stacks(layer: torch.nn.Module, heads: list, dtype: torch.dtype) -> None:
    """Their per-head parameter stacks (Wlst, blst, pwlst, alst, balst) from our heads."""
    for name, f in (("Wlst", "W"), ("blst", "b"), ("pwlst", "P"), ("alst", "a"), ("balst", "b_a")):
        getattr(layer, name).data = _t(np.stack([getattr(h, f) for h in heads]), dtype)


def _set_linear(lin, W, b, dtype) -> None:
    lin.weight.data = _t(np.asarray(W).T, dtype)  # row-vector x @ W is Linear with W^T
    lin.bias.data = _t(b, dtype)


class AuthorV510:
    """Their ``plga_layer`` and metric learner behind the protocol."""

    name = "author-v510"
    capabilities = ("head", "rope", "batched", "decoder")
    devices = ("cpu",)
    dtypes = ("float32", "float64")

    def __init__(self, dtype: str = "float32") -> None:
        self.m = _author_modules()
        self.dtype = _TORCH[dtype]
        self.compute_dtype = dtype
        self._ropes: dict[int, torch.nn.Module] = {}

    # ------------------------------------------------------------------ head
    def _mha(self, params, dk: int):
        """Their multi-head module holding ``params`` (one head, or H sharing a learner)."""
        heads = params if isinstance(params, list) else [params]
        if params is not None and not _shared_learner(heads):
            outside_domain("their metric learner is shared by a layer's heads (one per head here)")
        params = heads[0]
        units = params.reslayers if params is not None else []
        a_dff = units[0].dense[0].W1.shape[1] if units and units[0].dense else 1
        n_dense = len(units[0].dense) if units else 0
        torch.manual_seed(0)  # their constructor initialises at random; all is overwritten
        mha = self.m.plgMultiHeadAttention(
            d_model=dk * len(heads),
            num_heads=len(heads),
            A_dff=a_dff,
            num_reslayerA=len(units),
            num_denseA=n_dense,
        )
        mha = mha.to(self.dtype)
        if params is None:
            return mha
        mha.layernorm1.weight.data = _t(params.ln0_gamma, self.dtype)
        mha.layernorm1.bias.data = _t(params.ln0_beta, self.dtype)
        mha.layernorm1.eps = params.ln_eps
        for unit, mod in zip(units, mha.reslayerAs, strict=True):
            for blk, glu in zip(unit.dense, mod.denseAs, strict=True):
                _set_linear(glu.gluw1, blk.W1, blk.b1, self.dtype)
                _set_linear(glu.gluw2, blk.W2, blk.b2, self.dtype)
                _set_linear(glu.gluw3, blk.W3, blk.b3, self.dtype)
            mod.layernormA.weight.data = _t(unit.ln_gamma, self.dtype)
            mod.layernormA.bias.data = _t(unit.ln_beta, self.dtype)
        layer = mha.plgatt_layer
        _set_head_stacks(layer, heads, self.dtype)
        return mha

    @staticmethod
    def _mask(s_q: int, s_k: int, causal: bool, dtype) -> torch.Tensor | None:
        if not causal:
            return None
        return torch.triu(torch.ones(s_q, s_k, dtype=dtype), diagonal=1 + s_k - s_q)

    def plga(self, q, k, v, params, *, G=None, A=None, causal=True) -> HeadResult:
        """Their head (``plga_layer``), A from their learner unless ``A``/``G`` is given."""
        q4, k4, v4 = (_t(x, self.dtype)[None, None] for x in (q, k, v))
        G4 = None if G is None else _t(G, self.dtype)[None, None]
        A4 = None if A is None else _t(A, self.dtype)[None, None]
        r = self._heads(q4, k4, v4, params, G4, A4, causal)
        return HeadResult(*(None if x is None else x[0, 0] for x in (
            r.out, r.A, r.A_LM, r.A_P, r.G, r.weights, r.E)))  # fmt: skip

    def plga_batched(self, q, k, v, heads, *, G=None) -> HeadResult:
        """Their multi-head layer on ``(B, H, S, dk)`` (one learner shared by the heads)."""
        q4, k4, v4 = (_t(x, self.dtype) for x in (q, k, v))
        G4 = None if G is None else _t(G, self.dtype).expand(*q4.shape[:2], *np.shape(G)[-2:])
        return self._heads(q4, k4, v4, list(heads), G4, None, True)

    def _heads(self, q4, k4, v4, params, G4, A4, causal) -> HeadResult:
        """Stacked results of their layer: learner, then ``plga_layer``."""
        dk = q4.shape[-1]
        mha = self._mha(params, dk)
        with torch.no_grad():
            if G4 is None and A4 is None:
                At = torch.matmul(q4.transpose(-1, -2), q4)  # their D = q^T q
                At = mha.layernorm1(At)
                for unit in mha.reslayerAs:
                    At = unit([At])
            else:
                At = A4
            gcache = None if G4 is None else [None, G4]
            mask = self._mask(q4.shape[-2], k4.shape[-2], causal, self.dtype)
            out, (AW, pw, _, _, avAp, Ep) = mha.plgatt_layer([q4, k4, v4, At, mask], Gcache=gcache)
            A_P = None if G4 is not None else torch.pow(AW, pw)
        cached = G4 is not None
        return HeadResult(out, At, None if cached else AW, A_P, avAp, None, Ep)

    def layer_norm_rows(self, X, gamma, beta, eps):
        """Their metric learner's first LayerNorm (``layernorm1``) on the rows of ``X``."""
        X = np.asarray(X, dtype=np.float64)
        mha = self._mha(None, X.shape[-1])
        mha.layernorm1.weight.data = _t(gamma, self.dtype)
        mha.layernorm1.bias.data = _t(beta, self.dtype)
        mha.layernorm1.eps = float(eps)
        with torch.no_grad():
            return mha.layernorm1(_t(X, self.dtype))

    def scores(self, q, k, G):
        """Their ``Ep`` (scores before the mask) with a given G."""
        return self.plga(q, k, np.zeros((np.shape(k)[0], 1)), None, G=G, causal=False).E

    def softmax(self, E, *, causal=False):
        """Their mask-and-softmax step on scores ``E``.

        ``cg_align_one`` with ``Q = E``, ``G = K = I`` and depth 1 (``sqrt(1) = 1``), so
        ``Ep = E`` exactly.
        """
        Et = _t(E, self.dtype)[None, None]
        s_q, s_k = Et.shape[-2:]
        layer = self.m.plgatt.plga_layer(F_hidden=1, F_heads=1).to(self.dtype)
        eye = torch.eye(s_k, dtype=self.dtype)[None, None]
        mask = self._mask(s_q, s_k, causal, self.dtype)
        with torch.no_grad():
            w, _ = layer.cg_align_one(
                Et, eye, None, None, None, None, None, None, mask=mask, Gcache=[None, eye]
            )
        return w[0, 0]

    # ------------------------------------------------------------------ rope
    def _rope(self, dk: int):
        if dk not in self._ropes:
            self._ropes[dk] = self.m.RotaryPositionalEmbeddings(
                dim=dk, max_seq_len=MAX_SEQ_LEN, base=10000
            )
        return self._ropes[dk]

    def rope(self, x, *, offset=0):
        """Their model's rotary module on rows ``x`` (..., S, dk) at ``offset ..``."""
        x = np.asarray(x, dtype=np.float64)
        S, dk = x.shape[-2:]
        if not (
            isinstance(offset, (int, np.integer)) and 0 <= offset and offset + S <= MAX_SEQ_LEN
        ):
            outside_domain(f"their RoPE is a table of positions 0..{MAX_SEQ_LEN - 1}")
        flat = _t(x.reshape(-1, S, dk), self.dtype)[:, :, None, :]  # (B, S, H=1, dk)
        pos = torch.arange(offset, offset + S)[None].expand(flat.shape[0], S)
        with torch.no_grad():
            out = self._rope(dk)(flat, input_pos=pos)
        return out[:, :, 0, :].reshape(x.shape)

    def rotation_matrix(self, n, dk):
        """``R_n`` read off their rotary module: row i of ``e_i R_n^T`` is column i of R_n."""
        if float(n) != int(n) or int(n) < 0:
            outside_domain(f"their RoPE is a table of positions 0..{MAX_SEQ_LEN - 1}")
        rows = self.rope(np.eye(dk)[:, None, :], offset=int(n))[:, 0, :]  # e_i at position n
        return torch.as_tensor(rows).T

    # ------------------------------------------------------------------ decoder
    def decoder(self, ref):
        """Their ``PLDR_Model`` holding ``ref``'s parameters."""
        return AuthorModel(self, ref.params)


def _learner_arrays(h) -> list:
    dense = [x for u in h.reslayers for b in u.dense for x in (b.W1, b.b1, b.W2, b.b2, b.W3, b.b3)]
    norms = [x for u in h.reslayers for x in (u.ln_gamma, u.ln_beta)]
    return [h.ln0_gamma, h.ln0_beta, *norms, *dense]


def _shared_learner(heads) -> bool:
    """Whether every head carries the same metric learner (their model has one a layer)."""
    first = _learner_arrays(heads[0])
    return all(
        all(np.array_equal(x, y) for x, y in zip(first, _learner_arrays(h), strict=True))
        for h in heads[1:]
    )


class AuthorModel:
    """Their ``PLDR_Model`` behind the protocol's model methods (batch 1)."""

    def __init__(self, impl: AuthorV510, p) -> None:
        heads0 = p.layers[0].mha.heads
        if not all(_shared_learner(layer.mha.heads) for layer in p.layers):
            outside_domain("their metric learner is shared by a layer's heads (one per head here)")
        units = heads0[0].reslayers
        torch.manual_seed(0)  # every parameter is overwritten below
        m = impl.m.PLDR_Model(
            num_layers=len(p.layers),
            d_model=p.embedding.shape[1],
            num_heads=len(heads0),
            dff=p.layers[0].ffn.W1.shape[1],
            input_vocab_size=p.embedding.shape[0],
            A_dff=units[0].dense[0].W1.shape[1] if units else 1,
            num_reslayerA=len(units),
            num_denseA=len(units[0].dense) if units else 0,
        ).to(impl.dtype)
        dt = impl.dtype
        m.decoder.embedding.weight.data = _t(p.embedding, dt)
        m.decoder.layernorm1.weight.data = _t(p.ln_gamma, dt)
        m.decoder.layernorm1.bias.data = _t(p.ln_beta, dt)
        for layer, mod in zip(p.layers, m.decoder.dec_layers, strict=True):
            a = layer.mha
            for lin, W, b in (
                (mod.mha1.wq, a.Wq, a.bq),
                (mod.mha1.wk, a.Wk, a.bk),
                (mod.mha1.wv, a.Wv, a.bv),
                (mod.mha1.dense, a.Wo, a.bo),
            ):
                _set_linear(lin, W, b, dt)
            head = impl._mha(a.heads[0], a.heads[0].dk)  # the shared learner, loaded
            mod.mha1.layernorm1.load_state_dict(head.layernorm1.state_dict())
            mod.mha1.reslayerAs.load_state_dict(head.reslayerAs.state_dict())
            _set_head_stacks(mod.mha1.plgatt_layer, a.heads, dt)
            for ln, g, b in (
                (mod.layernorm1, layer.ln1_gamma, layer.ln1_beta),
                (mod.layernorm2, layer.ln2_gamma, layer.ln2_beta),
            ):
                ln.weight.data, ln.bias.data = _t(g, dt), _t(b, dt)
            f = layer.ffn
            for lin, W, b in (
                (mod.ffn.gluw1, f.W1, f.b1),
                (mod.ffn.gluw2, f.W2, f.b2),
                (mod.ffn.gluw3, f.W3, f.b3),
            ):
                _set_linear(lin, W, b, dt)
        _set_linear(m.final_layer, p.W_out, p.b_out, dt)
        self.m, self.dt = m.eval(), dt

    def _call(self, tokens, kv=None, gc=None):
        tok = torch.as_tensor(np.asarray(tokens, dtype=np.int64))[None]
        S = tok.shape[1]
        # their look-ahead mask (their generation script also masks token id 0 as padding;
        # the spec has no padding, so only the causal part is passed); none when cached
        mask = None if kv is not None else 1 - torch.tril(torch.ones(S, S, dtype=self.dt))
        with torch.no_grad():
            return self.m([tok, mask], kvcachelst=kv, Gcachelst=gc)

    def _gcache(self, G):
        return None if G is None else [[None, _t(g, self.dt)[None]] for g in G]

    def forward(self, tokens, G=None):
        """Logits ``(S, vocab)``; with ``G`` their G-cached forward (``Gcachelst``)."""
        return self._call(tokens, gc=self._gcache(G))[0][0]

    def deductive(self, tokens):
        """``[layer][head]``: A from their KV-cache, A_LM and G from their att weights."""
        _, _, att, kv = self._call(tokens)
        out = []
        for (AW, pw, _, _, avAp, _), (_, _, A) in zip(att, kv, strict=True):
            A_P = torch.pow(AW, pw[None])  # their A_P (not returned), by their operation
            out.append(
                [
                    HeadResult(np.zeros(0), A[0, h], AW[0, h], A_P[0, h], avAp[0, h])
                    for h in range(AW.shape[1])
                ]
            )
        return out

    def decode(self, prompt, rest, *, G=None, use_g_cache=True):
        """Their generation loop: a prompt pass, then one token a step.

        The KV-cache holds the prompt's A; the G-cache ``[A_LM, G]`` per layer.
        """
        gc = self._gcache(G)
        _, _, att, kv = self._call(prompt, gc=gc)
        if gc is None and use_g_cache:
            gc = [[t[0], t[4]] for t in att]
        logits = []
        for tok in rest:
            pred, _, att, kv = self._call([int(tok)], kv=kv, gc=gc)
            if gc is not None:
                gc = [[t[0], t[4]] for t in att]
            logits.append(pred[0, -1].to(torch.float64).numpy())
        return np.array(logits)


def factory(device: str = "cpu", dtype: str = "float32") -> AuthorV510:
    """The adapter at ``dtype`` (needs ``PYVERIFY_AUTHOR_SRC``)."""
    if device != "cpu":
        raise InputValueError(f"examples.author_v510: device {device!r} not offered (cpu)")
    return AuthorV510(dtype)
