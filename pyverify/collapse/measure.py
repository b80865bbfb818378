"""Measurements of a PLDR model's deductive tensors on fixed inputs (float64).

All numbers are computed on a float64 copy of the model, on fixed inputs (and,
for the pairwise order parameter, continuations sampled from seeded
generators), so they are deterministic. Per layer x head unless said:

* order parameter of ``T`` in A, A_LM, A_P, G at every context length ``S`` of
  the settings: ``sqrt(mean_i ||T_i - mean T||_F^2) / ||mean T||_F`` over the
  probe inputs ``i`` (as ``pyverify.diagnose.order_parameter``);
* the author's pairwise order parameter (``audit_lib.order_pair``, per layer
  with the heads pooled): for two continuations ``x1, x2`` of one prompt,
  ``num = sqrt(mean((x1 - x2)^2))``, RMS form ``num / (rms(x1) + rms(x2)) * 2``,
  signed-mean form ``num / (|mean x1| + |mean x2|) * 2``, both 0 when num = 0;
* ``eps_G``: ``max_i ||G_i - G_0||_F / ||G_0||_F`` (the first probe's G-cache);
* rank profile of A and A_LM: ``sigma_2 / sigma_1`` and the numerical rank
  (singular values above ``rank_rtol * sigma_1``), averaged over probes;
* identical-rows residual of A, ``||A - 1 mean_rows(A)||_F / ||A||_F``, and
  per layer the cross-head residual ``||A_h - mean_h A||_F / ||mean_h A||_F``
  (the paper's learned singularity: both 0), averaged over probes;
* the largest singular value of the metric learner's Jacobian (the row map
  ``Phi(LN_rows(.))`` from a row of ``D = Q^T Q`` to a row of ``A``) on the rows
  the first ``jac_probes`` probes visit (max over rows);
* mean ``|P|``, ``||a||_F``, the fraction of A_LM entries at the ``eps`` floor
  (learned part ``A_LM - eps <= eps``);
* RoPE-commutant residual of the probe-mean G.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import Tensor

from pyverify.collapse.model import DEDUCTIVE, METRIC_EPS, PLDRDecoder
from pyverify.kernels.collapsed import project_to_rope_commutant

__all__ = [
    "FLOOR_FACTOR",
    "as_float64",
    "causal_val_loss",
    "commutant_residual",
    "deductive_stack",
    "measure",
    "order_pair",
    "pairwise_order",
    "sample_continuations",
    "val_loss",
]

FLOOR_FACTOR = 2.0
"""An A_LM entry is "at the floor" when it is at most ``FLOOR_FACTOR * eps``."""


def as_float64(model: PLDRDecoder) -> PLDRDecoder:
    """A float64 copy of ``model`` in eval mode."""
    return copy.deepcopy(model).double().eval()


@torch.no_grad()
def deductive_stack(
    model64: PLDRDecoder, probes: Tensor, names: tuple[str, ...] = DEDUCTIVE
) -> dict[str, Tensor]:
    """Deductive tensors of every probe: name -> ``(N, L, H, dk, dk)`` float64."""
    _, deds, _ = model64(probes)
    return {t: torch.stack([d[t] for d in deds], dim=1) for t in names}


def _fro(x: Tensor) -> Tensor:
    return torch.linalg.matrix_norm(x)


def _safe_div(num: Tensor, den: Tensor) -> Tensor:
    return torch.where(num == 0, torch.zeros_like(num), num / den.clamp_min(1e-300))


def order_param(X: Tensor) -> Tensor:
    """``(L, H)`` RMS fluctuation over axis 0 relative to the norm of the mean."""
    mean = X.mean(dim=0)
    dev = torch.sqrt(torch.mean(_fro(X - mean) ** 2, dim=0))
    return _safe_div(dev, _fro(mean))


def order_pair(x1: Tensor, x2: Tensor) -> tuple[float, float]:
    """The author's pairwise order parameter of two same-shape tensors: (RMS, signed-mean) form."""
    num = torch.sqrt(torch.mean((x1 - x2) ** 2))
    if float(num) == 0.0:
        return 0.0, 0.0
    rms = 0.5 * (torch.sqrt(torch.mean(x1**2)) + torch.sqrt(torch.mean(x2**2)))
    mean = 0.5 * (x1.mean().abs() + x2.mean().abs())
    return float(num / rms), float(num / mean.clamp_min(1e-300))


def commutant_residual(G: Tensor) -> Tensor:
    """Relative distance of ``G (..., dk, dk)`` from the RoPE commutant (``dk`` even, finite)."""
    P = project_to_rope_commutant(G)
    return _fro(G - P) / _fro(G).clamp_min(torch.finfo(G.dtype).tiny)


def _rank_profile(X: Tensor, rtol: float) -> tuple[Tensor, Tensor]:
    s = torch.linalg.svdvals(X)  # (N, L, H, dk)
    ratio = (s[..., 1] / s[..., 0].clamp_min(torch.finfo(X.dtype).tiny)).mean(dim=0)
    rank = (s > rtol * s[..., :1]).sum(dim=-1).double().mean(dim=0)
    return ratio, rank


@torch.no_grad()
def val_loss(model64: PLDRDecoder, inputs: Tensor, targets: Tensor, chunk: int = 64) -> float:
    """Mean next-token cross-entropy (nats per byte) on fixed validation windows."""
    total = 0.0
    for i in range(0, inputs.shape[0], chunk):
        logits, _, _ = model64(inputs[i : i + chunk])
        total += float(
            torch.nn.functional.cross_entropy(
                logits.flatten(0, 1), targets[i : i + chunk].flatten(), reduction="sum"
            )
        )
    return total / targets.numel()


@torch.no_grad()
def causal_val_loss(
    model64: PLDRDecoder, inputs: Tensor, targets: Tensor, chunk: int = 64
) -> float:
    """Next-token cross-entropy with every position predicted from its prefix alone.

    ``G`` is computed from the Gram of the WHOLE input (``Q^T Q`` sums over all
    positions), so a teacher-forced pass lets each position see the later
    tokens through ``G``: its loss (:func:`val_loss`) is not a next-token loss
    unless ``G`` is input-invariant. Here position ``t`` is scored on a pass
    over ``inputs[:, :t + 1]`` (full recomputation, as in greedy decoding).
    """
    total = 0.0
    S = inputs.shape[1]
    for i in range(0, inputs.shape[0], chunk):
        x, y = inputs[i : i + chunk], targets[i : i + chunk]
        for t in range(S):
            logits, _, _ = model64(x[:, : t + 1])
            total += float(
                torch.nn.functional.cross_entropy(logits[:, -1], y[:, t], reduction="sum")
            )
    return total / targets.numel()


@torch.no_grad()
def sample_continuations(
    model64: PLDRDecoder, prompts: Tensor, n_new: int, seed: int, branch: int
) -> Tensor:
    """Prompts followed by ``n_new`` tokens sampled at temperature 1 (full recomputation).

    The generator is seeded by ``(seed, branch)``, so two branches give two
    different, reproducible continuations of every prompt.
    """
    g = torch.Generator().manual_seed(1_000_003 * seed + branch)
    seq = prompts
    for _ in range(n_new):
        logits, _, _ = model64(seq)
        probs = torch.softmax(logits[:, -1], dim=-1)
        seq = torch.cat((seq, torch.multinomial(probs, 1, generator=g)), dim=1)
    return seq


@torch.no_grad()
def pairwise_order(model64: PLDRDecoder, pairs: tuple[Tensor, Tensor]) -> dict[str, Any]:
    """Author's order parameter per prompt and layer: ``{tensor: {"rms", "signed_mean"}}``.

    Each value is a nested list ``(n_prompts, L)``; the heads of a layer are pooled.
    """
    X1, X2 = deductive_stack(model64, pairs[0]), deductive_stack(model64, pairs[1])
    out: dict[str, Any] = {}
    for t in DEDUCTIVE:
        n, L = X1[t].shape[:2]
        forms = [
            [order_pair(X1[t][i, layer], X2[t][i, layer]) for layer in range(L)] for i in range(n)
        ]
        out[t] = {
            "rms": [[f[0] for f in row] for row in forms],
            "signed_mean": [[f[1] for f in row] for row in forms],
        }
    return out


def jacobian_top_sv(model64: PLDRDecoder, probes: Tensor) -> list[list[float]]:
    """``(L, H)`` largest singular value of the metric learner's row Jacobian on visited rows."""
    from torch.func import jacrev, vmap

    with torch.no_grad():
        D = deductive_stack(model64, probes, ("D",))["D"]  # (N, L, H, dk, dk)
    out = []
    for layer, dec in enumerate(model64.layers):
        mha = dec.mha
        rows = D[:, layer]  # (N, H, dk, dk)
        N, H, dk = rows.shape[0], rows.shape[1], rows.shape[-1]
        flat = rows.transpose(0, 1).reshape(H * N * dk, dk)
        J = vmap(jacrev(mha.metric_rows))(flat)  # (H*N*dk, dk, dk)
        sv = torch.linalg.matrix_norm(J.detach(), ord=2).reshape(H, N * dk)
        out.append(sv.amax(dim=1).tolist())
    return out


@torch.no_grad()
def measure(
    model64: PLDRDecoder,
    probes_by_len: dict[int, Tensor],
    pairs: tuple[Tensor, Tensor],
    rank_rtol: float,
    jac_probes: int,
) -> dict[str, Any]:
    """All measurements of one step (JSON-ready nested lists; see the module docstring)."""
    S_max = max(probes_by_len)
    out: dict[str, Any] = {"order_parameter": {}, "eps_G": {}}
    X: dict[str, Tensor] = {}
    for S in sorted(probes_by_len):
        X = deductive_stack(model64, probes_by_len[S])
        out["order_parameter"][str(S)] = {t: order_param(X[t]).tolist() for t in DEDUCTIVE}
        G = X["G"]
        out["eps_G"][str(S)] = _safe_div(_fro(G - G[:1]), _fro(G[:1])).amax(dim=0).tolist()
    # X now holds the longest context's tensors
    A = X["A"]
    out["pairwise_order"] = pairwise_order(model64, pairs)
    out["commutant_residual_G"] = commutant_residual(X["G"].mean(dim=0)).tolist()
    out["identical_rows_residual_A"] = (
        _safe_div(_fro(A - A.mean(dim=-2, keepdim=True)), _fro(A)).mean(dim=0).tolist()
    )
    head_mean = A.mean(dim=2, keepdim=True)
    cross = torch.sqrt((_fro(A - head_mean) ** 2).mean(dim=2)) / _fro(head_mean[:, :, 0])
    out["cross_head_residual_A"] = cross.mean(dim=0).tolist()
    for t in ("A", "A_LM"):
        ratio, rank = _rank_profile(X[t], rank_rtol)
        out[f"sigma2_over_sigma1_{t}"] = ratio.tolist()
        out[f"numerical_rank_{t}"] = rank.tolist()
    out["floor_fraction_A_LM"] = (
        (X["A_LM"] <= FLOOR_FACTOR * METRIC_EPS).double().mean(dim=(0, 3, 4)).tolist()
    )
    with torch.enable_grad():
        out["jacobian_top_sv"] = jacobian_top_sv(model64, probes_by_len[S_max][:jac_probes])
    out["mean_abs_P"] = [dec.mha.P.abs().mean(dim=(1, 2)).tolist() for dec in model64.layers]
    out["norm_a"] = [_fro(dec.mha.a).tolist() for dec in model64.layers]
    return out
