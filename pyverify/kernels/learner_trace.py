"""The kernels' steps 1-3 run again, op for op, with every intermediate kept.

:func:`trace_learner` repeats :func:`~pyverify.kernels.metric.density_operator` and
:func:`~pyverify.kernels.metric.metric_learner` with the same torch operations on the same
shapes (the same GEMMs over all rows, SiLU and the gate product, the residual as the last
product's accumulator), the LayerNorms through ``torch.native_layer_norm``, the routine
under ``F.layer_norm``, which also returns the mean and reciprocal standard deviation it
used. A caller that bounds the kernel on this trace checks that its ``A`` is the kernel's
bit for bit (:func:`trace_learner` returns it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

from pyverify.kernels import metric as km
from pyverify.kernels.params import HeadParams

__all__ = ["LayerNormStep", "LearnerTrace", "SwiGLUStep", "trace_learner"]


def _np(t: torch.Tensor, H: int) -> np.ndarray:
    """A trace tensor as float64 NumPy in (H, N, n) layout."""
    a = t.detach().to("cpu", torch.float64).numpy()
    return a.reshape(H, -1, a.shape[-1])


@dataclass(frozen=True)
class LayerNormStep:
    """One LayerNorm call: input ``x``, output ``y``, the ``mean`` and ``rstd`` it used."""

    x: np.ndarray
    y: np.ndarray
    mean: np.ndarray
    rstd: np.ndarray


@dataclass(frozen=True)
class SwiGLUStep:
    """One SwiGLU block: input ``Y``, ``h1``, ``h2``, ``s1 = silu(h1)``, ``g = s1 h2``, output.

    ``acc``: the residual's accumulator ``X + b3`` where the block is its unit's last.
    """

    Y: np.ndarray
    h1: np.ndarray
    h2: np.ndarray
    s1: np.ndarray
    g: np.ndarray
    out: np.ndarray
    acc: np.ndarray | None


@dataclass
class LearnerTrace:
    """``D`` (row layout ``(H, dk * B, dk)``), the steps in order, and ``A`` (B, H, dk, dk)."""

    D: np.ndarray
    steps: list[LayerNormStep | SwiGLUStep] = field(default_factory=list)
    A: torch.Tensor | None = None


def trace_learner(q: torch.Tensor, params: HeadParams) -> LearnerTrace:
    """Steps 1-3 of the kernels on ``q`` (B, H, S, dk), every intermediate recorded."""
    D = km.density_operator(q)
    B, H, dk, _ = D.shape
    p = params.to(D.device, D.dtype)
    X = km._to_rows(D).view(H, dk * B, dk)
    shared = p.shared_learner
    if shared:
        X = X.reshape(H * dk * B, dk)
    # looked up at the call, as the kernels do: a function patched there is traced too
    mm, mm_ = (km._mm, km._mm_) if shared else (km._bmm, km._bmm_)
    tr = LearnerTrace(_np(X, H))

    def ln(Xin: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
        if shared:
            Y, mu, rs = torch.native_layer_norm(Xin, (dk,), gamma, beta, p.ln_eps)
        else:
            T, mu, rs = torch.native_layer_norm(Xin, (dk,), None, None, p.ln_eps)
            Y = torch.addcmul(beta[:, None, :], T, gamma[:, None, :])
        tr.steps.append(
            LayerNormStep(_np(Xin, H), _np(Y, H), _np(mu, H)[..., 0], _np(rs, H)[..., 0])
        )
        return Y

    X = ln(X, p.ln0_gamma, p.ln0_beta)
    for unit in p.reslayers:
        Y, n = X, len(unit.dense)
        for i, blk in enumerate(unit.dense):
            h1 = mm(blk.b1, Y, blk.W1)
            h1c = h1.clone()
            s1 = F.silu(h1, inplace=True)
            s1c = s1.clone()
            h2 = mm(blk.b2, Y, blk.W2)
            g = s1.mul_(h2)
            acc = None
            if i == n - 1:
                acc = X + (blk.b3 if X.dim() == 2 else blk.b3.unsqueeze(-2))
                accc = acc.clone()
                out = mm_(acc, g, blk.W3)
            else:
                out = mm(blk.b3, g, blk.W3)
            tr.steps.append(SwiGLUStep(
                _np(Y, H), _np(h1c, H), _np(h2, H), _np(s1c, H), _np(g, H), _np(out, H),
                None if acc is None else _np(accc, H),
            ))  # fmt: skip
            Y = out
        X = ln(Y if n else X + X, unit.ln_gamma, unit.ln_beta)
    tr.A = X.reshape(H, dk, B, dk).permute(2, 0, 1, 3)
    return tr
