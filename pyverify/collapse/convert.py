"""Copy a trained :class:`PLDRDecoder` into the float64 reference ``DecoderParams``.

The shared metric learner (row LayerNorm and residual units) is replicated into
every head's :class:`pyverify.reference.PLGAParams`; the reference's per-head
learner then computes exactly the same thing. Both use the row convention
``x @ W``, so weights are copied without transposes. This gives the trained
model an independent oracle (:class:`pyverify.reference.Decoder`).
"""

from __future__ import annotations

import numpy as np
from torch import Tensor

from pyverify.collapse.model import PLDRDecoder, SwiGLU
from pyverify.reference import (
    DecoderLayerParams,
    DecoderParams,
    MHAParams,
    PLGAParams,
    ResUnit,
    SwiGLUBlock,
)

__all__ = ["to_reference"]


def _np(t: Tensor) -> np.ndarray:
    return t.detach().cpu().double().numpy().copy()


def _block(m: SwiGLU) -> SwiGLUBlock:
    return SwiGLUBlock(
        W1=_np(m.W1), b1=_np(m.b1), W2=_np(m.W2), b2=_np(m.b2), W3=_np(m.W3), b3=_np(m.b3)
    )


def to_reference(model: PLDRDecoder) -> DecoderParams:
    """The reference parameters of ``model`` (float64 copies)."""
    layers = []
    for layer in model.layers:
        att = layer.mha
        units = [
            ResUnit(
                dense=[_block(b) for b in u.dense], ln_gamma=_np(u.ln.gamma), ln_beta=_np(u.ln.beta)
            )
            for u in att.reslayers
        ]
        heads = [
            PLGAParams(
                ln0_gamma=_np(att.ln0.gamma),
                ln0_beta=_np(att.ln0.beta),
                reslayers=units,
                W=_np(att.W[h]),
                b=_np(att.b[h]),
                P=_np(att.P[h]),
                a=_np(att.a[h]),
                b_a=_np(att.b_a[h]),
            )
            for h in range(model.cfg.num_heads)
        ]
        mha = MHAParams(
            Wq=_np(att.Wq),
            bq=_np(att.bq),
            Wk=_np(att.Wk),
            bk=_np(att.bk),
            Wv=_np(att.Wv),
            bv=_np(att.bv),
            Wo=_np(att.Wo),
            bo=_np(att.bo),
            heads=heads,
            rope_base=model.cfg.rope_base,
        )
        layers.append(
            DecoderLayerParams(
                mha=mha,
                ln1_gamma=_np(layer.ln1.gamma),
                ln1_beta=_np(layer.ln1.beta),
                ffn=_block(layer.ffn),
                ln2_gamma=_np(layer.ln2.gamma),
                ln2_beta=_np(layer.ln2.beta),
            )
        )
    return DecoderParams(
        embedding=_np(model.embedding),
        ln_gamma=_np(model.ln.gamma),
        ln_beta=_np(model.ln.beta),
        layers=layers,
        W_out=_np(model.W_out),
        b_out=_np(model.b_out),
    )
