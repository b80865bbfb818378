"""Diagnostics of PLGA operators (``pyverify diagnose``).

On a G-cache ``G`` of shape ``(layers, heads, dk, dk)`` (a released ``G_LM``
file or a user's), per layer x head:

* **RoPE-commutant residual** (adjacent-pair planes, base 10000): the relative
  distance of ``G`` from the matrices commuting with every rotation ``R_n``
  (:func:`pyverify.kernels.rope_commutant_residual`: the larger of the
  Frobenius distance to the commutant, block diagonal with 2 x 2 blocks in
  span{I, J} by ``rope_commutant_char``, and the direct commutators
  ``||G R_n - R_n G|| / (2 ||G||)`` at probe positions). 0 exactly in the
  commutant;
* **absorbable**: whether folding ``G`` into ``W_q`` before RoPE is exact
  (theorem ``collapse_absorption``): residual ``<=`` the kernels' commutant
  tolerance (1e-5, a 100x margin over float32 round-off). Otherwise only the
  post-rotation form ``softmax((Q_rot G) K_rot^T / sqrt(dk)) V`` is exact;
* **distance from the identity** (how far from SDPA, theorem
  ``sdpa_special_case``): ``||G - I||_F / ||I||_F``, and the scale-free
  ``min_c ||G - c I||_F / ||G||_F`` (``c I`` is SDPA at another temperature);
* **positivity and Perron structure**: entry signs; where ``G`` is entrywise
  positive, Perron-Frobenius applies and the Perron root (the spectral radius,
  a simple positive eigenvalue), its gap ``|lambda_2| / lambda_1`` and the
  positivity of its eigenvector are reported (``nan`` where not applicable);
* **singular values and numerical rank**: rank = number of singular values
  above ``rank_rtol * s_max``, default ``dk * eps(float32)``: the released
  operators are float32, whose rounding alone perturbs the singular values by
  up to about that much, so smaller ones are indistinguishable from 0.

For a model with a live metric learner (:class:`pyverify.reference.Decoder`):
the paper's **order parameter** (RMS fluctuation of the deductive tensors
``A``, ``A_LM``, ``A_P``, ``G`` over a set of inputs, relative to their mean)
and the **invariance error** ``eps_G`` of a cached ``G*`` against ``G(X)``
recomputed on each input (``cache_equivalence``: ``eps_G = 0`` makes the
cached model equal the recomputing one; the logits' gap is reported too).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "DEDUCTIVE_TENSORS",
    "GCacheDiagnostics",
    "InvarianceError",
    "OrderParameter",
    "diagnose_g_cache",
    "format_diagnostics",
    "invariance_error",
    "order_parameter",
    "run_diagnose",
    "run_model_diagnose",
]

Progress = Callable[[str], None]
Array = NDArray[np.float64]

#: The deductive tensors of a PLGA head, in pipeline order.
DEDUCTIVE_TENSORS: tuple[str, ...] = ("A", "A_LM", "A_P", "G")

#: Relative tolerance of "G commutes with every RoPE rotation" (the kernels' own).
ABSORB_TOL = 1e-5
#: Default relative threshold of the numerical rank: dk * eps(float32) (see module doc).
_EPS32 = float(np.finfo(np.float32).eps)


# --------------------------------------------------------------------------- G-cache
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
    commutant_residual: Array
    absorbable: NDArray[np.bool_]
    identity_distance: Array
    scaled_identity_distance: Array
    asymmetry: Array
    positive: NDArray[np.bool_]
    nonnegative: NDArray[np.bool_]
    positive_fraction: Array
    min_entry: Array
    max_abs_entry: Array
    spectral_radius: Array
    dominant_real_positive: NDArray[np.bool_]
    perron_root: Array
    perron_gap: Array
    perron_vector_positive: NDArray[np.bool_]
    singular_values: Array
    rank: NDArray[np.int64]
    condition: Array
    stable_rank: Array
    absorb_tol: float = ABSORB_TOL
    rank_rtol: float = 0.0

    PER_HEAD_FIELDS = (
        "commutant_residual",
        "absorbable",
        "identity_distance",
        "scaled_identity_distance",
        "asymmetry",
        "positive",
        "positive_fraction",
        "min_entry",
        "max_abs_entry",
        "spectral_radius",
        "dominant_real_positive",
        "perron_root",
        "perron_gap",
        "perron_vector_positive",
        "rank",
        "condition",
        "stable_rank",
    )

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
        per_head: dict[str, Any] = {f: _tolist(getattr(self, f)) for f in self.PER_HEAD_FIELDS}
        if singular_values:
            per_head["singular_values"] = _tolist(self.singular_values)
        return {
            "shape": list(self.shape),
            "summary": self.summary(),
            "per_layer": self.per_layer(),
            "per_head": per_head,
        }


def _tolist(a: np.ndarray) -> Any:
    """Nested lists with ``nan``/``inf`` as ``None`` / strings (strict JSON)."""
    a = np.asarray(a)
    if a.dtype == bool:
        return a.tolist()
    if a.dtype.kind in "iu":
        return a.astype(int).tolist()

    def conv(x: Any) -> Any:
        if isinstance(x, list):
            return [conv(y) for y in x]
        if np.isnan(x):
            return None
        if np.isinf(x):
            return "inf" if x > 0 else "-inf"
        return float(x)

    return conv(a.astype(np.float64).tolist())


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
    ValueError
        If ``g`` is not a finite real array of shape ``(L, H, dk, dk)`` with even dk.
    """
    G = np.asarray(g)
    if G.dtype.kind not in "fiu":
        raise ValueError(f"g must be a real array; got dtype {G.dtype}")
    G = G.astype(np.float64)
    if G.ndim != 4 or G.shape[2] != G.shape[3] or G.shape[2] == 0 or G.shape[2] % 2:
        raise ValueError(f"g must have shape (layers, heads, dk, dk) with even dk; got {G.shape}")
    if not np.all(np.isfinite(G)):
        raise ValueError("g has non-finite entries")
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


# --------------------------------------------------------------------------- live model
def _as_inputs(inputs: Sequence[ArrayLike] | ArrayLike) -> list[NDArray[np.int64]]:
    if isinstance(inputs, np.ndarray) and inputs.ndim == 2:
        seqs = list(inputs)
    elif isinstance(inputs, np.ndarray) and inputs.ndim == 1:
        seqs = [inputs]
    else:
        seqs = list(inputs)  # type: ignore[arg-type]
    if not seqs:
        raise ValueError("inputs must hold at least one token sequence")
    return [np.asarray(t) for t in seqs]


def _decoder(model: Any) -> Any:
    from pyverify.reference import Decoder, DecoderParams

    if isinstance(model, Decoder):
        return model
    if isinstance(model, DecoderParams):
        return Decoder(model)
    raise TypeError(
        f"model must be a pyverify.reference Decoder or DecoderParams; got {type(model).__name__}"
    )


@dataclass
class OrderParameter:
    """RMS fluctuation of the deductive tensors over a set of inputs.

    Attributes
    ----------
    per_head : dict of str to numpy.ndarray
        For each tensor (``A``, ``A_LM``, ``A_P``, ``G``) an ``(L, H)`` array of
        ``sqrt(mean_i ||T_i - mean T||_F^2) / ||mean T||_F``.
    overall : dict of str to float
        The same over all heads at once: ``sqrt(mean_{i,l,h} ||T - mean T||^2 /
        mean_{l,h} ||mean T||^2)``.
    n_inputs : int
        Number of inputs.
    """

    per_head: dict[str, Array]
    overall: dict[str, float]
    n_inputs: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "n_inputs": self.n_inputs,
            "overall": dict(self.overall),
            "per_head": {k: _tolist(v) for k, v in self.per_head.items()},
        }


def order_parameter(
    model: Any,
    inputs: Sequence[ArrayLike] | ArrayLike,
    *,
    G_cache: ArrayLike | list[ArrayLike] | None = None,
    tensors: Sequence[str] = DEDUCTIVE_TENSORS,
) -> OrderParameter:
    """The paper's order parameter: RMS fluctuation of the deductive tensors over inputs.

    Parameters
    ----------
    model : Decoder or DecoderParams
        A reference decoder with a live metric learner.
    inputs : sequence of int arrays, or int array (N, S)
        Token sequences (lengths may differ: the tensors are dk x dk).
    G_cache : optional
        Run the model with this fixed G-cache (then only ``G`` exists, and it
        is constant: its order parameter is 0).
    tensors : sequence of str, default ("A", "A_LM", "A_P", "G")
        Which deductive tensors to measure (those the run produces).

    Returns
    -------
    OrderParameter
        Per head and overall fluctuations; 0 means the tensor is the same for
        every input (the collapse the paper observes at inference).
    """
    dec = _decoder(model)
    seqs = _as_inputs(inputs)
    stacks: dict[str, list[Array]] = {t: [] for t in tensors}
    for toks in seqs:
        outp = dec.forward(toks, G_cache=G_cache)
        for t in tensors:
            layer_arrays = []
            for layer in outp.deductive:
                vals = [getattr(d, t) for d in layer]
                if any(v is None for v in vals):
                    layer_arrays = None
                    break
                layer_arrays.append(np.stack(vals))
            if layer_arrays is not None:
                stacks[t].append(np.stack(layer_arrays))
    per_head: dict[str, Array] = {}
    overall: dict[str, float] = {}
    for t, arrs in stacks.items():
        if not arrs:
            continue
        X = np.stack(arrs)  # (N, L, H, dk, dk)
        mean = X.mean(axis=0)
        dev2 = np.mean(np.sum((X - mean) ** 2, axis=(-2, -1)), axis=0)  # (L, H)
        m2 = np.sum(mean**2, axis=(-2, -1))
        per_head[t] = np.sqrt(dev2) / np.sqrt(np.where(m2 > 0, m2, 1.0))
        overall[t] = float(np.sqrt(dev2.mean() / max(m2.mean(), np.finfo(float).tiny)))
    return OrderParameter(per_head=per_head, overall=overall, n_inputs=len(seqs))


@dataclass
class InvarianceError:
    """Invariance error of a cached ``G*`` against ``G(X)`` recomputed per input.

    Attributes
    ----------
    eps_G : numpy.ndarray
        ``(L, H)``: ``max_i ||G(X_i) - G*||_F / ||G*||_F``.
    eps_G_max : float
        Its maximum.
    logits_gap : list of float
        Per input, ``max|logits_cached - logits_recomputed| / max|logits_recomputed|``.
    n_inputs : int
        Number of inputs.
    """

    eps_G: Array  # noqa: N815 (the paper's symbol)
    eps_G_max: float  # noqa: N815
    logits_gap: list[float] = field(default_factory=list)
    n_inputs: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "n_inputs": self.n_inputs,
            "eps_G_max": self.eps_G_max,
            "eps_G": _tolist(self.eps_G),
            "logits_gap": list(self.logits_gap),
            "logits_gap_max": max(self.logits_gap) if self.logits_gap else 0.0,
        }


def invariance_error(
    model: Any,
    inputs: Sequence[ArrayLike] | ArrayLike,
    G_cache: ArrayLike | list[ArrayLike] | None = None,
) -> InvarianceError:
    """``eps_G`` of a cached ``G*`` vs ``G`` recomputed on every input, and the logits' gap.

    Parameters
    ----------
    model : Decoder or DecoderParams
        A reference decoder with a live metric learner.
    inputs : sequence of int arrays, or int array (N, S)
        Token sequences.
    G_cache : list of (H, dk, dk) arrays or array (L, H, dk, dk), optional
        The cache ``G*``; default: the G computed on the first input (the
        prompt's cache).

    Returns
    -------
    InvarianceError
        ``eps_G`` per layer x head and the relative logits gap per input
        (theorem ``cache_equivalence``: ``eps_G = 0`` implies a zero gap).
    """
    from pyverify.reference import g_cache_from

    dec = _decoder(model)
    seqs = _as_inputs(inputs)
    if G_cache is None:
        G_star = np.stack(g_cache_from(dec.forward(seqs[0])))
    else:
        G_star = np.stack([np.asarray(g, dtype=np.float64) for g in G_cache])
    norm = np.linalg.norm(G_star, axis=(-2, -1))
    norm = np.where(norm > 0, norm, 1.0)
    eps = np.zeros(G_star.shape[:2])
    gaps = []
    for toks in seqs:
        rec = dec.forward(toks)
        G_x = np.stack(g_cache_from(rec))
        eps = np.maximum(eps, np.linalg.norm(G_x - G_star, axis=(-2, -1)) / norm)
        cached = dec.forward(toks, G_cache=list(G_star))
        den = float(np.max(np.abs(rec.logits))) or 1.0
        gaps.append(float(np.max(np.abs(cached.logits - rec.logits)) / den))
    return InvarianceError(eps_G=eps, eps_G_max=float(eps.max()), logits_gap=gaps,
                           n_inputs=len(seqs))  # fmt: skip


# --------------------------------------------------------------------------- drivers
def run_diagnose(path_or_name: str | os.PathLike[str], progress: Progress | None = None) -> dict:
    """Load a G-cache file and diagnose it.

    Parameters
    ----------
    path_or_name : str or path-like
        ``"trained"``, ``"identity"``, ``"random_normal"`` (the released files in
        ``../shared/data``), or a path to an ``.npz`` holding ``G_LM``.
    progress : callable, optional
        Called with a line per step.

    Returns
    -------
    dict
        ``{"kind": "g_cache", "name", "provenance": {file, path, sha256, source},
        "shape", "summary", "per_layer", "per_head"}`` (JSON-ready).

    Raises
    ------
    FileNotFoundError, ValueError
        From :func:`pyverify.reference.load_g_lm` (missing or malformed file).
    """
    from pyverify.reference import load_g_lm, provenance

    say = progress or (lambda _s: None)
    name = os.fspath(path_or_name)
    say(f"diagnose: loading {name}")
    g = load_g_lm(name)
    prov = provenance(name)
    say(f"diagnose: {prov.file} {tuple(g.shape)} sha256 {prov.sha256[:12]}...")
    diag = diagnose_g_cache(g)
    d = {"kind": "g_cache", "name": name}
    d["provenance"] = {
        "file": prov.file,
        "path": prov.path,
        "sha256": prov.sha256,
        "source": prov.source,
    }
    d.update(diag.to_dict())
    s = d["summary"]
    say(
        f"diagnose: {prov.file}: commutant residual {s['commutant_residual']['min']:.3g}.."
        f"{s['commutant_residual']['max']:.3g}, rank {s['rank']['min']}..{s['rank']['max']}"
    )
    return d


def run_model_diagnose(
    seed: int = 0,
    n_inputs: int = 8,
    seq_len: int = 12,
    progress: Progress | None = None,
    model: Any = None,
) -> dict:
    """Order parameter and invariance error of a live model on random token inputs.

    Parameters
    ----------
    seed : int, default 0
        Seed of the random decoder (:meth:`DecoderParams.random`) and the inputs.
    n_inputs, seq_len : int
        Number and length of the random token sequences.
    progress : callable, optional
        Progress lines.
    model : Decoder, optional
        Use this model instead of a random one.

    Returns
    -------
    dict
        ``{"kind": "model", "model", "order_parameter", "invariance"}`` (JSON-ready).
    """
    from pyverify.reference import Decoder, DecoderParams

    say = progress or (lambda _s: None)
    dec = _decoder(model) if model is not None else Decoder(DecoderParams.random(seed=seed))
    p = dec.params
    rng = np.random.default_rng(seed + 1)
    inputs = [rng.integers(0, p.vocab, size=seq_len) for _ in range(n_inputs)]
    say(f"diagnose: live model ({len(p.layers)} layers), {n_inputs} inputs of length {seq_len}")
    op = order_parameter(dec, inputs)
    inv = invariance_error(dec, inputs)
    return {
        "kind": "model",
        "model": {
            "layers": len(p.layers),
            "heads": p.layers[0].mha.num_heads if p.layers else 0,
            "d_model": p.d_model,
            "vocab": p.vocab,
            "seed": seed if model is None else None,
            "n_inputs": n_inputs,
            "seq_len": seq_len,
        },
        "order_parameter": op.to_dict(),
        "invariance": inv.to_dict(),
    }


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def format_diagnostics(d: dict) -> str:
    """Render :func:`run_diagnose` (or :func:`run_model_diagnose`) output as text.

    Parameters
    ----------
    d : dict
        The diagnostics dict.

    Returns
    -------
    str
        A few summary lines and a per-layer table.
    """
    if d.get("kind") == "model":
        m, op, inv = d["model"], d["order_parameter"], d["invariance"]
        lines = [
            f"live model: {m['layers']} layers x {m['heads']} heads, d_model {m['d_model']}, "
            f"{m['n_inputs']} inputs of length {m['seq_len']}",
            "order parameter (RMS fluctuation over inputs / norm of the mean):",
        ]
        lines += [f"  {t:<5} {_fmt(v)}" for t, v in op["overall"].items()]
        lines.append(
            f"invariance error eps_G (cached G of input 0 vs recomputed): max "
            f"{_fmt(inv['eps_G_max'])}; logits gap cached vs recomputed: max "
            f"{_fmt(inv['logits_gap_max'])}"
        )
        return "\n".join(lines)
    prov, s = d.get("provenance", {}), d["summary"]
    res, ident = s["commutant_residual"], s["identity_distance"]
    lines = [
        f"G-cache {d.get('name', '')}: {prov.get('file', '')} shape {tuple(d['shape'])}",
        f"  sha256 {prov.get('sha256', '')}",
    ]
    if prov.get("source"):
        lines.append(f"  source {prov['source']}")
    lines += [
        f"RoPE-commutant residual (base 10000, adjacent planes): min {_fmt(res['min'])}, "
        f"median {_fmt(res['median'])}, max {_fmt(res['max'])}; "
        f"{s['heads_residual_above_0.5']}/{s['total_heads']} heads above 0.5",
        f"absorbable into W_q before RoPE: {s['absorbable_heads']}/{s['total_heads']} heads "
        f"(tol {s['absorb_tol']:g})"
        + ("" if s["absorbable"] else " -> only the post-rotation form is exact"),
        f"distance from identity ||G - I||/||I||: min {_fmt(ident['min'])}, "
        f"median {_fmt(ident['median'])}, max {_fmt(ident['max'])}; scale-free "
        f"min_c ||G - cI||/||G||: median {_fmt(s['scaled_identity_distance']['median'])}",
        f"entries: min {_fmt(s['min_entry'])}, max |.| {_fmt(s['max_abs_entry'])}; "
        f"positive heads {s['positive_heads']}/{s['total_heads']} (Perron-Frobenius applies there)",
    ]
    if s["perron_root"]:
        lines.append(
            f"  Perron root median {_fmt(s['perron_root']['median'])}, gap |l2|/l1 median "
            f"{_fmt(s['perron_gap']['median'])}, positive Perron vector in "
            f"{s['perron_vector_positive_heads']}/{s['perron_applicable_heads']} heads"
        )
    lines += [
        f"dominant eigenvalue real and positive in {s['dominant_real_positive_heads']}/"
        f"{s['total_heads']} heads; spectral radius median {_fmt(s['spectral_radius']['median'])}",
        f"numerical rank (rtol {s['rank_rtol']:.2g}): min {s['rank']['min']}, median "
        f"{_fmt(s['rank']['median'])}, max {s['rank']['max']}; full rank {s['full_rank_heads']}/"
        f"{s['total_heads']}; s_max median {_fmt(s['largest_singular_value']['median'])}",
        "",
        "layer  residual min/median/max   |G-I|/|I| median  positive  rank min..max  absorbable",
    ]
    for r in d["per_layer"]:
        lines.append(
            f"{r['layer']:>5}  {r['residual_min']:.3f} / {r['residual_median']:.3f} / "
            f"{r['residual_max']:.3f}     {r['identity_distance_median']:>10.3g}  "
            f"{r['positive_heads']:>8}  {r['rank_min']:>5}..{r['rank_max']:<5}  "
            f"{r['absorbable_heads']:>10}"
        )
    return "\n".join(lines)
