"""The public implementation protocol: what a PLGA implementation offers the theorem suite.

An implementation is an object with three declarations and the methods of the
capability groups it names (see ``docs/conformance.md`` for a worked adapter; what each
method computes, with the steps 1-8 of one head, is ``docs/plga-spec.md``):

``name`` : str
    How it is named in test ids and reports (not ``"reference"`` or ``"kernels"``,
    which the shipped implementations use).
``capabilities`` : iterable of str
    Any of :data:`CAPABILITIES` (``head``, ``rope``, ``batched``, ``decoder``).
``devices``, ``dtypes`` : iterable of str
    Where and in which precision it runs (dtypes from ``float64``, ``float32``,
    ``bfloat16``, ``float16``). Optional ``compute_dtype``: the dtype its arithmetic is
    done in (default float64 for float64, else float32); tolerances derive from it.

The factory (``module:factory``) is called as ``factory(device=..., dtype=...)`` for
each device and dtype checked, and once as ``factory()`` to read the declarations.

Inputs are NumPy float64 arrays (round them to your dtype on entry) and
:mod:`pyverify.reference` parameter dataclasses; outputs may be NumPy arrays or torch
tensors on any device, real floating point, of the shapes below, finite
(:class:`~pyverify.conformance.subject.ProtocolViolation` otherwise). Method signatures,
by group (``[optional]`` ones may be left out: the tests that need them are then
reported "not applicable", naming the method):

``head``
    ``plga(q, k, v, params, *, G=None, A=None, causal=True)`` -> a :class:`HeadResult`
    (or any object / mapping with its fields): one head, ``q, k`` (S, dk) already rotated,
    ``v`` (S, dv), ``params`` a :class:`~pyverify.reference.PLGAParams`. ``G`` given:
    steps 1-6 skipped (G-cache; ``params`` may then be None); ``A`` given: steps 1-3
    skipped (``A_LM, A_P, G`` computed from it). Keys may be longer than queries
    (``S_k >= S_q``, the causal mask aligned to the key end) when ``G`` is given.
    ``scores(q, k, G)`` -> ``Q G K^T / sqrt(dk)``.
    ``softmax(E, *, causal=False)`` -> row-wise softmax of scores ``E`` (masked
    causally, aligned to the key end, when ``causal``).
    [``sdpa(q, k, v, *, causal=True)``] the implementation's plain SDPA.
    [``collapsed(q, k, v, G, *, causal=True)``] SDPA on ``Q G`` (generalised SDPA).
    [``density(q)``] ``Q^T Q``. [``layer_norm_rows(X, gamma, beta, eps)``] the row
    LayerNorm of step 2 on a (dk, dk) matrix.
``rope``
    ``rope(x, *, offset=0)`` rotates rows of ``x`` (..., S, dk) at positions
    ``offset, offset + 1, ...``; ``rotation_matrix(n, dk)`` -> block-diagonal ``R_n``
    (``n`` may be a real angle multiple). [``rot2(angle)``] the 2 x 2 rotation (default:
    ``rotation_matrix(angle, 2)``).
``batched``
    ``plga_batched(q, k, v, heads, *, G=None)`` with ``(B, H, S, dk)`` inputs, ``heads``
    a list of H :class:`~pyverify.reference.PLGAParams` whose row LayerNorm and metric
    learner are shared (``G``: ``(H, dk, dk)`` or ``(B, H, dk, dk)``) -> ``[b][h]``
    nested lists of :class:`HeadResult`, or a :class:`HeadResult` of stacked arrays.
``decoder``
    ``decoder(ref)`` -> a model built from a :class:`~pyverify.reference.Decoder`'s
    parameters, with ``forward(tokens, G=None)`` -> logits (S, vocab) (``G``: per layer
    an ``(H, dk, dk)`` constant operator, the G-cached model);
    ``deductive(tokens)`` -> ``[layer][head]`` :class:`HeadResult` (``out`` may be
    empty); ``decode(prompt, rest, *, G=None, use_g_cache=True)`` -> logits
    ``(len(rest), vocab)`` of a prompt pass then one KV(+G)-cached step per token of
    ``rest`` (without ``G``: the prompt's own G, or its ``A`` when ``use_g_cache`` is
    False); [``collapsed(tokens, G)``] the collapsed (generalised SDPA) model (default:
    ``forward(tokens, G)``, which is its definition).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "CAPABILITIES",
    "DTYPES",
    "MODEL_METHODS",
    "OPTIONAL",
    "RESERVED_NAMES",
    "HeadResult",
    "Implementation",
    "group_of",
]

#: Required methods of each capability group.
CAPABILITIES: dict[str, tuple[str, ...]] = {
    "head": ("plga", "scores", "softmax"),
    "rope": ("rope", "rotation_matrix"),
    "batched": ("plga_batched",),
    "decoder": ("decoder",),
}
#: Optional methods of each group (a test that needs a missing one is not applicable).
OPTIONAL: dict[str, tuple[str, ...]] = {
    "head": ("sdpa", "collapsed", "density", "layer_norm_rows"),
    "rope": ("rot2",),
    "batched": (),
    "decoder": (),
}
#: Methods of the model returned by ``decoder(ref)``: (required, optional).
MODEL_METHODS: tuple[tuple[str, ...], tuple[str, ...]] = (
    ("forward", "deductive", "decode"),
    ("collapsed",),
)
#: The dtypes an implementation may declare.
DTYPES: tuple[str, ...] = ("float64", "float32", "bfloat16", "float16")
#: Names of the shipped implementations (a user implementation may not take them).
RESERVED_NAMES: tuple[str, ...] = ("reference", "kernels")


def group_of(method: str) -> str:
    """The capability group a protocol method belongs to (``KeyError`` if none)."""
    for group in CAPABILITIES:
        if method in CAPABILITIES[group] or method in OPTIONAL[group]:
            return group
    raise KeyError(method)


@dataclass(frozen=True)
class HeadResult:
    """One head's results.

    Attributes
    ----------
    out : array_like
        ``softmax(E) V``, (S_q, dv).
    A, A_LM, A_P : array_like or None
        Deductive outputs (dk, dk); None where not computed (a given G).
    G : array_like
        The operator used, (dk, dk).
    weights, E : array_like or None
        Attention rows and scores (S_q, S_k), where the implementation exposes them.
    """

    out: Any
    A: Any = None
    A_LM: Any = None
    A_P: Any = None
    G: Any = None
    weights: Any = None
    E: Any = None


@runtime_checkable
class Implementation(Protocol):
    """The declarations every implementation has (the methods depend on its groups)."""

    name: str
    capabilities: Any
    devices: Any
    dtypes: Any


def empty_out() -> np.ndarray:
    """The ``out`` of a deductive-only result (no values were attended)."""
    return np.zeros((0,))
