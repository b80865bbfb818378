"""Optimised batched multi-head PLGA in PyTorch (CPU and CUDA, fp64/fp32/bf16/fp16).

Modes: uncached (:func:`plga_attention`), G-cached (``plga_attention(..., G=G)``)
and collapsed (:func:`collapsed_attention`, SDPA on ``Q G``); a decoder model
with KV- and G-cache in :mod:`pyverify.kernels.model`.
"""

from pyverify.kernels.collapsed import (
    collapsed_attention,
    fold_into_query_projection,
    in_rope_commutant,
    project_to_rope_commutant,
    rope_commutant_residual,
)
from pyverify.kernels.head import attend, plga_attention, sdpa, split_query_product
from pyverify.kernels.metric import (
    Deductive,
    compute_g,
    density_operator,
    energy_curvature,
    metric_learner,
)
from pyverify.kernels.params import (
    FFNParams,
    HeadParams,
    SwiGLUParams,
    UnitParams,
    from_reference,
)
from pyverify.kernels.rope import apply_rope, rope_angles, rope_matrix
from pyverify.kernels.v510 import load_v510
from pyverify.kernels.validation import NonFiniteStageError, PowerLawOverflowError

__all__ = [
    "Deductive",
    "FFNParams",
    "HeadParams",
    "NonFiniteStageError",
    "PowerLawOverflowError",
    "SwiGLUParams",
    "UnitParams",
    "apply_rope",
    "attend",
    "collapsed_attention",
    "compute_g",
    "density_operator",
    "energy_curvature",
    "fold_into_query_projection",
    "from_reference",
    "in_rope_commutant",
    "load_v510",
    "metric_learner",
    "plga_attention",
    "project_to_rope_commutant",
    "rope_angles",
    "rope_commutant_residual",
    "rope_matrix",
    "sdpa",
    "split_query_product",
]
