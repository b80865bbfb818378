"""Order parameters: the suite's per-head form, ``eps_G``, and the author's pairwise form.

* :func:`order_param`: per layer x head over the sequences ``i`` of a set,
  ``sqrt(mean_i ||T_i - mean T||_F^2) / ||mean T||_F`` (0 when the numerator
  is 0), as ``pyverify.diagnose.order_parameter``;
* :func:`eps_g`: ``max_i ||G_i - G_0||_F / ||G_0||_F`` (the first sequence's
  ``G`` as the G-cache);
* :func:`order_pair` (:func:`pair_parts` with the parts): the author's
  ``audit_lib.order_pair`` of two tensors,
  ``num = sqrt(mean((x1 - x2)^2))``, RMS form ``num / (1/2 (rms x1 + rms x2))``,
  signed-mean form ``num / (1/2 (|mean x1| + |mean x2|))``, both 0 when
  ``num = 0``. The author's signed-mean form is ``+inf`` when its denominator
  is 0 and ``num > 0``; here the denominator is clamped at 1e-300 (a finite,
  JSON-ready number) and returned beside the forms, so a rule can call the
  form ill-conditioned below a floor;
* :func:`pairwise_order`: :func:`order_pair` per prompt and layer (the heads of
  a layer pooled) between two sampled continuations of each prompt
  (:func:`sample_continuations`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from torch import Tensor

from pyverify.measure.inputs import TokenSet, n_seqs
from pyverify.measure.tensors import deductive_stack
from pyverify.trainable.decoder import DEDUCTIVE, PLDRDecoder

__all__ = [
    "PairOrder",
    "eps_g",
    "fro",
    "order_pair",
    "order_param",
    "pair_parts",
    "pairwise_order",
    "safe_div",
    "sample_continuations",
]

TINY = 1e-300
"""Clamp of a denominator that would be 0 (the quotient is then reported as 0 or huge)."""


def fro(x: Tensor) -> Tensor:
    """Frobenius norm over the last two axes."""
    return torch.linalg.matrix_norm(x)


def safe_div(num: Tensor, den: Tensor) -> Tensor:
    """``num / den``, 0 where ``num`` is 0 and ``den`` clamped at :data:`TINY`."""
    return torch.where(num == 0, torch.zeros_like(num), num / den.clamp_min(TINY))


def order_param(X: Tensor) -> Tensor:
    """``(L, H)`` RMS fluctuation over axis 0 of ``X (N, L, H, m, n)`` over the norm of the mean."""
    mean = X.mean(dim=0)
    dev = torch.sqrt(torch.mean(fro(X - mean) ** 2, dim=0))
    return safe_div(dev, fro(mean))


def eps_g(G: Tensor) -> Tensor:
    """``(L, H)`` largest relative distance of ``G (N, L, H, dk, dk)`` from its first ``G``."""
    return safe_div(fro(G - G[:1]), fro(G[:1])).amax(dim=0)


class PairOrder(NamedTuple):
    """The author's pairwise order parameter of one pair, with its parts."""

    rms: float
    signed_mean: float
    numerator: float
    signed_mean_denominator: float


def order_pair(x1: Tensor, x2: Tensor) -> tuple[float, float]:
    """The author's pairwise order parameter of two same-shape tensors: (RMS, signed-mean) form."""
    p = pair_parts(x1, x2)
    return p.rms, p.signed_mean


def pair_parts(x1: Tensor, x2: Tensor) -> PairOrder:
    """Both forms of :func:`order_pair` with their numerator and signed-mean denominator."""
    num = float(torch.sqrt(torch.mean((x1 - x2) ** 2)))
    den = float(0.5 * (x1.mean().abs() + x2.mean().abs()))
    if num == 0.0:
        return PairOrder(0.0, 0.0, 0.0, den)
    rms = float(0.5 * (torch.sqrt(torch.mean(x1**2)) + torch.sqrt(torch.mean(x2**2))))
    return PairOrder(num / rms, num / max(den, TINY), num, den)


@torch.no_grad()
def sample_continuations(
    model64: PLDRDecoder, prompts: TokenSet, n_new: int, seed: int, branch: int
) -> TokenSet:
    """Each prompt followed by ``n_new`` tokens sampled at temperature 1 (full recomputation).

    One generator, seeded ``1_000_003 * seed + branch``, draws for the groups in
    order, so two branches give two different, reproducible continuations.
    """
    g = torch.Generator().manual_seed(1_000_003 * seed + branch)
    out = []
    for seq in prompts:
        for _ in range(n_new):
            logits, _, _ = model64(seq)
            probs = torch.softmax(logits[:, -1], dim=-1)
            seq = torch.cat((seq, torch.multinomial(probs, 1, generator=g)), dim=1)
        out.append(seq)
    return tuple(out)


@torch.no_grad()
def pairwise_order(model64: PLDRDecoder, pairs: tuple[TokenSet, TokenSet]) -> dict[str, Any]:
    """The author's order parameter per prompt and layer, both forms and their parts.

    Returns ``{tensor: {"rms", "signed_mean", "numerator", "signed_mean_denominator"}}``,
    each a nested list ``(n_prompts, L)``; the heads of a layer are pooled.
    """
    X1, X2 = deductive_stack(model64, pairs[0]), deductive_stack(model64, pairs[1])
    n, L = n_seqs(pairs[0]), len(model64.layers)
    out: dict[str, Any] = {}
    for t in DEDUCTIVE:
        forms = [[pair_parts(X1[t][i, j], X2[t][i, j]) for j in range(L)] for i in range(n)]
        out[t] = {f: [[getattr(p, f) for p in row] for row in forms] for f in PairOrder._fields}
    return out
