"""Two inference contracts: the online contract and the mean-operator cache contract (N1).

Online contract (the author's audit, ``audit_online.py`` section O1 and
``audit_online_lib.random_pairs`` / ``delta_stats``): each sequence ``a`` is
paired with ``b``, equal to ``a`` on its first ``prefix`` tokens and with every
later token changed by a uniform nonzero offset modulo the vocabulary; both
run in one full pass and the logits of the shared prefix positions are
compared. A prefix-consistent model changes none of them (the released 110M-5:
0 of 2,048,000; 110M-1: 1.5M, up to 9.4e-4). Reported: ``changed`` (entries
that differ), ``entries``, ``fraction_changed``, ``max_abs_change`` and ``l2``.

Mean-operator cache contract (N1, the author's dynamics study,
``cache_state_contract.py`` and its analyses): the cache is the mean of the
deductive operators in float64 over calibration contexts (a fixed ``G`` per
layer and head; with ``G`` fixed, ``A`` and ``A_LM`` do not enter the scores);
each assessment window's first ``S`` tokens run once natively (full
recomputation) and once with the cache, and the final position's next-token
distributions ``p`` (native) and ``q`` (cached) are compared; the token after
the window is the external target. Reported per cache: ``mean_kl`` and
``max_kl`` (``KL(p || q)``, nats), ``native_nll`` and ``cached_nll`` of the
targets, and on the root-probability amplitudes ``x = 2 sqrt(p)``, ``y = 2
sqrt(q)``, ``e = x - y``: ``uncentred_energy`` (mean over contexts of ``sum_v
e^2``), ``native_context_variance`` and ``residual_context_variance`` (``sum_v``
of the variance over contexts, ddof 1, of ``x`` and of ``e``) and
``relative_rms_context_centred = sqrt(residual / native)``. The author's
"relative centred RMS" (threshold 0.25) centres over INDEPENDENT TRAINING
REPLICAS (``paired_metrics``: arrays (replica, context, vocabulary), >= 2
replicas); one trained model has no replica axis, so the context-centred
figure here is an analogue, not the author's statistic. The stale cache
(``initial``) is the step-0 model's mean operator on the same calibration
contexts, applied to the final model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from pyverify.measure.inputs import TokenSet
from pyverify.measure.tensors import deductive_stack
from pyverify.trainable.decoder import PLDRDecoder

__all__ = ["cache_contract", "mean_operator", "online_contract"]


@torch.no_grad()
def online_contract(
    model64: PLDRDecoder, seqs: TokenSet, prefix: int | None, seed: int
) -> dict[str, Any]:
    """How many prefix logits change when the suffix changes (module docstring).

    ``prefix`` None: half of each sequence (at least 1 token).
    """
    vocab = model64.cfg.vocab
    rng = np.random.default_rng(seed)
    changed = entries = 0
    worst, sq = 0.0, 0.0
    for a in seqs:
        n, S = a.shape
        h = max(1, S // 2) if prefix is None else prefix
        off = torch.from_numpy(rng.integers(1, vocab, size=(n, S - h), dtype=np.int64))
        b = a.clone()
        b[:, h:] = (a[:, h:] + off) % vocab
        la = model64(a)[0][:, :h]
        lb = model64(b)[0][:, :h]
        d = la - lb
        changed += int(torch.count_nonzero(d))
        entries += d.numel()
        worst = max(worst, float(d.abs().max()))
        sq += float((d * d).sum())
    return {
        "sequences": sum(g.shape[0] for g in seqs),
        "prefix": prefix,
        "changed": changed,
        "entries": entries,
        "fraction_changed": changed / entries,
        "max_abs_change": worst,
        "l2": sq**0.5,
    }


def mean_operator(model64: PLDRDecoder, calibration: TokenSet) -> list[Tensor]:
    """Per layer the mean ``G (H, dk, dk)`` over the calibration contexts (float64)."""
    G = deductive_stack(model64, calibration, ("G",))["G"]
    return list(G.mean(dim=0).unbind(0))


@torch.no_grad()
def _final_logits(model64: PLDRDecoder, windows: TokenSet, G: list[Tensor] | None) -> Tensor:
    parts = []
    for w in windows:
        logits, _, _ = model64(w[:, :-1], None if G is None else [g[None] for g in G])
        parts.append(logits[:, -1])
    return torch.cat(parts).double()


def _compare(native: Tensor, cached: Tensor, targets: Tensor) -> dict[str, float | None]:
    lp, lq = torch.log_softmax(native, -1), torch.log_softmax(cached, -1)
    p = lp.exp()
    kl = (p * (lp - lq)).sum(-1)
    x, y = 2 * torch.exp(lp / 2), 2 * torch.exp(lq / 2)
    e = x - y
    many = x.shape[0] > 1  # a variance over contexts needs two (None: undefined)
    vx = float(x.var(dim=0, correction=1).sum()) if many else None
    ve = float(e.var(dim=0, correction=1).sum()) if many else None
    nll_p = -lp.gather(1, targets[:, None])[:, 0]
    nll_q = -lq.gather(1, targets[:, None])[:, 0]
    return {
        "mean_kl": float(kl.mean()),
        "max_kl": float(kl.max()),
        "native_nll": float(nll_p.mean()),
        "cached_nll": float(nll_q.mean()),
        "uncentred_energy": float((e * e).sum(-1).mean()),
        "native_context_variance": vx,
        "residual_context_variance": ve,
        "relative_rms_context_centred": (ve / vx) ** 0.5 if vx and ve is not None else None,
    }


@torch.no_grad()
def cache_contract(
    model64: PLDRDecoder,
    calibration: TokenSet,
    assessment: TokenSet,
    init64: PLDRDecoder | None = None,
) -> dict[str, Any]:
    """N1: the own mean-operator cache and the stale initial one, against recomputation.

    ``own``: the model's mean operator; ``initial`` (given the step-0 model
    ``init64``): the step-0 model's, on the same calibration contexts.
    """
    targets = torch.cat([w[:, -1] for w in assessment])
    native = _final_logits(model64, assessment, None)
    out: dict[str, Any] = {
        "calibration_contexts": sum(g.shape[0] for g in calibration),
        "assessment_contexts": int(targets.numel()),
    }
    caches = {"own": mean_operator(model64, calibration)}
    if init64 is not None:
        caches["initial"] = mean_operator(init64, calibration)
    for name, G in caches.items():
        out[name] = _compare(native, _final_logits(model64, assessment, G), targets)
    return out
