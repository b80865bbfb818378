"""The quasi-invariance budget (``score_perturbation``) measured on a real operator.

The theorem: for ``G = G* + Delta``, every score moves by at most
``eta(q, k) = ||q||_1 ||k||_1 max|Delta| / sqrt(dk)``; a row whose top-1 margin under
``G*`` exceeds ``2 eta`` keeps its argmax; each softmax weight changes by a factor in
``[exp(-2 eta), exp(2 eta)]``.

:func:`score_budget` measures, for one operator ``G*`` (e.g. a head of the trained
``G_LM``), how tight this is: ``G*`` plus random perturbations of given relative sizes
(``max|Delta| = rho max|G*|``), rotated queries and keys with N(0, 1) entries (the scale of
LayerNorm-ed activations through norm-preserving projections), causal rows. Everything
in float64: the float64 rounding of a score (~1e-14 relative) is far below the smallest
perturbation measured. The trained model's own variation ``|G(X) - G*|`` cannot be
measured here (its weights and inputs are not released): ``rho`` stands in for it, over
the range the paper reports for near-collapsed models (down to ~1e-6).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray

from pyverify.errors import InputValueError
from pyverify.reference import apply_rope, causal_mask, masked_softmax

__all__ = ["BudgetRow", "budget_summary", "score_budget"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class BudgetRow:
    """Results for one operator and one relative perturbation size.

    Attributes
    ----------
    rho : float
        ``max|Delta| / max|G*|``.
    n_scores, n_rows : int
        Allowed (causal) scores and query rows measured.
    violations : int
        Scores whose change exceeds the bound (the theorem says 0).
    tightness_median, tightness_max : float
        ``|q Delta k^T| / (||q||_1 ||k||_1 max|Delta|)`` over the allowed scores.
    row_eta_ratio_median : float
        Per row: ``max_j |dE_rj|`` over the row bound ``eta_r`` (with ``max_j ||k_j||_1``).
    certified : float
        Fraction of rows (with >= 2 allowed keys) whose margin exceeds ``2 eta_r``.
    argmax_changed_certified : int
        Certified rows whose argmax changed (the theorem says 0).
    argmax_changed : int
        Rows whose argmax changed at all.
    log_factor_ratio_max : float
        ``max |log(p / p*)|`` over ``2 eta_r``, over rows (the theorem says <= 1).
    """

    rho: float
    n_scores: int
    n_rows: int
    violations: int
    tightness_median: float
    tightness_max: float
    row_eta_ratio_median: float
    certified: float
    argmax_changed_certified: int
    argmax_changed: int
    log_factor_ratio_max: float

    def as_dict(self) -> dict[str, float | int]:
        """The fields as a plain dict (for JSON reports)."""
        return asdict(self)


def _check_operator(G_star: Array) -> Array:
    G = np.asarray(G_star, dtype=np.float64)
    if G.ndim != 2 or G.shape[0] != G.shape[1] or G.shape[0] % 2:
        raise InputValueError(f"G_star must be a square (dk, dk) array with even dk; got {G.shape}")
    if not np.all(np.isfinite(G)):
        raise InputValueError("G_star must be finite")
    return G


def score_budget(
    G_star: Array,
    rhos: tuple[float, ...] = (1e-6, 1e-5, 1e-4, 1e-3),
    *,
    seq_len: int = 64,
    seed: int = 0,
) -> list[BudgetRow]:
    """Measure the score-perturbation budget of ``G_star`` for each relative size in ``rhos``.

    ``[score_perturbation]``: every score moves by at most ``eta_r`` in row ``r``, so the
    top-1 key of a row whose margin exceeds ``2 eta_r`` (each of the two leading scores
    moved by ``eta_r``, towards each other at worst) cannot change; each measured
    ``|E - E*|`` is held to the per-score bound plus ``[fp_dot_product]``'s
    ``gamma_(2 dk + 1)`` rounding of *two* float64 evaluations (``E`` and ``E*``).

    Parameters
    ----------
    G_star : array_like, shape (dk, dk)
        The reference operator (dk even: queries and keys are RoPE-rotated).
    rhos : tuple of float
        Relative perturbation sizes ``max|Delta| / max|G*|`` (each > 0).
    seq_len : int, default 64
        Positions (queries = keys = ``seq_len`` rows, causal).
    seed : int, default 0
        Seed of the queries, keys and perturbations.

    Returns
    -------
    list of BudgetRow
        One per ``rho``.
    """
    G = _check_operator(G_star)
    if seq_len < 2:
        raise InputValueError(f"seq_len must be >= 2; got {seq_len}")
    if any(not (np.isfinite(r) and r > 0) for r in rhos):
        raise InputValueError(f"rhos must be finite and > 0; got {rhos}")
    dk = G.shape[0]
    rng = np.random.default_rng(seed)
    q = apply_rope(rng.standard_normal((seq_len, dk)))
    k = apply_rope(rng.standard_normal((seq_len, dk)))
    mask = causal_mask(seq_len, seq_len)
    root = np.sqrt(dk)
    E_star = q @ G @ k.T / root
    n = 2 * dk + 1
    rounding = n * 2.0**-53 / (1 - n * 2.0**-53) * (np.abs(q) @ np.abs(G) @ np.abs(k).T) / root
    p_star = masked_softmax(E_star, mask)
    q1, k1 = np.abs(q).sum(axis=1), np.abs(k).sum(axis=1)
    rows = []
    for rho in rhos:
        U = rng.uniform(-1.0, 1.0, (dk, dk))
        Delta = U * (rho * np.abs(G).max() / np.abs(U).max())
        dmax = float(np.abs(Delta).max())
        E = q @ (G + Delta) @ k.T / root
        dE = np.abs(E - E_star)
        # the bound per score, plus the float64 rounding of the two evaluations
        # (gamma_{2dk+1} |q| |G| |k|^T / sqrt(dk) each, ~1e-13 relative: far below rho)
        bound = np.outer(q1, k1) * dmax / root + 2 * rounding
        viol = int(np.sum((dE > bound) & mask))
        tight = np.abs(q @ Delta @ k.T)[mask] / (np.outer(q1, k1)[mask] * dmax)
        eta = q1 * (np.where(mask, k1[None, :], 0).max(axis=1)) * dmax / root
        row_ratio = np.where(mask, dE, 0).max(axis=1) / eta
        certified = changed = changed_cert = 0
        n_rows = 0
        p = masked_softmax(E, mask)
        log_ratio = 0.0
        for r in range(seq_len):
            allowed = np.flatnonzero(mask[r])
            lr = np.abs(np.log(p[r, allowed] / p_star[r, allowed])).max() / (2 * eta[r])
            log_ratio = max(log_ratio, float(lr))
            if allowed.size < 2:
                continue
            n_rows += 1
            top = np.sort(E_star[r, allowed])
            margin = top[-1] - top[-2]
            moved = int(np.argmax(E[r, allowed]) != np.argmax(E_star[r, allowed]))
            changed += moved
            if margin > 2 * eta[r]:
                certified += 1
                changed_cert += moved
        rows.append(
            BudgetRow(
                rho=float(rho),
                n_scores=int(mask.sum()),
                n_rows=n_rows,
                violations=viol,
                tightness_median=float(np.median(tight)),
                tightness_max=float(tight.max()),
                row_eta_ratio_median=float(np.median(row_ratio)),
                certified=certified / n_rows,
                argmax_changed_certified=changed_cert,
                argmax_changed=changed,
                log_factor_ratio_max=log_ratio,
            )
        )
    return rows


def budget_summary(
    G_lm: Array,
    rhos: tuple[float, ...] = (1e-6, 1e-5, 1e-4, 1e-3),
    *,
    seq_len: int = 64,
) -> list[dict[str, float | int]]:
    """:func:`score_budget` over every head of a ``(layers, heads, dk, dk)`` stack.

    Head ``(l, h)`` uses seed ``l * heads + h``. Deterministic (same numbers on every run).

    Parameters
    ----------
    G_lm : array_like, shape (layers, heads, dk, dk)
        The operators (e.g. ``load_g_lm("trained")``).
    rhos : tuple of float
        Relative perturbation sizes.
    seq_len : int, default 64
        Positions per head.

    Returns
    -------
    list of dict
        Per ``rho``: ``heads``, ``scores``, ``rows``, ``violations``,
        ``argmax_changed_certified`` and ``argmax_changed`` (sums), ``tightness_median``
        (median of the heads' medians), ``tightness_max``, ``row_eta_ratio_median``,
        ``certified_mean``, ``certified_min``, ``log_factor_ratio_max``.
    """
    G_all = np.asarray(G_lm, dtype=np.float64)
    if G_all.ndim != 4:
        raise InputValueError(f"G_lm must have shape (layers, heads, dk, dk); got {G_all.shape}")
    L, H = G_all.shape[:2]
    per: dict[float, list[BudgetRow]] = {float(r): [] for r in rhos}
    for li in range(L):
        for h in range(H):
            for row in score_budget(G_all[li, h], rhos, seq_len=seq_len, seed=li * H + h):
                per[row.rho].append(row)
    out = []
    for rho, rs in per.items():
        out.append(
            {
                "rho": rho,
                "heads": len(rs),
                "scores": sum(r.n_scores for r in rs),
                "rows": sum(r.n_rows for r in rs),
                "violations": sum(r.violations for r in rs),
                "tightness_median": float(np.median([r.tightness_median for r in rs])),
                "tightness_max": max(r.tightness_max for r in rs),
                "row_eta_ratio_median": float(np.median([r.row_eta_ratio_median for r in rs])),
                "certified_mean": float(np.mean([r.certified for r in rs])),
                "certified_min": min(r.certified for r in rs),
                "argmax_changed_certified": sum(r.argmax_changed_certified for r in rs),
                "argmax_changed": sum(r.argmax_changed for r in rs),
                "log_factor_ratio_max": max(r.log_factor_ratio_max for r in rs),
            }
        )
    return out
