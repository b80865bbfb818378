"""Cross-check: optimised kernels vs the float64 reference vs mpmath (``pyverify crosscheck``).

The sweep runs a list of *cases* (:mod:`.cases`), each with fixed seeds, on
every requested device and dtype, and compares stage by stage (:mod:`.runners`, the
driver; :mod:`.random_cases`, :mod:`.operator_cases`, the kinds; :mod:`.heads`, their
inputs; :mod:`.bounds`, the proved bound of each stage;
each comparison one :class:`~.compare.Comparer` stage):

* ``random``: random PLGA heads, random ``q, k, v`` of shape ``(B, H, S, dk)``.
  The uncached kernel (with ``return_deductive=True``) against the float64
  reference on the same rounded inputs: the learner's sub-stages
  (:data:`LEARNER_STAGES`, :mod:`.learner_rows`: ``D``, ``A0``, per residual unit its
  first SwiGLU block, its residual sum and its LayerNorm, the last one ``A``), then
  ``A_LM``, ``A_P``, ``G``, ``scores`` and ``output``; the G-cached and collapsed kernels given
  the reference's ``G``: ``output``.
* ``mpmath``: the float64 reference against :mod:`pyverify.reference.mp`
  (40 digits) at ``S <= 16``, ``dk <= 8``, every stage; CPU/float64 only.
* ``trained``: the trained ``G_LM`` of one layer (14 heads, ``dk = 64``)
  through the G-cached and collapsed kernels vs the float64 reference:
  ``scores`` and ``output``.
* ``identity``: the identity ``G_LM``: the G-cached kernel vs torch's float64
  SDPA, and the float64 reference vs float64 SDPA (``sdpa_special_case``).

Error measure: per (batch, head) slice ``max|x - y| / max|y|``; a row reports
the maximum and the median over the slices. Every stage is held to its *proved* bound
(the floating-point theorems of ``lean/Pldr/Float``, :mod:`pyverify.fp`), which is the
row's tolerance: every entry within it, stage by stage with the previous stage's
measured difference as the input bound; a row records the bound in the same measure and
``error / proved``. A stage whose premises fail has no bound and fails (no tolerance
without a theorem). Stages ``A_LM`` and ``A_P`` also require every kernel entry to be
``> 0`` (``metric_positivity``). Each kernel's SDPA runs pinned to the backend its bound
models; a device that flushes subnormal numbers (:mod:`pyverify.fp.underflow`), and every
device but the CPU (the bounds model torch's CPU kernels), is left out with one line.
"""

from pyverify.crosscheck.cases import (
    LEARNER_STAGES,
    STAGES,
    Case,
    available_devices,
    list_cases,
    parse_devices,
    parse_dtypes,
    parse_shard,
    shard_cases,
)
from pyverify.crosscheck.compare import slice_errors
from pyverify.crosscheck.results import CrosscheckResult, CrosscheckRow, summarize
from pyverify.crosscheck.runners import run_case, run_crosscheck
from pyverify.crosscheck.text import format_crosscheck, format_summary
from pyverify.precision import DTYPE_NAMES

__all__ = [
    "DTYPE_NAMES",
    "LEARNER_STAGES",
    "STAGES",
    "Case",
    "CrosscheckResult",
    "CrosscheckRow",
    "available_devices",
    "format_crosscheck",
    "format_summary",
    "list_cases",
    "parse_devices",
    "parse_dtypes",
    "parse_shard",
    "run_case",
    "run_crosscheck",
    "shard_cases",
    "summarize",
]

__all__ += ["slice_errors"]  # used by the tests; not part of the stable API
