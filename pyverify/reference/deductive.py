"""Result containers shared by the float64 and mpmath heads (no computation here)."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Deductive", "PLGAResult"]


class Deductive(NamedTuple):
    """The deductive tensors of one PLGA head, each ``(dk, dk)``.

    On the G-cached path (``G=`` given) steps 1-6 are skipped: ``A``, ``A_LM``
    and ``A_P`` are ``None`` and ``G`` is the cached operator. On the
    ``A=``-reuse path (steps 1-3 skipped) ``A`` is the supplied tensor.

    Attributes
    ----------
    A : array or None
        Metric-learner output ``Phi(LayerNorm_rows(Q^T Q))``.
    A_LM : array or None
        Metric tensor ``iSwiGLU(W @ A + b) + metric_eps`` (entrywise > 0).
    A_P : array or None
        Potential tensor ``A_LM ** P``.
    G : array
        Energy-curvature operator ``a @ A_P + b_a``.
    """

    A: Any
    A_LM: Any
    A_P: Any
    G: Any


class PLGAResult(NamedTuple):
    """Everything one head computes.

    Attributes
    ----------
    out : array
        ``H = weights @ V``, shape ``(S_q, dv)``.
    weights : array
        Attention rows (masked softmax of ``E``), shape ``(S_q, S_k)``; exact
        zeros at masked places.
    E : array
        Scaled scores ``Q G K^T / sqrt(dk)`` before masking, ``(S_q, S_k)``.
    ded : Deductive
        The deductive tensors.
    """

    out: Any
    weights: Any
    E: Any
    ded: Deductive
