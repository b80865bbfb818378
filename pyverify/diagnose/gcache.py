"""Figures of a G-cache ``(layers, heads, dk, dk)``, head by head (see :mod:`pyverify.diagnose`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pyverify.errors import InputValueError
from pyverify.kernels.collapsed import DEFAULT_COMMUTANT_TOL
from pyverify.output import json_array

__all__ = ["ABSORB_TOL", "MAX_ENTRY", "GCacheDiagnostics", "diagnose_g_cache"]

Array = NDArray[np.float64]

#: Relative tolerance of "G commutes with every RoPE rotation": the kernels' own
#: :data:`pyverify.kernels.collapsed.DEFAULT_COMMUTANT_TOL` (the name kept for callers).
ABSORB_TOL = DEFAULT_COMMUTANT_TOL
#: Largest entry accepted: squares of dk^2 such entries stay far inside float64's 1.8e308.
MAX_ENTRY = 1e100
#: Default relative threshold of the numerical rank is dk * eps(float32) (see the module doc
#: of :mod:`pyverify.diagnose`).
_EPS32 = float(np.finfo(np.float32).eps)


#: Marks a field reported per head (``GCacheDiagnostics.PER_HEAD_FIELDS``).
_PER_HEAD = {"per_head": True}


@dataclass
class GCacheDiagnostics:
    """Per layer x head diagnostics of a G-cache (arrays of shape ``(L, H)`` unless noted).

    Attributes
    ----------
    shape : tuple of int
        ``(L, H, dk, dk)``.
    commutant_residual : numpy.ndarray
        Relative RoPE-commutant residual (0 in the commutant, <= 1).
    absorbable : numpy.ndarray of bool
        ``commutant_residual <= absorb_tol``: folding into ``W_q`` before RoPE is exact.
    identity_distance : numpy.ndarray
        ``||G - I||_F / sqrt(dk)``.
    scaled_identity_distance : numpy.ndarray
        ``min_c ||G - c I||_F / ||G||_F``.
    asymmetry : numpy.ndarray
        ``||G - G^T||_F / (2 ||G||_F)``, the relative antisymmetric part.
    positive, nonnegative : numpy.ndarray of bool
        Every entry ``> 0`` / ``>= 0``.
    positive_fraction : numpy.ndarray
        Fraction of entries ``> 0``.
    min_entry, max_abs_entry : numpy.ndarray
        Extremes of the entries.
    spectral_radius : numpy.ndarray
        Largest eigenvalue modulus.
    dominant_real_positive : numpy.ndarray of bool
        The spectral radius is attained by a real positive eigenvalue.
    perron_root, perron_gap : numpy.ndarray
        For positive ``G``: the Perron root and ``|lambda_2| / lambda_1``; ``nan`` otherwise.
    perron_vector_positive : numpy.ndarray of bool
        For positive ``G``: the Perron eigenvector has all entries of one strict sign
        (as Perron-Frobenius guarantees); False where not applicable.
    singular_values : numpy.ndarray
        ``(L, H, dk)``, descending.
    rank : numpy.ndarray of int
        Numerical rank (singular values ``> rank_rtol * s_max``).
    condition : numpy.ndarray
        ``s_max / s_min`` (``inf`` if singular).
    stable_rank : numpy.ndarray
        ``||G||_F^2 / ||G||_2^2``.
    absorb_tol, rank_rtol : float
        The thresholds used.
    """

    shape: tuple[int, int, int, int]
    commutant_residual: Array = field(metadata=_PER_HEAD)
    absorbable: NDArray[np.bool_] = field(metadata=_PER_HEAD)
    identity_distance: Array = field(metadata=_PER_HEAD)
    scaled_identity_distance: Array = field(metadata=_PER_HEAD)
    asymmetry: Array = field(metadata=_PER_HEAD)
    positive: NDArray[np.bool_] = field(metadata=_PER_HEAD)
    nonnegative: NDArray[np.bool_]
    positive_fraction: Array = field(metadata=_PER_HEAD)
    min_entry: Array = field(metadata=_PER_HEAD)
    max_abs_entry: Array = field(metadata=_PER_HEAD)
    spectral_radius: Array = field(metadata=_PER_HEAD)
    dominant_real_positive: NDArray[np.bool_] = field(metadata=_PER_HEAD)
    perron_root: Array = field(metadata=_PER_HEAD)
    perron_gap: Array = field(metadata=_PER_HEAD)
    perron_vector_positive: NDArray[np.bool_] = field(metadata=_PER_HEAD)
    singular_values: Array
    rank: NDArray[np.int64] = field(metadata=_PER_HEAD)
    condition: Array = field(metadata=_PER_HEAD)
    stable_rank: Array = field(metadata=_PER_HEAD)
    absorb_tol: float = ABSORB_TOL
    rank_rtol: float = 0.0

    #: The per-head figures (``to_dict()["per_head"]``), in field order.
    PER_HEAD_FIELDS: ClassVar[tuple[str, ...]] = ()

    def summary(self) -> dict[str, Any]:
        """Whole-cache figures: ranges over the heads and counts.

        Returns
        -------
        dict
            JSON-ready (floats, ints, bools).
        """
        n = int(self.commutant_residual.size)
        r = self.commutant_residual

        def rng(a: Array) -> dict[str, float]:
            a = np.asarray(a, dtype=np.float64)
            return {
                "min": float(np.min(a)),
                "median": float(np.median(a)),
                "max": float(np.max(a)),
            }

        pos = self.positive
        return {
            "layers": int(self.shape[0]),
            "heads": int(self.shape[1]),
            "dk": int(self.shape[2]),
            "commutant_residual": rng(r),
            "heads_residual_above_0.5": int(np.sum(r > 0.5)),
            "fraction_residual_above_0.5": float(np.mean(r > 0.5)),
            "absorbable_heads": int(np.sum(self.absorbable)),
            "absorbable": bool(np.all(self.absorbable)),
            "identity_distance": rng(self.identity_distance),
            "scaled_identity_distance": rng(self.scaled_identity_distance),
            "is_identity": bool(np.all(self.identity_distance == 0)),
            "asymmetry": rng(self.asymmetry),
            "positive_heads": int(np.sum(pos)),
            "nonnegative_heads": int(np.sum(self.nonnegative)),
            "positive_fraction": rng(self.positive_fraction),
            "min_entry": float(np.min(self.min_entry)),
            "max_abs_entry": float(np.max(self.max_abs_entry)),
            "spectral_radius": rng(self.spectral_radius),
            "dominant_real_positive_heads": int(np.sum(self.dominant_real_positive)),
            "perron_applicable_heads": int(np.sum(pos)),
            "perron_root": rng(self.perron_root[pos]) if np.any(pos) else None,
            "perron_gap": rng(self.perron_gap[pos]) if np.any(pos) else None,
            "perron_vector_positive_heads": int(np.sum(self.perron_vector_positive)),
            "rank": {
                "min": int(np.min(self.rank)),
                "median": float(np.median(self.rank)),
                "max": int(np.max(self.rank)),
            },
            "full_rank_heads": int(np.sum(self.rank == self.shape[2])),
            "largest_singular_value": rng(self.singular_values[..., 0]),
            "smallest_singular_value": rng(self.singular_values[..., -1]),
            "stable_rank": rng(self.stable_rank),
            "total_heads": n,
            "absorb_tol": self.absorb_tol,
            "rank_rtol": self.rank_rtol,
        }

    def per_layer(self) -> list[dict[str, Any]]:
        """One dict per layer: residual range, identity distance, positivity, rank, absorbable."""
        out = []
        for layer in range(self.shape[0]):
            r = self.commutant_residual[layer]
            out.append(
                {
                    "layer": layer,
                    "residual_min": float(r.min()),
                    "residual_median": float(np.median(r)),
                    "residual_max": float(r.max()),
                    "identity_distance_median": float(np.median(self.identity_distance[layer])),
                    "positive_heads": int(self.positive[layer].sum()),
                    "rank_min": int(self.rank[layer].min()),
                    "rank_max": int(self.rank[layer].max()),
                    "absorbable_heads": int(self.absorbable[layer].sum()),
                }
            )
        return out

    def to_dict(self, singular_values: bool = True) -> dict[str, Any]:
        """JSON-ready dict: ``shape``, ``summary``, ``per_layer``, ``per_head`` (nested lists).

        Parameters
        ----------
        singular_values : bool, default True
            Include the ``(L, H, dk)`` singular values.
        """
        per_head: dict[str, Any] = {f: json_array(getattr(self, f)) for f in self.PER_HEAD_FIELDS}
        if singular_values:
            per_head["singular_values"] = json_array(self.singular_values)
        return {
            "shape": list(self.shape),
            "summary": self.summary(),
            "per_layer": self.per_layer(),
            "per_head": per_head,
        }


GCacheDiagnostics.PER_HEAD_FIELDS = tuple(
    f.name for f in fields(GCacheDiagnostics) if f.metadata.get("per_head")
)


def _commutant_residual(G: Array) -> Array:
    import torch

    from pyverify.kernels import rope_commutant_residual

    return rope_commutant_residual(torch.from_numpy(np.ascontiguousarray(G))).numpy()


def diagnose_g_cache(
    g: ArrayLike,
    *,
    rank_rtol: float | None = None,
    absorb_tol: float = ABSORB_TOL,
) -> GCacheDiagnostics:
    """Diagnose a G-cache ``(layers, heads, dk, dk)`` head by head.

    Parameters
    ----------
    g : array_like, shape (L, H, dk, dk)
        The operators (converted to float64; dk even for the RoPE figures).
    rank_rtol : float, optional
        Relative singular-value threshold of the numerical rank; default
        ``dk * eps(float32)``.
    absorb_tol : float, default 1e-5
        Residual up to which ``G`` counts as commuting with RoPE (absorbable).

    Returns
    -------
    GCacheDiagnostics
        Every figure per layer x head.

    Raises
    ------
    InputValueError
        If ``g`` is not a finite real array of shape ``(L, H, dk, dk)`` with
        ``L, H >= 1``, even dk and entries of magnitude at most :data:`MAX_ENTRY`.
    """
    G = np.asarray(g)
    if G.dtype.kind not in "fiu":
        raise InputValueError(f"g must be a real array; got dtype {G.dtype}")
    G = G.astype(np.float64)
    if G.ndim != 4 or G.shape[2] != G.shape[3] or G.shape[2] == 0 or G.shape[2] % 2:
        raise InputValueError(
            f"g must have shape (layers, heads, dk, dk) with even dk; got {G.shape}"
        )
    if G.shape[0] == 0 or G.shape[1] == 0:
        raise InputValueError(f"g must hold at least one layer and one head; got shape {G.shape}")
    if not np.all(np.isfinite(G)):
        raise InputValueError("g has non-finite entries")
    biggest = float(np.max(np.abs(G)))
    if biggest > MAX_ENTRY:
        raise InputValueError(
            f"g has entries up to {biggest:.3g}; above {MAX_ENTRY:g} the squared norms and "
            "eigen-solvers of the diagnostics overflow float64 (rescale G)"
        )
    L, H, dk, _ = G.shape
    rtol = dk * _EPS32 if rank_rtol is None else float(rank_rtol)
    eye = np.eye(dk)
    fro = np.linalg.norm(G, axis=(-2, -1))
    safe = np.where(fro > 0, fro, 1.0)

    residual = _commutant_residual(G)
    ident = np.linalg.norm(G - eye, axis=(-2, -1)) / np.sqrt(dk)
    c = np.trace(G, axis1=-2, axis2=-1) / dk
    scaled = np.linalg.norm(G - c[..., None, None] * eye, axis=(-2, -1)) / safe
    asym = np.linalg.norm(G - np.swapaxes(G, -1, -2), axis=(-2, -1)) / (2 * safe)

    s = np.linalg.svd(G, compute_uv=False)
    rank = np.sum(s > rtol * s[..., :1], axis=-1).astype(np.int64)
    with np.errstate(divide="ignore"):
        cond = np.where(s[..., -1] > 0, s[..., 0] / np.where(s[..., -1] > 0, s[..., -1], 1), np.inf)
    stable = np.where(s[..., 0] > 0, fro**2 / np.where(s[..., 0] > 0, s[..., 0], 1) ** 2, 0.0)

    positive = np.all(G > 0, axis=(-2, -1))
    nonneg = np.all(G >= 0, axis=(-2, -1))
    spec = np.zeros((L, H))
    dom_pos = np.zeros((L, H), dtype=bool)
    perron_root = np.full((L, H), np.nan)
    perron_gap = np.full((L, H), np.nan)
    perron_vec = np.zeros((L, H), dtype=bool)
    for i in range(L):
        for j in range(H):
            w, V = np.linalg.eig(G[i, j])
            order = np.argsort(-np.abs(w), kind="stable")
            w, V = w[order], V[:, order]
            lam = w[0]
            spec[i, j] = abs(lam)
            second = abs(w[1]) if dk > 1 else 0.0
            scale = max(abs(lam), np.finfo(np.float64).tiny)
            # the spectral radius is attained by a real positive eigenvalue
            top = np.abs(w) >= abs(lam) * (1 - 1e-12)
            dom_pos[i, j] = bool(np.any(top & (w.real > 0) & (np.abs(w.imag) <= 1e-12 * scale)))
            if positive[i, j]:
                perron_root[i, j] = lam.real
                perron_gap[i, j] = second / scale
                vec = V[:, 0].real
                vec = vec / vec[np.argmax(np.abs(vec))]
                perron_vec[i, j] = bool(np.all(vec > 0))
    return GCacheDiagnostics(
        shape=(L, H, dk, dk),
        commutant_residual=residual,
        absorbable=residual <= absorb_tol,
        identity_distance=ident,
        scaled_identity_distance=scaled,
        asymmetry=asym,
        positive=positive,
        nonnegative=nonneg,
        positive_fraction=np.mean(G > 0, axis=(-2, -1)),
        min_entry=G.min(axis=(-2, -1)),
        max_abs_entry=np.abs(G).max(axis=(-2, -1)),
        spectral_radius=spec,
        dominant_real_positive=dom_pos,
        perron_root=perron_root,
        perron_gap=perron_gap,
        perron_vector_positive=perron_vec,
        singular_values=s,
        rank=rank,
        condition=cond,
        stable_rank=stable,
        absorb_tol=float(absorb_tol),
        rank_rtol=rtol,
    )
