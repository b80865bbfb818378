"""Figures of a live model: the order parameter and the invariance error ``eps_G``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pyverify.errors import InputTypeError, InputValueError
from pyverify.output import json_array

__all__ = [
    "DEDUCTIVE_TENSORS",
    "InvarianceError",
    "OrderParameter",
    "as_decoder",
    "eps_g",
    "fluctuation",
    "invariance_error",
    "order_parameter",
    "relative_gap",
]

Array = NDArray[np.float64]

#: The deductive tensors of a PLGA head, in pipeline order.
DEDUCTIVE_TENSORS: tuple[str, ...] = ("A", "A_LM", "A_P", "G")


def fluctuation(X: Array) -> tuple[Array, float]:
    """Order parameter of a stack ``X`` of shape (N, L, H, dk, dk) over its N inputs.

    Returns the per (layer, head) ``sqrt(mean_i ||X_i - mean||_F^2) / ||mean||_F``
    (denominator 1 where the mean is 0) and the overall ratio of the means.
    """
    mean = X.mean(axis=0)
    dev2 = np.mean(np.sum((X - mean) ** 2, axis=(-2, -1)), axis=0)  # (L, H)
    m2 = np.sum(mean**2, axis=(-2, -1))
    per = np.sqrt(dev2) / np.sqrt(np.where(m2 > 0, m2, 1.0))
    overall = float(np.sqrt(dev2.mean() / max(m2.mean(), np.finfo(float).tiny)))
    return per, overall


def eps_g(G_x: Array, G_star: Array) -> Array:
    """``eps_G`` (L, H): ``max_i ||G_x[i] - G*||_F / ||G*||_F`` (denominator 1 where 0).

    ``G_x`` is (N, L, H, dk, dk), ``G_star`` is (L, H, dk, dk).
    """
    norm = np.linalg.norm(G_star, axis=(-2, -1))
    return np.max(np.linalg.norm(G_x - G_star, axis=(-2, -1)), axis=0) / np.where(
        norm > 0, norm, 1.0
    )


def relative_gap(a: ArrayLike, b: ArrayLike) -> float:
    """``max|a - b| / max|b|`` (denominator 1 where ``b`` is all zero)."""
    a, b = np.asarray(a), np.asarray(b)
    den = float(np.max(np.abs(b))) or 1.0
    return float(np.max(np.abs(a - b))) / den


def _as_inputs(inputs: Sequence[ArrayLike] | ArrayLike) -> list[NDArray[np.int64]]:
    if isinstance(inputs, np.ndarray) and inputs.ndim == 2:
        seqs = list(inputs)
    elif isinstance(inputs, np.ndarray) and inputs.ndim == 1:
        seqs = [inputs]
    else:
        seqs = list(inputs)  # type: ignore[arg-type]
    if not seqs:
        raise InputValueError("inputs must hold at least one token sequence")
    return [np.asarray(t) for t in seqs]


def as_decoder(model: Any) -> Any:
    """``model`` as a reference :class:`~pyverify.reference.Decoder` (from its parameters)."""
    from pyverify.reference import Decoder, DecoderParams

    if isinstance(model, Decoder):
        return model
    if isinstance(model, DecoderParams):
        return Decoder(model)
    raise InputTypeError(
        f"model must be a pyverify.reference Decoder or DecoderParams; got {type(model).__name__}"
    )


@dataclass
class OrderParameter:
    """RMS fluctuation of the deductive tensors over a set of inputs.

    Attributes
    ----------
    per_head : dict of str to numpy.ndarray
        For each tensor (``A``, ``A_LM``, ``A_P``, ``G``) an ``(L, H)`` array of
        ``sqrt(mean_i ||T_i - mean T||_F^2) / ||mean T||_F``.
    overall : dict of str to float
        The same over all heads at once: ``sqrt(mean_{i,l,h} ||T - mean T||^2 /
        mean_{l,h} ||mean T||^2)``.
    n_inputs : int
        Number of inputs.
    """

    per_head: dict[str, Array]
    overall: dict[str, float]
    n_inputs: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "n_inputs": self.n_inputs,
            "overall": dict(self.overall),
            "per_head": {k: json_array(v) for k, v in self.per_head.items()},
        }


def order_parameter(
    model: Any,
    inputs: Sequence[ArrayLike] | ArrayLike,
    *,
    G_cache: ArrayLike | list[ArrayLike] | None = None,
    tensors: Sequence[str] = DEDUCTIVE_TENSORS,
) -> OrderParameter:
    """The paper's order parameter: RMS fluctuation of the deductive tensors over inputs.

    Parameters
    ----------
    model : Decoder or DecoderParams
        A reference decoder with a live metric learner.
    inputs : sequence of int arrays, or int array (N, S)
        Token sequences (lengths may differ: the tensors are dk x dk).
    G_cache : optional
        Run the model with this fixed G-cache (then only ``G`` exists, and it
        is constant: its order parameter is 0).
    tensors : sequence of str, default ("A", "A_LM", "A_P", "G")
        Which deductive tensors to measure (those the run produces).

    Returns
    -------
    OrderParameter
        Per head and overall fluctuations; 0 means the tensor is the same for
        every input (the collapse the paper observes at inference).
    """
    dec = as_decoder(model)
    seqs = _as_inputs(inputs)
    stacks: dict[str, list[Array]] = {t: [] for t in tensors}
    for toks in seqs:
        outp = dec.forward(toks, G_cache=G_cache)
        for t in tensors:
            layer_arrays = []
            for layer in outp.deductive:
                vals = [getattr(d, t) for d in layer]
                if any(v is None for v in vals):
                    layer_arrays = None
                    break
                layer_arrays.append(np.stack(vals))
            if layer_arrays is not None:
                stacks[t].append(np.stack(layer_arrays))
    per_head: dict[str, Array] = {}
    overall: dict[str, float] = {}
    for t, arrs in stacks.items():
        if not arrs:
            continue
        per_head[t], overall[t] = fluctuation(np.stack(arrs))  # (N, L, H, dk, dk)
    return OrderParameter(per_head=per_head, overall=overall, n_inputs=len(seqs))


@dataclass
class InvarianceError:
    """Invariance error of a cached ``G*`` against ``G(X)`` recomputed per input.

    Attributes
    ----------
    eps_G : numpy.ndarray
        ``(L, H)``: ``max_i ||G(X_i) - G*||_F / ||G*||_F``.
    eps_G_max : float
        Its maximum.
    logits_gap : list of float
        Per input, ``max|logits_cached - logits_recomputed| / max|logits_recomputed|``.
    n_inputs : int
        Number of inputs.
    """

    eps_G: Array  # noqa: N815 (the paper's symbol)
    eps_G_max: float  # noqa: N815
    logits_gap: list[float] = field(default_factory=list)
    n_inputs: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "n_inputs": self.n_inputs,
            "eps_G_max": self.eps_G_max,
            "eps_G": json_array(self.eps_G),
            "logits_gap": list(self.logits_gap),
            "logits_gap_max": max(self.logits_gap) if self.logits_gap else 0.0,
        }


def invariance_error(
    model: Any,
    inputs: Sequence[ArrayLike] | ArrayLike,
    G_cache: ArrayLike | list[ArrayLike] | None = None,
) -> InvarianceError:
    """``eps_G`` of a cached ``G*`` vs ``G`` recomputed on every input, and the logits' gap.

    Parameters
    ----------
    model, inputs
        As in :func:`order_parameter`.
    G_cache : list of (H, dk, dk) arrays or array (L, H, dk, dk), optional
        The cache ``G*``; default: the G computed on the first input (the
        prompt's cache).

    Returns
    -------
    InvarianceError
        ``eps_G`` per layer x head and the relative logits gap per input
        (theorem ``cache_equivalence``: ``eps_G = 0`` implies a zero gap).
    """
    from pyverify.reference import g_cache_from

    dec = as_decoder(model)
    seqs = _as_inputs(inputs)
    if G_cache is None:
        G_star = np.stack(g_cache_from(dec.forward(seqs[0])))
    else:
        G_star = np.stack([np.asarray(g, dtype=np.float64) for g in G_cache])
    G_x, gaps = [], []
    for toks in seqs:
        rec = dec.forward(toks)
        G_x.append(np.stack(g_cache_from(rec)))
        cached = dec.forward(toks, G_cache=list(G_star))
        gaps.append(relative_gap(cached.logits, rec.logits))
    eps = eps_g(np.stack(G_x), G_star)
    return InvarianceError(eps_G=eps, eps_G_max=float(eps.max()), logits_gap=gaps,
                           n_inputs=len(seqs))  # fmt: skip
