"""The implementations under test: every one a plugin of the public protocol.

Every property test takes an ``impl`` parameter, a
:class:`~pyverify.conformance.subject.Subject`: one implementation of
:mod:`pyverify.conformance.protocol` at one device and dtype, with ``name``, ``device``
and ``dtype`` (strings), so that one test body checks one statement on the float64 NumPy
reference and on the optimised torch kernels (every available device and dtype), or on
the implementation named by ``PYVERIFY_IMPL=module:factory`` (then on it alone). Inputs
are NumPy float64 arrays; results come back as NumPy float64 arrays.

Tolerances are derived from the unit round-off of the dtype that does the arithmetic
(``impl.u_compute``: float64 for float64, else float32, as the kernels compute statistics,
the metric learner and softmax in float32) and of the dtype results are rounded to
(``impl.u_io``), times the conditioning of the computation; :func:`attention_bound` is the
proved one (``lean/Pldr/Float``, :mod:`pyverify.fp.models`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import pyverify.kernels as kern
from pyverify.conformance.loading import subjects_from_env
from pyverify.conformance.protocol import HeadResult
from pyverify.conformance.shipped import KernelsPLGA, ReferencePLGA
from pyverify.conformance.subject import Subject
from pyverify.crosscheck import available_devices
from pyverify.precision import UNIT_ROUNDOFF, compute_roundoff, gamma
from pyverify.reference import PLGAParams
from pyverify.reference.params import SWIGLU_FIELDS

__all__ = [
    "ALL",
    "DEVICES",
    "FLOAT",
    "REFERENCE",
    "SUBJECTS",
    "UNIT_ROUNDOFF",
    "HeadOut",
    "Impl",
    "KernelsSubject",
    "attention_bound",
    "compute_roundoff",
    "gamma",
    "impl_ids",
    "kernels",
    "map_head_arrays",
    "params_as_used",
]

#: Every implementation the tests see is a :class:`Subject` (the protocol adapter).
Impl = Subject
#: One head's results (NumPy float64 after the adapter).
HeadOut = HeadResult


@dataclass(frozen=True)
class KernelsSubject(Subject):
    """The kernels plugin as a subject, plus the torch helpers of kernel-internal tests."""

    @property
    def tdtype(self) -> torch.dtype:
        """The torch dtype of inputs and outputs."""
        return self.target.tdtype

    @property
    def cdtype(self) -> torch.dtype:
        """The compute dtype."""
        return self.target.cdtype

    def t(self, x, dtype: torch.dtype | None = None) -> torch.Tensor:
        """A NumPy array as a tensor on the device (``KernelsPLGA.t``)."""
        return self.target.t(x, dtype)

    def heads(self, params: PLGAParams | list[PLGAParams]) -> kern.HeadParams:
        """Stacked head parameters in the compute dtype (``KernelsPLGA.heads``)."""
        return self.target.heads(params)


def map_head_arrays(params: PLGAParams, fn: Any) -> PLGAParams:
    """``params`` with ``fn`` applied to every array (the learner's, ``W, b, P, a, b_a``)."""
    units = [
        dataclasses.replace(
            un,
            dense=[
                dataclasses.replace(b, **{f: fn(getattr(b, f)) for f in SWIGLU_FIELDS})
                for b in un.dense
            ],
            ln_gamma=fn(un.ln_gamma),
            ln_beta=fn(un.ln_beta),
        )
        for un in params.reslayers
    ]
    head = ("ln0_gamma", "ln0_beta", "W", "b", "P", "a", "b_a")
    return dataclasses.replace(params, reslayers=units, **{f: fn(getattr(params, f)) for f in head})


def params_as_used(impl: Impl, params: PLGAParams) -> PLGAParams:
    """The head parameters as the kernels hold them (:meth:`Impl.hold`, epsilons too)."""
    held = map_head_arrays(params, impl.hold)
    return dataclasses.replace(
        held, ln_eps=impl.hold(params.ln_eps), metric_eps=impl.hold(params.metric_eps)
    )


def attention_bound(impl: Impl, q, G, k, v, *, path: str | None = None) -> float:
    """Proved bound of ``max |computed - exact|`` for ``softmax(Q G K^T / sqrt(dk)) V``.

    ``[fp_head_output]`` (with ``fp_head_scores`` and ``fp_softmax``):
    :func:`pyverify.fp.attention.attention_bound` for the implementation's arithmetic, on
    inputs already representable in ``impl.dtype`` with ``G`` as the implementation
    holds it (None: the identity), causal or not (the larger of the two), at its largest
    entry.

    Parameters
    ----------
    impl : Impl
        The implementation (its arithmetic: :func:`pyverify.testing.fp.arith`).
    q, G, k, v : array_like
        The (rounded) operands; ``G`` may be None for the identity.
    path : str, optional
        How the scores are formed (:func:`pyverify.fp.models.scores_bound`): default the
        G-cached head's (``reference``; the kernels' ``sdpa``, ``sdpa_split`` below
        float32); ``sdpa_rounded`` for the collapsed fast path.

    Returns
    -------
    float
        The bound on ``max |computed - exact|``.
    """
    from pyverify.fp.attention import attention_bound as entrywise
    from pyverify.testing.fp import arith

    ar = arith(impl)
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    G = None if G is None else np.asarray(G, dtype=np.float64)
    if not (q.size and k.size and v.size):
        return 0.0
    causal = (True, False) if q.shape[0] <= k.shape[0] else (False,)
    return max(float(np.max(entrywise(ar, q, k, v, G, causal=c, path=path))) for c in causal)


# --------------------------------------------------------------------------- the lists
def _subject(obj: Any, cls: type[Subject] = Subject) -> Subject:
    return cls(obj.name, obj.device if hasattr(obj, "device") else "cpu",
               obj.dtype if hasattr(obj, "dtype") else "float64", obj,
               frozenset(obj.capabilities), obj.compute_dtype)  # fmt: skip


REFERENCE: Subject = _subject(ReferencePLGA())
DEVICES = available_devices()
#: The implementation named by ``PYVERIFY_IMPL`` (every declared device x dtype, or those
#: of ``PYVERIFY_IMPL_DEVICES``/``PYVERIFY_IMPL_DTYPES``); None when it is unset. Then
#: ``ALL`` and ``FLOAT`` hold its subjects only (``property_tests/conftest.py`` deselects
#: the tests of the shipped implementations).
SUBJECTS: list[Subject] | None = subjects_from_env()


def kernels(*dtypes: str) -> list[Subject]:
    """Kernel subjects for ``dtypes`` (default all four) on every available device."""
    dts = dtypes or ("float64", "float32", "bfloat16", "float16")
    return [_subject(KernelsPLGA(dev, dt), KernelsSubject) for dev in DEVICES for dt in dts]


if SUBJECTS is None:
    #: Every implementation and dtype.
    ALL: list[Subject] = [REFERENCE, *kernels()]
    #: The reference and the kernels in float64/float32 (where a low-precision bound would
    #: be too coarse to say anything).
    FLOAT: list[Subject] = [REFERENCE, *kernels("float64", "float32")]
else:
    ALL = list(SUBJECTS)
    FLOAT = [s for s in SUBJECTS if s.dtype in ("float64", "float32")]


def impl_ids(impl: Subject) -> str:
    """Pytest id of an implementation: ``name-device-dtype``."""
    return str(impl)
