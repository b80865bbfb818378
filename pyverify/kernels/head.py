"""Batched multi-head PLGA on (B, H, S, dk) tensors.

The stages follow ``docs/plga-spec.md``:

1. ``D = Q^T Q`` per (batch, head) (:func:`density_operator`);
2.-3. ``A = Phi(LayerNorm_rows(D))`` (:func:`metric_learner`);
4.-6. ``A_LM = iSwiGLU(W A + b) + eps``, ``A_P = A_LM ** P``, ``G = a A_P + b_a``
   (:func:`energy_curvature`);
7.-8. ``softmax(Q G K^T / sqrt(dk) + causal mask) V`` (:func:`attend`), evaluated as
   SDPA on ``Q' = Q G`` so the fused kernels do the quadratic work.

Vectorisation: the learner acts on rows, so the (batch, head) matrices are laid
out as (H, dk * B, dk). The shared learner (``pldr_model_v510``'s form) runs each
dense layer as ONE ``addmm`` over all H * dk * B rows, per-head learners as one
``baddbmm`` over heads; no weight tiling, no loop over heads. ``W A`` and
``a A_P`` are one ``bmm`` each on (H, dk, B * dk).

Precision: float64 inputs compute in float64. float32, bfloat16 and float16
inputs compute ``D``, all LayerNorm statistics, the metric learner and ``G`` in
float32 (as torch's fused SDPA kernels keep softmax statistics in float32);
``Q G`` is formed in float32 and enters SDPA either split into two
input-dtype parts (``precision="compensated"``, the default here: error at
the level of plain SDPA) or rounded once (``"rounded"``, fastest); see
:func:`sdpa_qg`. The deductive tensors are returned in the compute dtype.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.errors import InputTypeError, InputValueError
from pyverify.kernels.params import HeadParams
from pyverify.kernels.validation import (
    NonFiniteStageError,
    check_finite,
    check_g,
    check_inputs_finite,
    check_qkv,
    check_score_range,
    check_tensor,
    compute_dtype,
    explain_nonfinite,
)

__all__ = [
    "Deductive",
    "attend",
    "compute_g",
    "density_operator",
    "energy_curvature",
    "metric_learner",
    "plga_attention",
    "rotate_query",
    "sdpa",
    "sdpa_qg",
    "split_query_product",
]


@dataclass(frozen=True)
class Deductive:
    """Deductive outputs of PLGA, each (B, H, dk, dk) in the compute dtype.

    Attributes
    ----------
    A : torch.Tensor or None
        Metric-learner output (None when ``G`` was supplied).
    A_LM : torch.Tensor or None
        Metric tensor ``iSwiGLU(W A + b) + eps`` (None when ``G`` was supplied).
    A_P : torch.Tensor or None
        Potential tensor ``A_LM ** P`` (None when ``G`` was supplied).
    G : torch.Tensor
        Energy-curvature operator (broadcastable to (B, H, dk, dk)).
    """

    A: torch.Tensor | None
    A_LM: torch.Tensor | None
    A_P: torch.Tensor | None
    G: torch.Tensor


def _to_rows(X: torch.Tensor) -> torch.Tensor:
    """(B, H, dk, dk) -> contiguous (H, dk, B, dk) "row layout"."""
    return X.permute(1, 2, 0, 3).contiguous()


def _from_rows(X: torch.Tensor) -> torch.Tensor:
    """(H, dk, B, dk) row layout -> (B, H, dk, dk) view."""
    return X.permute(2, 0, 1, 3)


def _layer_norm_rows(X: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float):
    """LayerNorm over the last axis of (H, N, dk) with per-head affine (H, dk)."""
    Y = F.layer_norm(X, (X.shape[-1],), eps=eps)
    return torch.addcmul(beta[:, None, :], Y, gamma[:, None, :])


def density_operator(q: torch.Tensor) -> torch.Tensor:
    """Return ``D = Q^T Q`` for each (batch, head), in the compute dtype.

    Parameters
    ----------
    q : torch.Tensor
        (B, H, S, dk) rotated queries (all S rows enter: D is global).

    Returns
    -------
    torch.Tensor
        (B, H, dk, dk), float64 for float64 input, else float32.
    """
    check_tensor(q, "q", shape=("B", "H", "S", "dk"))
    qc = q.to(compute_dtype(q.dtype))
    return torch.matmul(qc.transpose(-1, -2), qc)


def _metric_learner_rows(X: torch.Tensor, p: HeadParams) -> torch.Tensor:
    """Run steps 2-3 on row layout (H, N, dk)."""
    if p.shared_learner:
        H, N, dk = X.shape
        return _shared_learner_2d(X.reshape(H * N, dk), p).view(H, N, dk)
    X = _layer_norm_rows(X, p.ln0_gamma, p.ln0_beta, p.ln_eps)
    for unit in p.reslayers:
        Y = X
        for blk in unit.dense:
            h1 = torch.baddbmm(blk.b1[:, None, :], Y, blk.W1)
            h2 = torch.baddbmm(blk.b2[:, None, :], Y, blk.W2)
            Y = torch.baddbmm(blk.b3[:, None, :], F.silu(h1) * h2, blk.W3)
        X = _layer_norm_rows(X + Y, unit.ln_gamma, unit.ln_beta, p.ln_eps)
    return X


def _shared_learner_2d(X: torch.Tensor, p: HeadParams) -> torch.Tensor:
    """Shared learner on all rows at once: (N, dk) -> (N, dk), one GEMM per weight."""
    dk, eps = X.shape[-1], p.ln_eps
    X = F.layer_norm(X, (dk,), p.ln0_gamma, p.ln0_beta, eps)
    for unit in p.reslayers:
        Y = X
        for blk in unit.dense:
            h1 = torch.addmm(blk.b1, Y, blk.W1)
            h2 = torch.addmm(blk.b2, Y, blk.W2)
            Y = torch.addmm(blk.b3, F.silu(h1) * h2, blk.W3)
        X = F.layer_norm(X + Y, (dk,), unit.ln_gamma, unit.ln_beta, eps)
    return X


def metric_learner(D: torch.Tensor, params: HeadParams) -> torch.Tensor:
    """Return ``A = Phi(LayerNorm_rows(D))`` for every (batch, head).

    Parameters
    ----------
    D : torch.Tensor
        (B, H, dk, dk) density operators (float32 or float64).
    params : HeadParams
        Parameters of the H heads (converted to ``D``'s dtype/device).

    Returns
    -------
    torch.Tensor
        (B, H, dk, dk) metric-learner output, dtype of ``D``.
    """
    B, H, dk, _ = D.shape
    p = params.to(D.device, D.dtype)
    X = _to_rows(D).view(H, dk * B, dk)
    return _from_rows(_metric_learner_rows(X, p).view(H, dk, B, dk))


def _energy_rows(A_rows: torch.Tensor, p: HeadParams, check: bool):
    """Run steps 4-6 on row layout (H, dk, B, dk); return (A_LM, A_P, G) in row layout."""
    H, dk, B, _ = A_rows.shape
    Z = torch.bmm(p.W, A_rows.view(H, dk, B * dk)).view(H, dk, B, dk) + p.b[:, :, None, :]
    A_LM = Z * F.silu(Z) + p.metric_eps
    A_P = torch.pow(A_LM, p.P[:, :, None, :])
    G = torch.bmm(p.a, A_P.view(H, dk, B * dk)).view(H, dk, B, dk) + p.b_a[:, :, None, :]
    if check:
        check_finite(G, "power law A_LM ** P / G = a A_P + b_a")
    return A_LM, A_P, G


def energy_curvature(
    A: torch.Tensor, params: HeadParams, *, check_finite: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return ``(A_LM, A_P, G)`` from the metric-learner output ``A``.

    Parameters
    ----------
    A : torch.Tensor
        (B, H, dk, dk) metric-learner output (float32 or float64).
    params : HeadParams
        Parameters of the H heads.
    check_finite : bool, default True
        Raise :class:`~pyverify.kernels.validation.PowerLawOverflowError` if the
        power law overflowed (one host synchronisation).

    Returns
    -------
    tuple of torch.Tensor
        ``A_LM``, ``A_P``, ``G``, each (B, H, dk, dk).
    """
    p = params.to(A.device, A.dtype)
    try:
        outs = _energy_rows(_to_rows(A), p, check_finite)
    except NonFiniteStageError:
        explain_nonfinite([("A", A)], params)  # a NaN A or parameter is no overflow
        raise
    return tuple(_from_rows(t) for t in outs)  # type: ignore[return-value]


def compute_g(q: torch.Tensor, params: HeadParams, *, check_finite: bool = True) -> Deductive:
    """Run steps 1-6 and return all deductive tensors.

    Parameters
    ----------
    q : torch.Tensor
        (B, H, S, dk) rotated queries.
    params : HeadParams
        Parameters of the H heads.
    check_finite : bool, default True
        Raise if the power law overflowed.

    Returns
    -------
    Deductive
        ``A``, ``A_LM``, ``A_P``, ``G`` each (B, H, dk, dk) in the compute dtype.
    """
    B, H, _, dk = q.shape
    _check_params(params, H, dk)
    D = density_operator(q)
    p = params.to(D.device, D.dtype)
    A_rows = _metric_learner_rows(_to_rows(D).view(H, dk * B, dk), p).view(H, dk, B, dk)
    try:
        A_LM, A_P, G = _energy_rows(A_rows, p, check_finite)
    except NonFiniteStageError:
        explain_nonfinite([("q", q)], params)  # a NaN q or parameter is no overflow
        raise
    return Deductive(_from_rows(A_rows), _from_rows(A_LM), _from_rows(A_P), _from_rows(G))


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
    if check_finite:
        check_inputs_finite((names[0], q), (names[1], k), ("v", v), ("G", G4))
    return sdpa_qg(q, k, v, G4, causal=causal, precision=precision, check_scores=check_finite)


def _check_params(params: object, H: int, dk: int) -> None:
    if not isinstance(params, HeadParams):
        raise InputTypeError(
            "params must be a pyverify.kernels.HeadParams (use kernels.from_reference); "
            f"got {type(params).__name__}"
        )
    if params.num_heads != H or params.dk != dk:
        raise InputValueError(
            f"params hold H={params.num_heads} heads of dk={params.dk}; q has H={H}, dk={dk}"
        )


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
        _check_params(params, H, dk)
        if A is not None:
            cdt = compute_dtype(q.dtype)
            check_tensor(A, "A", shape=(B, H, dk, dk), device=q.device)
            A_LM, A_P, G4 = energy_curvature(A.to(cdt), params, check_finite=check_finite)
            ded = Deductive(A, A_LM, A_P, G4)
        else:
            ded = compute_g(q, params, check_finite=check_finite)
            G4 = ded.G
    if check_finite:
        check_inputs_finite(("q", q), ("k", k), ("v", v), ("G", G), ("A", A))
    out = sdpa_qg(
        q,
        k,
        v,
        G4,
        causal=causal,
        precision=precision,
        check_scores=check_finite or key_norm is not None,
        key_norm=key_norm,
    )
    return (out, ded) if return_deductive else out
