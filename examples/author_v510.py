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
negative or non-integer position is "not applicable".
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from pathlib import Path

import numpy as np
import torch

from pyverify.conformance.protocol import HeadResult
from pyverify.conformance.subject import not_applicable
from pyverify.errors import InputValueError, MissingInputError

ENV = "PYVERIFY_AUTHOR_SRC"
MAX_SEQ_LEN = 4096
_TORCH = {"float32": torch.float32, "float64": torch.float64}


def _torchtune_rope() -> None:
    """Make ``torchtune.modules.RotaryPositionalEmbeddings`` importable (torchtune's own)."""
    try:
        from torchtune.modules import RotaryPositionalEmbeddings  # noqa: F401

        return
    except Exception:  # its package __init__ needs optional dependencies
        pass
    spec = importlib.util.find_spec("torchtune")
    path = (
        None
        if spec is None or not spec.submodule_search_locations
        else Path(next(iter(spec.submodule_search_locations)))
        / "modules"
        / "position_embeddings.py"
    )
    if path is None or not path.is_file():
        raise MissingInputError(
            "examples.author_v510: needs torchtune's RotaryPositionalEmbeddings "
            "(pip install --no-deps torchtune==0.6.1)"
        )
    file_spec = importlib.util.spec_from_file_location("_torchtune_position_embeddings", path)
    mod = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(mod)
    pkg = types.ModuleType("torchtune")
    sub = types.ModuleType("torchtune.modules")
    sub.RotaryPositionalEmbeddings = mod.RotaryPositionalEmbeddings
    pkg.modules = sub
    sys.modules["torchtune"], sys.modules["torchtune.modules"] = pkg, sub


def _author_modules():
    """Import their ``pldr_model_v510`` and ``power_law_attention_layer_v510``."""
    root = os.environ.get(ENV, "").strip()
    if not root:
        raise MissingInputError(
            f"examples.author_v510: set {ENV} to a checkout of the author's code"
        )
    src = Path(root) / "src" / "pldr_model_v510"
    if not (src / "pldr_model_v510.py").is_file():
        raise MissingInputError(f"examples.author_v510: {src}/pldr_model_v510.py not found ({ENV})")
    _torchtune_rope()
    if str(src) not in sys.path:
        sys.path.insert(0, str(src))
    import pldr_model_v510 as model  # their code, from their checkout

    return model


def _t(x, dtype) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float64)).to(dtype)


def _set_linear(lin, W, b, dtype) -> None:
    lin.weight.data = _t(np.asarray(W).T, dtype)  # row-vector x @ W is Linear with W^T
    lin.bias.data = _t(b, dtype)


class AuthorV510:
    """Their ``plga_layer`` and metric learner behind the protocol."""

    name = "author-v510"
    capabilities = ("head", "rope")
    devices = ("cpu",)
    dtypes = ("float32", "float64")

    def __init__(self, dtype: str = "float32") -> None:
        self.m = _author_modules()
        self.dtype = _TORCH[dtype]
        self.compute_dtype = dtype
        self._ropes: dict[int, torch.nn.Module] = {}

    # ------------------------------------------------------------------ head
    def _mha(self, params, dk: int):
        """Their multi-head module (one head) holding ``params``."""
        units = params.reslayers if params is not None else []
        a_dff = units[0].dense[0].W1.shape[1] if units and units[0].dense else 1
        n_dense = len(units[0].dense) if units else 0
        torch.manual_seed(0)  # their constructor initialises at random; all is overwritten
        mha = self.m.plgMultiHeadAttention(
            d_model=dk, num_heads=1, A_dff=a_dff, num_reslayerA=len(units), num_denseA=n_dense
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
        for name, arr in (
            ("Wlst", params.W),
            ("blst", params.b),
            ("pwlst", params.P),
            ("alst", params.a),
            ("balst", params.b_a),
        ):
            getattr(layer, name).data = _t(arr, self.dtype)[None]
        return mha

    @staticmethod
    def _mask(s_q: int, s_k: int, causal: bool, dtype) -> torch.Tensor | None:
        if not causal:
            return None
        return torch.triu(torch.ones(s_q, s_k, dtype=dtype), diagonal=1 + s_k - s_q)

    def plga(self, q, k, v, params, *, G=None, A=None, causal=True) -> HeadResult:
        """Their head (``plga_layer``), A from their learner unless ``A``/``G`` is given."""
        q4, k4, v4 = (_t(x, self.dtype)[None, None] for x in (q, k, v))
        dk = q4.shape[-1]
        mha = self._mha(params, dk)
        with torch.no_grad():
            if G is None and A is None:
                At = torch.matmul(q4.transpose(-1, -2), q4)  # their D = q^T q
                At = mha.layernorm1(At)
                for unit in mha.reslayerAs:
                    At = unit([At])
            elif G is None:
                At = _t(A, self.dtype)[None, None]
            else:
                At = None
            gcache = None if G is None else [None, _t(G, self.dtype)[None, None]]
            mask = self._mask(q4.shape[-2], k4.shape[-2], causal, self.dtype)
            out, (AW, pw, _, _, avAp, Ep) = mha.plgatt_layer([q4, k4, v4, At, mask], Gcache=gcache)
            A_P = None if G is not None else torch.pow(AW, pw)
        return HeadResult(
            out[0, 0],
            None if At is None else At[0, 0],
            None if G is not None else AW[0, 0],
            None if A_P is None else A_P[0, 0],
            avAp[0, 0],
            None,
            Ep[0, 0],
        )

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
            not_applicable(f"author RoPE is a table of positions 0..{MAX_SEQ_LEN - 1}")
        flat = _t(x.reshape(-1, S, dk), self.dtype)[:, :, None, :]  # (B, S, H=1, dk)
        pos = torch.arange(offset, offset + S)[None].expand(flat.shape[0], S)
        with torch.no_grad():
            out = self._rope(dk)(flat, input_pos=pos)
        return out[:, :, 0, :].reshape(x.shape)

    def rotation_matrix(self, n, dk):
        """``R_n`` read off their rotary module: row i of ``e_i R_n^T`` is column i of R_n."""
        if float(n) != int(n) or int(n) < 0:
            not_applicable(f"author RoPE is a table of positions 0..{MAX_SEQ_LEN - 1}")
        rows = self.rope(np.eye(dk)[:, None, :], offset=int(n))[:, 0, :]  # e_i at position n
        return torch.as_tensor(rows).T


def factory(device: str = "cpu", dtype: str = "float32") -> AuthorV510:
    """The adapter at ``dtype`` (needs ``PYVERIFY_AUTHOR_SRC``)."""
    if device != "cpu":
        raise InputValueError(f"examples.author_v510: device {device!r} not offered (cpu)")
    return AuthorV510(dtype)
