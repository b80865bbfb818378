"""A cheap screen of the attention's inputs: one reduction per tensor, one host read.

The attention entry points must refuse a non-finite input (naming it) and a score
beyond the range SDPA accumulates in (``[scores]``), because what torch's CPU SDPA
makes of either depends on its dispatch. Checked one by one that costs a sum per
input and then the norms of every row of ``Q G`` and ``K``: five passes over
(B, H, S, dk) tensors beside SDPA's own. :func:`inputs_pass` costs three:

* ``|Q|_F`` and ``|K|_F`` (Frobenius norms of the whole tensors) and the sum of ``V``,
  each finite only if every entry is;
* ``max_h |G_h|_F``;
* every score obeys ``|(q_i G) . k_j| <= |q_i| |G_h|_2 |k_j| <= |Q|_F max_h |G_h|_F |K|_F``
  (Cauchy-Schwarz), compared with a quarter of the compute dtype's range (the margin
  the exact check keeps too, for the rounding of the products and the norms).

When the screen passes, nothing can be wrong; when it does not, the exact checks
(:func:`~pyverify.kernels.validation.check_inputs_finite`, then
:func:`~pyverify.kernels.validation.check_score_range` on what SDPA receives) decide
and raise the same errors as always, so a false alarm (an overflowing norm of finite
entries, a loose bound) costs time, never a result.
"""

from __future__ import annotations

import math

import torch

from pyverify.kernels.validation import compute_dtype

__all__ = ["inputs_pass"]


def inputs_pass(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, G: torch.Tensor) -> bool:
    """Whether ``q, k, v, G`` are finite and no score ``(q_i G) . k_j`` can overflow.

    Parameters
    ----------
    q, k, v : torch.Tensor
        (B, H, S_q, dk), (B, H, S_k, dk), (B, H, S_k, dv).
    G : torch.Tensor
        4-D, broadcastable to (B, H, dk, dk).

    Returns
    -------
    bool
        True: every check of the entry points passes. False: run the exact checks.
    """
    cdt = compute_dtype(q.dtype)
    found = torch.stack(
        (
            torch.linalg.vector_norm(q, dtype=cdt),
            torch.linalg.vector_norm(k, dtype=cdt),
            v.sum(dtype=cdt),
            torch.linalg.vector_norm(G.to(cdt), dim=(-2, -1)).amax(),
        )
    ).tolist()
    if not all(math.isfinite(x) for x in found):
        return False
    nq, nk, _, ng = found
    return nq * ng * nk <= torch.finfo(cdt).max / 4
