"""Reference implementation of Power Law Graph Attention (``plga-spec.md``).

The ground truth every other part of pyverify is checked against:

* :mod:`~pyverify.reference.numpy_head` -- one PLGA head in float64 NumPy
  (:func:`plga_forward` and every stage as a public function);
* :mod:`~pyverify.reference.batched` -- that head over ``(B, H)`` slices
  (:func:`plga_forward_batched`);
* :mod:`~pyverify.reference.mp` -- the same head in mpmath at any precision
  (``mp.plga_forward(..., dps=50)``), written independently;
* :mod:`~pyverify.reference.rope` -- RoPE as in the reference model;
* :mod:`~pyverify.reference.model` -- multi-head layer, decoder stack,
  KV- and G-cached decoding;
* :mod:`~pyverify.reference.data` -- the released trained ``G_LM`` operators;
* :mod:`~pyverify.reference.v510` -- loading a ``pldr_model_v510`` state dict
  (:func:`load_v510`);
* :mod:`~pyverify.reference.validation` -- argument checks and errors.

Contract (``plga-spec.md``, "Public API of the reference")::

    from pyverify.reference import PLGAParams, plga_forward
    p = PLGAParams.random(dk=8, a_dff=12, num_reslayer=2, num_dense=2, seed=0)
    out, ded = plga_forward(q, k, v, p, causal=True)
    out2, _ = plga_forward(q, k, v, p, causal=True, G=ded.G)
"""

from pyverify.reference import mp
from pyverify.reference.batched import plga_forward_batched
from pyverify.reference.data import (
    DATA_DIR_ENV,
    KNOWN_FILES,
    DataFileFormatError,
    DataFileMissingError,
    Provenance,
    data_dir,
    load_g_lm,
    provenance,
)
from pyverify.reference.deductive import Deductive, PLGAResult
from pyverify.reference.model import (
    Decoder,
    DecoderLayerParams,
    DecoderOutput,
    DecoderParams,
    KVGCache,
    LayerCache,
    MHAOutput,
    MHAParams,
    decoder_layer_forward,
    g_cache_from,
    mha_forward,
)
from pyverify.reference.numpy_head import (
    causal_mask,
    masked_softmax,
    plga_forward,
    plga_forward_full,
)
from pyverify.reference.params import LN_EPS, METRIC_EPS, PLGAParams, ResUnit, SwiGLUBlock
from pyverify.reference.rope import (
    ROPE_BASE,
    apply_rope,
    rope_angles,
    rope_thetas,
    rot2,
    rotation_matrix,
)
from pyverify.reference.v510 import CheckpointError, load_v510
from pyverify.reference.validation import NonFiniteStageError, PowerLawOverflowError

__all__ = [
    "DATA_DIR_ENV",
    "KNOWN_FILES",
    "LN_EPS",
    "METRIC_EPS",
    "ROPE_BASE",
    "CheckpointError",
    "DataFileFormatError",
    "DataFileMissingError",
    "Decoder",
    "DecoderLayerParams",
    "DecoderOutput",
    "DecoderParams",
    "Deductive",
    "KVGCache",
    "LayerCache",
    "MHAOutput",
    "MHAParams",
    "NonFiniteStageError",
    "PLGAParams",
    "PLGAResult",
    "PowerLawOverflowError",
    "Provenance",
    "ResUnit",
    "SwiGLUBlock",
    "apply_rope",
    "causal_mask",
    "data_dir",
    "decoder_layer_forward",
    "g_cache_from",
    "load_g_lm",
    "load_v510",
    "masked_softmax",
    "mha_forward",
    "mp",
    "plga_forward",
    "plga_forward_batched",
    "plga_forward_full",
    "provenance",
    "rope_angles",
    "rope_thetas",
    "rot2",
    "rotation_matrix",
]
