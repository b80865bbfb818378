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

The figures are computed in :mod:`pyverify.diagnose.gcache`. For a model with a
live metric learner (a :class:`pyverify.reference.Decoder`;
:mod:`pyverify.diagnose.model`): the paper's **order parameter** (RMS
fluctuation of the deductive tensors ``A``, ``A_LM``, ``A_P``, ``G`` over a
set of inputs, relative to their mean)
and the **invariance error** ``eps_G`` of a cached ``G*`` against ``G(X)``
recomputed on each input (``cache_equivalence``: ``eps_G = 0`` makes the
cached model equal the recomputing one; the logits' gap is reported too).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from pyverify.diagnose.gcache import ABSORB_TOL, GCacheDiagnostics, diagnose_g_cache
from pyverify.diagnose.model import (
    DEDUCTIVE_TENSORS,
    InvarianceError,
    OrderParameter,
    as_decoder,
    invariance_error,
    order_parameter,
)
from pyverify.errors import InputValueError
from pyverify.output import Progress, table

__all__ = [
    "ABSORB_TOL",
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


def run_diagnose(path_or_name: str | os.PathLike[str], progress: Progress | None = None) -> dict:
    """Load a G-cache file and diagnose it.

    Parameters
    ----------
    path_or_name : str or path-like
        ``"trained"``, ``"identity"``, ``"random_normal"`` (the released files,
        shipped in ``pyverify/data/``; ``$PYVERIFY_DATA_DIR`` overrides, see
        :func:`pyverify.reference.data_dir`), or a path to an ``.npz`` holding ``G_LM``.
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
    try:
        diag = diagnose_g_cache(g)
    except InputValueError as exc:
        raise InputValueError(f"{name} (G_LM): {exc}") from exc
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
    dec = as_decoder(model) if model is not None else Decoder(DecoderParams.random(seed=seed))
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
    """:func:`run_diagnose` or :func:`run_model_diagnose` output as summary lines and tables."""
    if d.get("kind") == "model":
        m, op, inv = d["model"], d["order_parameter"], d["invariance"]
        lines = [
            f"live model: {m['layers']} layers x {m['heads']} heads, d_model {m['d_model']}, "
            f"{m['n_inputs']} inputs of length {m['seq_len']}",
            "order parameter (RMS fluctuation over inputs / norm of the mean):",
        ]
        lines.append(
            table(["tensor", "order parameter"], [[t, _fmt(v)] for t, v in op["overall"].items()])
        )
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
    ]
    rows = [
        [
            str(r["layer"]),
            f"{r['residual_min']:.3f} / {r['residual_median']:.3f} / {r['residual_max']:.3f}",
            f"{r['identity_distance_median']:.3g}",
            str(r["positive_heads"]),
            f"{r['rank_min']}..{r['rank_max']}",
            str(r["absorbable_heads"]),
        ]
        for r in d["per_layer"]
    ]
    header = ["layer", "residual min/median/max", "|G-I|/|I| median", "positive"]
    lines.append(table([*header, "rank min..max", "absorbable"], rows, right=(0, 2, 3, 5)))
    return "\n".join(lines)
