"""The float64 reference over a batch of heads: ``(B, H, S, dk)`` in, stacked results out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from pyverify.errors import InputValueError
from pyverify.reference.deductive import Deductive, PLGAResult
from pyverify.reference.numpy_head import plga_forward_full
from pyverify.reference.params import PLGAParams

__all__ = ["plga_forward_batched"]


def plga_forward_batched(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    heads: PLGAParams | Sequence[PLGAParams],
    causal: bool = True,
    G: ArrayLike | None = None,
) -> PLGAResult:
    """:func:`plga_forward_full` on every (batch, head) slice, results stacked.

    Parameters
    ----------
    q, k, v : array_like
        ``(B, H, S_q, dk)``, ``(B, H, S_k, dk)``, ``(B, H, S_k, dv)``.
    heads : PLGAParams or sequence of H PLGAParams
        Head ``h``'s parameters (one object: the same for every head).
    causal : bool, default True
        Causal mask.
    G : array_like, optional
        Cached operators, ``(H, dk, dk)`` or ``(B, H, dk, dk)``.

    Returns
    -------
    PLGAResult
        ``out`` ``(B, H, S_q, dv)``, ``weights`` and ``E`` ``(B, H, S_q, S_k)``,
        ``ded`` with ``(B, H, dk, dk)`` arrays (``None`` on the G-cached path).

    Raises
    ------
    ValueError
        If ``q, k, v`` are not 4-D with equal ``(B, H)``, or ``heads``/``G``
        do not match ``H``; otherwise as :func:`plga_forward_full`.
    """
    qa, ka, va = (np.asarray(x) for x in (q, k, v))
    if (
        qa.ndim != 4
        or ka.ndim != 4
        or va.ndim != 4
        or not qa.shape[:2] == ka.shape[:2] == va.shape[:2]
    ):
        raise InputValueError(
            "q, k, v must be 4-D (B, H, S, d) with equal (B, H); "
            f"got {qa.shape}, {ka.shape}, {va.shape}"
        )
    B, H = qa.shape[:2]
    per_head = [heads] * H if isinstance(heads, PLGAParams) else list(heads)
    if len(per_head) != H:
        raise InputValueError(f"heads must hold H = {H} PLGAParams; got {len(per_head)}")
    Ga = None if G is None else np.asarray(G)
    if Ga is not None and (
        Ga.ndim not in (3, 4) or Ga.shape[-3] != H or (Ga.ndim == 4 and Ga.shape[0] != B)
    ):
        raise InputValueError(
            f"G must have shape (H, dk, dk) or (B, H, dk, dk) with B, H = {B}, {H}; got {Ga.shape}"
        )

    def g_of(b: int, h: int) -> ArrayLike | None:
        if Ga is None:
            return None
        return Ga[h] if Ga.ndim == 3 else Ga[b, h]

    res = [
        [
            plga_forward_full(qa[b, h], ka[b, h], va[b, h], per_head[h], causal, g_of(b, h))
            for h in range(H)
        ]
        for b in range(B)
    ]

    def stack(get) -> np.ndarray | None:  # type: ignore[no-untyped-def]
        first = get(res[0][0]) if B and H else None
        if first is None:
            return None
        return np.stack([np.stack([get(r) for r in row]) for row in res])

    return PLGAResult(
        out=stack(lambda r: r.out),
        weights=stack(lambda r: r.weights),
        E=stack(lambda r: r.E),
        ded=Deductive(*(stack(lambda r, n=n: getattr(r.ded, n)) for n in Deductive._fields)),
    )
