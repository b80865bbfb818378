"""Batched multi-head PLGA on (B, H, S, dk) tensors: the attention around ``G``.

The stages follow ``docs/plga-spec.md``:

1.-6. ``G`` from the queries (:mod:`pyverify.kernels.metric`, :func:`compute_g`);
7.-8. ``softmax(Q G K^T / sqrt(dk) + causal mask) V`` (:func:`attend`), evaluated as
   SDPA on ``Q' = Q G`` so the fused kernels do the quadratic work.

Precision: float64 inputs compute in float64. float32, bfloat16 and float16
inputs compute ``D``, all LayerNorm statistics, the metric learner and ``G`` in
float32 (as torch's fused SDPA kernels keep softmax statistics in float32);
``Q G`` is formed in float32 and enters SDPA either split into two
input-dtype parts (``precision="compensated"``, the default here: error at
the level of plain SDPA) or rounded once (``"rounded"``, fastest); see
:func:`sdpa_qg`. The deductive tensors are returned in the compute dtype.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.errors import InputValueError
from pyverify.kernels.metric import Deductive, check_params, compute_g, energy_curvature
from pyverify.kernels.params import HeadParams
from pyverify.kernels.screen import inputs_pass
from pyverify.kernels.validation import (
    check_finite,
    check_g,
    check_inputs_finite,
    check_qkv,
    check_score_range,
    check_tensor,
    compute_dtype,
)

__all__ = [
    "Deductive",
    "attend",
    "checked_sdpa_qg",
    "plga_attention",
    "rotate_query",
    "sdpa",
    "sdpa_qg",
    "split_query_product",
]


def sdpa(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = True,
    scale: float | None = None,
):
    """Causal SDPA with the mask aligned to the END of the key sequence.

    torch's ``is_causal=True`` aligns the mask top-left, right only when ``S_q == S_k``;
    decoding (``S_q < S_k``, queries at the last positions) needs it bottom-right.

    Parameters
    ----------
    q, k, v : torch.Tensor
        (B, H, S_q, dk), (B, H, S_k, dk), (B, H, S_k, dv).
    causal : bool, default True
        Apply the causal mask.
    scale : float, optional
        Score scale (default ``1/sqrt(q.shape[-1])``).

    Returns
    -------
    torch.Tensor
        (B, H, S_q, dv).
    """
    S_q, S_k = q.shape[-2], k.shape[-2]
    if not causal or S_q == 1:
        return F.scaled_dot_product_attention(q, k, v, scale=scale)
    if S_q == S_k:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    i = torch.arange(S_q, device=q.device)[:, None]
    j = torch.arange(S_k, device=q.device)[None, :]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=j <= i + (S_k - S_q), scale=scale)


Precision = Literal["compensated", "rounded"]
_PRECISIONS = ("compensated", "rounded")


def rotate_query(q: torch.Tensor, G: torch.Tensor, *, check: bool | None = None) -> torch.Tensor:
    """Return ``Q' = Q G`` rounded once to ``q``'s dtype.

    Parameters
    ----------
    q : torch.Tensor
        (B, H, S, dk).
    G : torch.Tensor
        4-D, broadcastable to (B, H, dk, dk).
    check : bool, optional
        Check ``Q'`` for overflow; default: only for float16 (the one dtype
        whose range ``Q G`` can plausibly exceed).

    Returns
    -------
    torch.Tensor
        (B, H, S, dk) in ``q.dtype``.
    """
    if q.dtype in (torch.float64, torch.float32):
        qg = torch.matmul(q, G.to(q.dtype))
    else:
        # bf16/fp16: form Q G in float32, round once.
        qg = torch.matmul(q.float(), G.float()).to(q.dtype)
    if check if check is not None else q.dtype == torch.float16:
        check_finite(qg, "Q G")
    return qg


def split_query_product(q: torch.Tensor, G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``Q G = hi + lo`` in ``q``'s dtype: ``hi = fl(Q G)``, ``lo = fl(Q G - hi)``."""
    qg = torch.matmul(q.float(), G.float())
    hi = qg.to(q.dtype)
    return hi, (qg - hi.float()).to(q.dtype)


def sdpa_qg(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    G: torch.Tensor,
    *,
    causal: bool = True,
    precision: Precision = "compensated",
    check_scores: bool = False,
    key_norm: torch.Tensor | None = None,
) -> torch.Tensor:
    """``softmax(Q G K^T / sqrt(dk) + mask) V`` with one SDPA call (no shape checks).

    Arguments and result as in :func:`attend`, except that ``G`` must already be
    4-D, broadcastable to (B, H, dk, dk); ``check_scores``: ``check_score_range``
    on what SDPA receives, with ``key_norm`` (an upper bound of ``max_j |k_j|`` per
    (B, H)) in place of reading ``k`` when given. float32/float64: SDPA on ``Q G``.
    bfloat16/float16, two precisions:

    * ``"rounded"``: ``Q G`` is formed in float32 and rounded once to the input
      dtype. Fastest (same SDPA call as plain attention), but the rounding of
      ``Q G`` perturbs every score by ~1 ulp of the score, which ``|G|``
      amplifies: measured 2-10x the error of plain SDPA for random PLGA
      parameters, more for the trained ``G_LM`` (entries up to ~80).
    * ``"compensated"``: ``Q G = hi + lo`` with ``hi = round(Q G)``,
      ``lo = round(Q G - hi)``, and SDPA on ``[hi, lo]`` against ``[K, K]``
      (head dim 2 dk for queries/keys, explicit ``scale = 1/sqrt(dk)``), so the
      scores carry ~16 significant bits before the (float32) softmax: the error
      matches plain SDPA's at the same dtype. Costs twice the ``Q K^T`` work.
    """
    if precision not in _PRECISIONS:
        raise InputValueError(f"precision must be one of {_PRECISIONS}; got {precision!r}")
    if q.dtype in (torch.float64, torch.float32) or precision == "rounded":
        qg = rotate_query(q, G)
        if check_scores:
            check_score_range(qg, k, k_norm=key_norm)
        return sdpa(qg, k, v, causal=causal)
    dk = q.shape[-1]
    hi, lo = split_query_product(q, G)
    if q.dtype == torch.float16:
        check_finite(hi, "Q G")
    qg2, k2 = torch.cat((hi, lo), dim=-1), torch.cat((k, k), dim=-1)
    if check_scores:  # |[k, k]| = sqrt(2) |k|
        check_score_range(qg2, k2, k_norm=None if key_norm is None else key_norm * 2**0.5)
    return sdpa(qg2, k2, v, causal=causal, scale=dk**-0.5)


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    G: torch.Tensor,
    *,
    causal: bool = True,
    check_finite: bool = True,
    precision: Precision = "compensated",
) -> torch.Tensor:
    """Compute steps 7-8: ``softmax(Q G K^T / sqrt(dk) + mask) V`` via SDPA on ``Q G``.

    Parameters
    ----------
    q, k, v : torch.Tensor
        (B, H, S_q, dk), (B, H, S_k, dk), (B, H, S_k, dv), rotated.
    G : torch.Tensor
        (dk, dk), (H, dk, dk) or (B, H, dk, dk).
    causal : bool, default True
        Causal mask (bottom-right aligned when ``S_q < S_k``).
    check_finite : bool, default True
        Raise ``ValueError`` naming ``q``, ``k``, ``v`` or ``G`` if it holds inf/NaN,
        and ``NonFiniteStageError`` ``[scores]`` if finite inputs give a score beyond
        the range (one host synchronisation each); False skips both checks.
        Measured on a loaded 1-thread CPU: 4-13% of the call at (B, H, S, dk) =
        (2, 8, 512, 64); on sub-millisecond calls the check's fixed cost can double
        the time. With ``check_finite=False`` a non-finite input or an overflowed
        score gives an *unspecified* result in the rows it reaches: torch's CPU SDPA
        returns NaN there under some CPU capabilities and shapes and zeros under
        others. Rows the bad value does not reach are computed as usual.
    precision : {"compensated", "rounded"}, default "compensated"
        bfloat16/float16 only; see :func:`sdpa_qg`.

    Returns
    -------
    torch.Tensor
        (B, H, S_q, dv) in ``q``'s dtype.
    """
    return checked_sdpa_qg(
        ("q", "k"), q, k, v, G, causal=causal, check_finite=check_finite, precision=precision
    )


def checked_sdpa_qg(
    names: tuple[str, str],
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    G: torch.Tensor,
    *,
    causal: bool,
    check_finite: bool,
    precision: Precision,
) -> torch.Tensor:
    """Check ``q, k, v, G`` (errors call ``q``, ``k`` by ``names``), then :func:`sdpa_qg`."""
    q, k, v = check_qkv(q, k, v, causal=causal)
    B, H, _, dk = q.shape
    G4 = check_g(G, "G", B=B, H=H, dk=dk, like=q)
    look_closer = check_finite and not inputs_pass(q, k, v, G4)
    if look_closer:  # the exact checks name the input, or the score, that failed
        check_inputs_finite((names[0], q), (names[1], k), ("v", v), ("G", G4))
    return sdpa_qg(q, k, v, G4, causal=causal, precision=precision, check_scores=look_closer)


def plga_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    params: HeadParams | None,
    *,
    causal: bool = True,
    G: torch.Tensor | None = None,
    A: torch.Tensor | None = None,
    return_deductive: bool = False,
    check_finite: bool = True,
    precision: Precision = "compensated",
    key_norm: torch.Tensor | None = None,
) -> torch.Tensor | tuple[torch.Tensor, Deductive]:
    """Batched multi-head PLGA.

    Three ways to get ``G``: recompute it from ``q`` (uncached: steps 1-6);
    from a stored metric-learner output ``A`` (steps 4-6, the reference's
    KV-cache); or use a stored ``G`` (G-cached: steps 1-6 skipped).

    Parameters
    ----------
    q, k : torch.Tensor
        (B, H, S_q, dk) and (B, H, S_k, dk), already rotated.
    v : torch.Tensor
        (B, H, S_k, dv).
    params : HeadParams or None
        Parameters of the H heads (may be None when ``G`` is given).
    causal : bool, default True
        Causal mask (bottom-right aligned when ``S_q < S_k``).
    G : torch.Tensor, optional
        Cached operator, (dk, dk), (H, dk, dk) or (B, H, dk, dk).
    A : torch.Tensor, optional
        Cached metric-learner output (B, H, dk, dk); ignored when ``G`` is given.
    return_deductive : bool, default False
        Also return the :class:`Deductive` tensors.
    check_finite : bool, default True
        Raise ``ValueError`` naming ``q``, ``k``, ``v``, ``G`` or ``A`` if it holds
        inf/NaN (one host synchronisation for all), and
        :class:`~pyverify.kernels.validation.PowerLawOverflowError` instead of
        returning inf/NaN when the power law overflows, and ``NonFiniteStageError``
        ``[scores]`` when a score would overflow. False skips these checks
        (measured on a loaded 1-thread CPU: 1-12% of the call at (B, H, S, dk) =
        (2, 8, 512, 64), 6-20% at (2, 4, 128, 32), ~30% on sub-millisecond calls);
        the result is then unspecified where a bad value reaches (see :func:`attend`).
    precision : {"compensated", "rounded"}, default "compensated"
        bfloat16/float16 only: how ``Q G`` enters SDPA (see :func:`sdpa_qg`);
        the default keeps the error at the level of plain SDPA.
    key_norm : torch.Tensor, optional
        An upper bound of ``max_j |k_j|`` per (B, H), e.g.
        :meth:`~pyverify.kernels.cache.LayerCache.key_norm_bound`. When given, the
        ``[scores]`` check runs even with ``check_finite=False`` and uses the bound
        instead of reading ``k`` (a decode step over a long cache).

    Returns
    -------
    torch.Tensor or (torch.Tensor, Deductive)
        Output (B, H, S_q, dv) in ``q``'s dtype (and the deductive tensors in
        the compute dtype: float64 for float64 input, else float32).
    """
    q, k, v = check_qkv(q, k, v, causal=causal)
    B, H, _, dk = q.shape
    if G is not None:
        G4 = check_g(G, "G", B=B, H=H, dk=dk, like=q)
        ded = Deductive(None, None, None, G4)
    else:
        if params is None:
            raise InputValueError("params is required unless G is given")
        check_params(params, H, dk)
        if A is not None:
            cdt = compute_dtype(q.dtype)
            check_tensor(A, "A", shape=(B, H, dk, dk), device=q.device)
            A_LM, A_P, G4 = energy_curvature(A.to(cdt), params, check_finite=check_finite)
            ded = Deductive(A, A_LM, A_P, G4)
        else:
            ded = compute_g(q, params, check_finite=check_finite)
            G4 = ded.G
    look_closer = check_finite and not inputs_pass(q, k, v, G4)
    if look_closer:  # the exact checks name the input, or the score, that failed
        check_inputs_finite(("q", q), ("k", k), ("v", v), ("G", G), ("A", A))
    out = sdpa_qg(
        q,
        k,
        v,
        G4,
        causal=causal,
        precision=precision,
        check_scores=look_closer or key_norm is not None,
        key_norm=key_norm,
    )
    return (out, ded) if return_deductive else out
