"""Proved bounds of computed softmax rows and attention outputs, per SDPA backend.

The chain of theorems: the scores' bound (:func:`pyverify.fp.models.scores_bound`) enters
each exponential through ``[fp_softmax]`` ``fp_softmax_exp``; the weights and the output
through ``[fp_softmax]`` and ``[fp_head_output]`` in the order the implementation uses:

* the float64 reference: normalise first (``fl(e^_j / s^)``, then ``p V``:
  ``fp_head_output_normalized``), NumPy's ``exp``;
* torch's fused CPU kernel (``flash``, what runs when the query, key and value head
  sizes agree on a 4-D input): one key block (at most :data:`KV_BLOCK` keys), numerator
  and denominator accumulated, ``N^ * fl(1 / D^)`` (``fp_head_output``), the exponential
  ``exp_u20`` at float32 (certified, :mod:`pyverify.fp.exps`), ``fexp_u20`` with the
  numerator's exponentials rounded to bfloat16/float16 below it;
* torch's MATH backend (``math``, what runs otherwise: the compensated kernels' ``[hi, lo]``
  queries have head size ``2 dk`` against values of ``dk``): every dtype below float32
  computed in float32, ``softmax`` normalised first (``fl(e^_j fl(1 / s^))``), ``p V``
  in float32, the output rounded once to the input format (``fp_head_output_normalized``),
  the exponential that of torch's float32 ``softmax``.

Which backend runs is a premise: the tests and the cross-check pin it
(``torch.nn.attention.sdpa_kernel``), so a torch that picks another one stops with an
error instead of being measured against the wrong bound. CUDA SDPA (online softmax over
key blocks, ``exp2`` with the scale folded in) is not modelled: refused by name.

Where the scores' error is too large for ``fp_head_output``'s premises (``delta < 1``,
``beta < 1``: bfloat16 queries against large trained metrics), the fused kernel's row is
held to ``[fp_head_output]`` ``fp_head_output_hull`` (``lean/Pldr/Float/Hull.lean``): the
kernel's quotient and the exact output are both convex combinations of the values, so at
most the values' range apart, plus the kernel's roundings; every row takes the smaller of
the two proved bounds. The MATH backend and the reference have no such bound (they
normalise first): there a failed premise still means no bound.

``mass`` (``mu = sum_j p_j |v_j|`` of the statement) is bounded from the actual weights:
``p(x)_j <= exp(2 eta) p(x64)_j`` (``[score_perturbation]``
``score_perturbation_softmax``, ``eta`` the float64 scores' own error) with the float64
weights' ``[fp_softmax]`` bound on top.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from pyverify.fp.exps import exp_accuracy
from pyverify.fp.formulas import (
    EVAL_SLACK,
    fp_head_output,
    fp_head_output_hull,
    fp_head_output_normalized,
    fp_softmax_beta,
    fp_softmax_coefficients,
    fp_softmax_exp_excess,
    prod1m,
)
from pyverify.fp.models import REFERENCE_ARITHMETIC, Arithmetic, scores_bound
from pyverify.fp.underflow import NotModelled

__all__ = [
    "KV_BLOCK",
    "attention_bound",
    "default_path",
    "exp_key",
    "head_output_bound",
    "pinned",
    "sdpa_backend",
    "softmax_bound",
]

#: The longest key row of one flash-attention block (torch's ``kvSplitSize``).
KV_BLOCK = 512


def default_path(ar: Arithmetic) -> str:
    """How an implementation of ``ar`` forms the scores its head feeds SDPA.

    The reference: ``reference``; the kernels' head: ``sdpa_split`` below float32 (the
    compensated ``[hi, lo]``), else ``sdpa``.
    """
    if ar.impl == "reference":
        return "reference"
    return "sdpa_split" if ar.reduced else "sdpa"


def sdpa_backend(path: str, dq: int, dv: int) -> str:
    """The SDPA backend torch runs on the CPU for a 4-D call on ``path``'s queries.

    Which ``[fp_head_output]`` instantiation applies (a premise, pinned by the checks).

    ``flash`` when the query/key head size equals the value's (``2 dq`` for
    ``sdpa_split``), else ``math``; ``reference`` for the reference path.
    """
    if path == "reference":
        return "reference"
    q_size = 2 * dq if path == "sdpa_split" else dq
    return "flash" if q_size == dv else "math"


@contextmanager
def pinned(backend: str, device: str = "cpu") -> Iterator[None]:
    """Run torch's CPU SDPA inside only on ``backend`` (``flash``/``math``).

    ``reference`` and devices other than the CPU: nothing pinned.

    torch raises ``RuntimeError`` ("No available kernel") where it cannot run that
    backend: a check pinned so never measures another kernel against the bound.
    """
    if backend == "reference" or device != "cpu":  # CUDA: its bound is refused anyway
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    chosen = {"flash": SDPBackend.FLASH_ATTENTION, "math": SDPBackend.MATH}[backend]
    with sdpa_kernel([chosen]):
        yield


def exp_key(ar: Arithmetic, backend: str) -> str:
    """Which exponential the softmax of ``ar`` uses on ``backend`` (:mod:`pyverify.fp.exps`)."""
    if ar.impl == "reference" or backend == "reference":
        return "numpy"
    if ar.compute == "float64":
        return "sleef"
    if backend == "math":
        return "softmax32"
    return "fexp_u20" if ar.reduced else "exp_u20"


def _refuse_device(ar: Arithmetic) -> None:
    if ar.device not in ("cpu", "numpy"):
        raise NotModelled(
            f"{ar.device} {ar.dtype}: torch's CUDA SDPA (online softmax over key blocks, "
            "exp2 with the scale folded in) is not modelled: no proved attention bound"
        )


def _rows(shape: tuple[int, int], causal: bool) -> np.ndarray:
    s_q, s_k = shape
    if not causal:
        return np.ones((s_q, s_k), dtype=bool)
    return np.arange(s_k)[None, :] <= (np.arange(s_q)[:, None] + (s_k - s_q))


def _row_params(ar: Arithmetic, key: str, x, delta, dx, allowed, *, partial: bool = False):
    """Per row: keys ``n``, ``sigma >= 1/S``, ``c_e - 1``, ``eta_e``: ``[fp_softmax]``.

    ``fp_softmax_exp`` with the row's largest score error ``delta`` and the spread of its
    shifted scores (both sides' errors included: ``2 max(delta + dx)``). The statements
    need ``delta < 1``, ``delta + u spread < 1`` and ``beta < 1``: a row where one fails
    raises, or with ``partial`` comes back with neutral parameters and ``False`` in the
    returned mask of rows whose premises hold.
    """
    big = np.where(allowed, x, -np.inf).max(axis=-1)
    small = np.where(allowed, x, np.inf).min(axis=-1)
    dmax = np.where(allowed, delta, 0.0).max(axis=-1)
    spread = big - small + 2 * np.where(allowed, delta + dx, 0.0).max(axis=-1)
    n = allowed.sum(axis=-1)
    u_exp, eta_e = exp_accuracy(key, ar.device)
    ok = (dmax < 1) & (dmax + ar.u_c * spread < 1)
    if not partial and not ok.all():
        raise ValueError("a score's error bound reaches 1: no softmax bound")
    dmax, spread = np.where(ok, dmax, 0.0), np.where(ok, spread, 0.0)
    sigma = 1.0 / (1.0 - dmax)  # S >= exp(x_j* - m) >= 1 - delta (m = max computed score)
    ce_m1 = fp_softmax_exp_excess(dmax, spread, ar.u_c, u_exp)
    ok &= fp_softmax_beta(ce_m1, n, ar.u_c, eta_e, sigma) < 1
    if not partial and not ok.all():
        raise ValueError("the normaliser's relative error beta reaches 1")
    ce_m1, sigma = np.where(ok, ce_m1, 0.0), np.where(ok, sigma, 1.0)
    return n, sigma, ce_m1, eta_e, ok


def _flash_terms(ar: Arithmetic, n, vsum):
    """``(e_p, eta_g_sum, w, eta_y)`` of the fused kernel (``[fp_head_output]``)."""
    u, uio, etaio, eta = ar.u_c, ar.u_io, ar.eta_io, ar.eta_c
    if ar.impl != "reference" and ar.reduced:
        # exponentials rounded to the input format for p V; exact float32 products
        return uio, etaio * vsum + n * eta, prod1m(u, u, uio), etaio + eta
    return u, n * eta, prod1m(u, u), eta


def _hull_bounds(ar: Arithmetic, key: str, v, allowed, vsum) -> np.ndarray:
    """``[fp_head_output]`` ``fp_head_output_hull`` for every row of the fused kernel.

    No premise on the scores: the values' range in the row, plus the kernel's rounding of
    its own convex combination. Premises: every computed exponential ``>= 0`` (the
    certified sweep reads each one out of SDPA as a non-negative float32,
    :mod:`pyverify.fp.expcert`; the declared ``fexp_u20`` likewise assumed), and the
    row maximum's ``e^(0) >= c = 1 - u_exp - eta_e`` (``fl(m - m) = 0`` exactly).
    """
    u_exp, eta_e = exp_accuracy(key, ar.device)
    n = allowed.sum(axis=-1)[:, None]
    mask = allowed[:, :, None]  # (S_q, S_k, 1) against the values (S_k, dv)
    hi = np.where(mask, v, -np.inf).max(axis=1)
    lo = np.where(mask, v, np.inf).min(axis=1)
    vmax = np.maximum(np.abs(hi), np.abs(lo))
    e_p, eta_g, w, eta_y = _flash_terms(ar, n, vsum)
    return fp_head_output_hull(hi - lo, vmax, n, ar.u_c, e_p, w, 1.0 - u_exp - eta_e,
                               eta_g, eta_y)  # fmt: skip


def _output_bounds(ar: Arithmetic, backend: str, eta_e, mass, n, ce_m1, sigma, vsum) -> np.ndarray:
    """The output bound of every row (arrays: rows x columns, row quantities as (S, 1)).

    ``[fp_head_output]``: ``fp_head_output`` (fused) or ``fp_head_output_normalized`` with
    ``[fp_softmax]`` weights (the reference, MATH); ``ce_m1 = c_e - 1``.
    """
    u, uio, etaio, eta = ar.u_c, ar.u_io, ar.eta_io, ar.eta_c
    low = ar.impl != "reference" and ar.reduced
    if backend == "flash":  # fused: N^ * fl(1 / D^)
        e_p, eta_g, w, eta_y = _flash_terms(ar, n, vsum)
        return fp_head_output(mass, ce_m1, n, u, e_p, w, sigma, vsum, eta_e, eta_g, eta_y)
    # normalise first: the reference (one quotient) or MATH (a reciprocal and a product)
    u_d = u if backend == "reference" else prod1m(u, u)
    rel, ab = fp_softmax_coefficients(ce_m1, n, u, u_d, sigma, eta_e, eta)
    return fp_head_output_normalized(
        mass, rel, n, u, u, uio if low else 0.0, vsum,
        eta_p=ab, eta_g_sum=n * eta, eta_y=etaio if low else 0.0,
    )  # fmt: skip


def _mass(x, dx, allowed, va) -> np.ndarray:
    """An upper bound of ``mu_ic = sum_j softmax(x)_ij |v_jc|`` from the float64 scores.

    ``x`` (float64, within ``dx`` of the exact scores): ``softmax(x_exact)_j <=
    exp(2 max dx) softmax(x)_j`` (``score_perturbation_softmax``), and the float64 weights
    are within ``[fp_softmax]`` (NumPy's ``exp``, a quotient) of ``softmax(x)``.
    """
    z = np.where(allowed, x - np.where(allowed, x, -np.inf).max(axis=-1, keepdims=True), -np.inf)
    e = np.exp(z)
    p = e / e.sum(axis=-1, keepdims=True)
    n = allowed.sum(axis=-1)[:, None]
    spread = (np.where(allowed, -z, 0.0)).max(axis=-1)[:, None]
    ar = REFERENCE_ARITHMETIC
    u_exp, eta_e = exp_accuracy("numpy")
    ce_m1 = fp_softmax_exp_excess(0.0, spread, ar.u_c, u_exp)
    rel, ab = fp_softmax_coefficients(ce_m1, n, ar.u_c, ar.u_c, 1.0, eta_e, ar.eta_c)
    p_up = np.where(allowed, p * (1 + rel) + ab, 0.0)
    factor = math.exp(2 * float(np.max(np.where(allowed, dx, 0.0)))) * EVAL_SLACK
    return factor * (p_up @ va)


def attention_bound(
    ar: Arithmetic,
    q,
    k,
    v,
    G=None,
    dG=None,
    *,
    causal: bool = True,
    path: str | None = None,
    mass=None,
    backend: str | None = None,
) -> np.ndarray:
    """Entrywise bound of the computed ``softmax(Q G K^T / sqrt(dk) + mask) V`` (S_q, dv).

    ``path`` (default ``reference`` for the reference, ``sdpa_split`` for reduced
    kernels, else ``sdpa``) says how the scores are formed (:func:`scores_bound`);
    ``backend`` which SDPA runs (default :func:`sdpa_backend` of the shapes). ``mass``
    bounds ``sum_j p_ij |v_jc|`` (default: from the actual weights, :func:`_mass`).
    """
    ar.require_gradual()
    _refuse_device(ar)
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    path = path or default_path(ar)
    dk = q.shape[-1]
    backend = backend or sdpa_backend(path, dk, v.shape[-1])
    if backend == "flash" and k.shape[0] > KV_BLOCK:
        raise ValueError(f"more than {KV_BLOCK} keys: torch rescales blocks (not covered)")
    Gm = np.eye(dk) if G is None else np.asarray(G, np.float64)
    delta = scores_bound(ar, q, k, Gm, dG, path, "math" if backend == "math" else "flash")
    x = (q @ Gm) @ k.T / math.sqrt(dk)
    dx = scores_bound(REFERENCE_ARITHMETIC, q, k, Gm, dG, "reference")
    allowed = _rows((q.shape[0], k.shape[0]), causal)
    return head_output_bound(ar, backend, x, dx, delta, np.abs(v), allowed, mass=mass, v=v)


def head_output_bound(
    ar: Arithmetic, backend: str, x, dx, delta, va, allowed, *, mass=None, v=None
) -> np.ndarray:
    """``[fp_head_output]`` Entrywise bound of a computed head output, from its scores.

    ``x``: float64 scores within ``dx`` of the exact ones; ``delta``: a bound of the
    computed scores' distance to the exact ones; ``va``: a bound of the values' magnitudes
    as the kernel holds them (the output is bounded against the exact weights times those
    values); ``allowed``: the mask. The fused kernel's rows whose premises fail take
    ``fp_head_output_hull`` when the held values ``v`` are given (else they raise).
    """
    key = exp_key(ar, backend)
    # the fused kernel has a bound without premises on the scores: rows whose premises
    # fail take it, and every row the smaller of the two (both proved)
    hull = backend == "flash" and ar.impl != "reference" and v is not None
    n_row, sigma, ce, eta_e, ok = _row_params(ar, key, x, delta, dx, allowed, partial=hull)
    va = np.asarray(va, np.float64)
    if mass is None:
        mass = _mass(x, dx, allowed, va)
    vsum = allowed.astype(np.float64) @ va
    col = (n_row[:, None], ce[:, None], sigma[:, None])
    bound = _output_bounds(ar, backend, eta_e, np.asarray(mass, np.float64), *col, vsum)
    if hull:
        bound = np.minimum(np.where(ok[:, None], bound, np.inf),
                           _hull_bounds(ar, key, v, allowed, vsum))  # fmt: skip
    return EVAL_SLACK * bound


def softmax_bound(ar: Arithmetic, E, dE=None, *, causal: bool = False, p=None) -> np.ndarray:
    """Entrywise bound of the implementation's ``softmax(E)`` against the exact softmax.

    ``E`` as held (rounded), ``dE`` its distance to the exact scores (None: 0), ``p`` an
    entrywise upper bound of the exact weights (default 1). The reference computes
    ``fp_softmax``; the kernels run the fused SDPA with ``Q = E``, ``K = V = I``,
    ``scale = 1`` (exact scores; head sizes equal: ``flash``): an attention output whose
    ``v`` is a unit vector, bounded as in :func:`attention_bound` (mass ``p_ik``,
    ``sum_j |v_j| = 1``).
    """
    ar.require_gradual()
    _refuse_device(ar)
    E = np.asarray(E, np.float64)
    s_q, s_k = E.shape
    delta = np.zeros_like(E) if dE is None else np.asarray(dE, np.float64)
    allowed = _rows((s_q, s_k), causal)
    backend = "reference" if ar.impl == "reference" else "flash"
    if backend == "flash" and s_k > KV_BLOCK:
        raise ValueError(f"more than {KV_BLOCK} keys: torch rescales blocks (not covered)")
    n_row, sigma, ce, eta_e, _ = _row_params(ar, exp_key(ar, backend), E, delta, 0.0 * E, allowed)
    pw = np.ones_like(E) if p is None else np.asarray(p, np.float64)
    col = (n_row[:, None], ce[:, None], sigma[:, None])
    if ar.impl == "reference":
        n_c, ce_c, sigma_c = col
        rel, ab = fp_softmax_coefficients(ce_c, n_c, ar.u_c, ar.u_c, sigma_c, eta_e, ar.eta_c)
        bound = rel * pw + ab
    else:
        bound = _output_bounds(ar, backend, eta_e, pw, *col, np.ones_like(E))
    return EVAL_SLACK * np.where(allowed, bound, 0.0)
