"""Measurements of a PLDR model's deductive tensors over a fixed probe set (float64).

All numbers are computed on a float64 copy of the model, on fixed inputs, so
they are deterministic. Per layer x head:

* order parameter of ``T`` in A, A_LM, A_P, G: ``sqrt(mean_i ||T_i - mean T||_F^2)
  / ||mean T||_F`` over the probe inputs ``i`` (as ``pyverify.diagnose.order_parameter``);
* ``eps_G``: ``max_i ||G_i - G_0||_F / ||G_0||_F``, the invariance error of the
  first probe's G-cache (the prompt's cache) over the probe set;
* rank profile of A and A_LM: ``sigma_2 / sigma_1`` and the numerical rank
  (singular values above ``rank_rtol * sigma_1``), averaged over probes;
* identical-rows residual of A: ``||A - 1 mean_rows(A)||_F / ||A||_F`` (0 for
  the paper's "learned singularity" ``A = 1 alpha^T``), averaged over probes;
* RoPE-commutant residual of the probe-mean G: ``||G - Pi(G)||_F / ||G||_F`` with
  ``Pi`` the projection on block-diagonal ``x I + y J`` 2 x 2 blocks.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import Tensor

from pyverify.collapse.model import DEDUCTIVE, PLDRDecoder
from pyverify.kernels.collapsed import project_to_rope_commutant

__all__ = ["commutant_residual", "deductive_stack", "measure", "order_vs_length", "val_loss"]


def as_float64(model: PLDRDecoder) -> PLDRDecoder:
    """A float64 copy of ``model`` in eval mode."""
    return copy.deepcopy(model).double().eval()


@torch.no_grad()
def deductive_stack(model64: PLDRDecoder, probes: Tensor) -> dict[str, Tensor]:
    """Deductive tensors of every probe: name -> ``(N, L, H, dk, dk)`` float64."""
    _, deds, _ = model64(probes)
    return {t: torch.stack([d[t] for d in deds], dim=1) for t in DEDUCTIVE}


def _fro(x: Tensor) -> Tensor:
    return torch.linalg.matrix_norm(x)


def order_param(X: Tensor) -> Tensor:
    """``(L, H)`` RMS fluctuation over axis 0 relative to the norm of the mean."""
    mean = X.mean(dim=0)
    dev = torch.sqrt(torch.mean(_fro(X - mean) ** 2, dim=0))
    return dev / _fro(mean).clamp_min(torch.finfo(X.dtype).tiny)


def commutant_residual(G: Tensor) -> Tensor:
    """Relative distance of ``G (..., dk, dk)`` from the RoPE commutant (``dk`` even, finite)."""
    P = project_to_rope_commutant(G)
    return _fro(G - P) / _fro(G).clamp_min(torch.finfo(G.dtype).tiny)


def _rank_profile(X: Tensor, rtol: float) -> tuple[Tensor, Tensor]:
    s = torch.linalg.svdvals(X)  # (N, L, H, dk)
    ratio = (s[..., 1] / s[..., 0].clamp_min(torch.finfo(X.dtype).tiny)).mean(dim=0)
    rank = (s > rtol * s[..., :1]).sum(dim=-1).double().mean(dim=0)
    return ratio, rank


def _rows(x: Tensor) -> list:
    return x.tolist()


@torch.no_grad()
def val_loss(model64: PLDRDecoder, inputs: Tensor, targets: Tensor) -> float:
    """Mean next-token cross-entropy on fixed validation windows."""
    logits, _, _ = model64(inputs)
    return float(torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()))


@torch.no_grad()
def measure(model64: PLDRDecoder, probes: Tensor, rank_rtol: float) -> dict[str, Any]:
    """All per-layer x head measurements on the probe set (JSON-ready nested lists)."""
    X = deductive_stack(model64, probes)
    G = X["G"]
    eps_g = (_fro(G - G[:1]) / _fro(G[:1]).clamp_min(1e-300)).amax(dim=0)
    out: dict[str, Any] = {
        "order_parameter": {t: _rows(order_param(X[t])) for t in DEDUCTIVE},
        "eps_G": _rows(eps_g),
        "commutant_residual_G": _rows(commutant_residual(G.mean(dim=0))),
        "identical_rows_residual_A": _rows(
            (_fro(X["A"] - X["A"].mean(dim=-2, keepdim=True)) / _fro(X["A"])).mean(dim=0)
        ),
    }
    for t in ("A", "A_LM"):
        ratio, rank = _rank_profile(X[t], rank_rtol)
        out[f"sigma2_over_sigma1_{t}"] = _rows(ratio)
        out[f"numerical_rank_{t}"] = _rows(rank)
    return out


@torch.no_grad()
def order_vs_length(model64: PLDRDecoder, probes_by_len: dict[int, Tensor]) -> dict[str, Any]:
    """Order parameter (max over layer x head) of each tensor at each context length S."""
    out: dict[str, Any] = {"S": sorted(probes_by_len)}
    for t in DEDUCTIVE:
        out[t] = []
    for S in out["S"]:
        X = deductive_stack(model64, probes_by_len[S])
        for t in DEDUCTIVE:
            out[t].append(float(order_param(X[t]).max()))
    return out
