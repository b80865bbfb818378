"""The proved bound of each compared stage (``lean/Pldr/Float``, via :mod:`pyverify.fp.models`)."""

from __future__ import annotations

import numpy as np

from pyverify.crosscheck.compare import Proved
from pyverify.precision import MPMATH_DPS, UNIT_ROUNDOFF, gamma

__all__ = [
    "MP_REL",
    "PROVED_IDS",
    "U64",
    "head_bounds",
    "output_bound",
    "per_slice",
    "pipeline_bounds",
    "stage_bound",
]


PROVED_IDS = {
    "A_LM": ("fp_mixed_precision", "fp_elementwise"),
    "A_P": ("fp_elementwise",),
    "G": ("fp_mixed_precision",),
    "scores": ("fp_head_scores", "fp_mixed_precision"),
    "output": ("fp_head_output", "fp_softmax", "fp_head_scores"),
}
#: ``[fp_summation]`` The mpmath oracle's own relative error: at most ``2^20`` roundings on
#: a path, each at ``10^-MPMATH_DPS`` (``gamma_k`` of mpmath's precision; << float64's).
MP_REL = gamma(2**20, 10.0**-MPMATH_DPS)
U64 = UNIT_ROUNDOFF["float64"]


def per_slice(fn, *arrays):  # type: ignore[no-untyped-def]
    """``fn`` on every (batch, head) slice of the (B, H, ., .) arrays, stacked back."""
    B, H = arrays[0].shape[:2]
    return np.stack(
        [np.stack([fn(b, h, *(a[b, h] for a in arrays)) for h in range(H)]) for b in range(B)]
    )


def stage_bound(stage: str, fn, ids: tuple[str, ...] | None = None) -> Proved:  # type: ignore[no-untyped-def]
    """The stage's proved bound from ``fn()``, or the premise that failed (no bound).

    ``ids``: its theorems (default :data:`PROVED_IDS` of ``stage``). The note of a missing
    bound is its reason only (:meth:`~pyverify.crosscheck.compare.Comparer.stage` says
    "no proved bound").
    """
    from pyverify.fp.underflow import BoundRefused

    ids = PROVED_IDS[stage] if ids is None else ids
    try:
        return Proved(fn(), ids)
    except ValueError as exc:  # a theorem's premise does not hold for these inputs
        return Proved(None, ids, str(exc))
    except BoundRefused as exc:  # the device's premises: refused by name
        return Proved(None, ids, f"refused: {exc}")


def pipeline_bounds(ar, heads, got: dict, ref: dict, exact_is_mp: bool) -> dict[str, Proved]:  # type: ignore[no-untyped-def]
    """Stage-by-stage bounds of ``got`` vs ``ref`` for ``A_LM``, ``A_P``, ``G``.

    Each stage's exact value is the stage applied exactly to ``ref``'s input of that
    stage (the reference's, or mpmath's rounded to float64); ``got`` computed it from its
    own input, off by the measured difference. The bound is ``got``'s (arithmetic
    ``ar``) plus ``ref``'s (the float64 reference's, or the rounding of mpmath's value).
    """
    from pyverify.fp.models import (
        REFERENCE_ARITHMETIC as REF,
    )
    from pyverify.fp.models import (
        linear_stage_bound,
        metric_tensor_bound,
        power_stage_bound,
    )

    def slack(x):
        """``[fp_elementwise]`` (``L = 1``): the float64 rounding of mpmath's value.

        The exact input is within ``2 u64 |x|`` of it (its rounding, mpmath's own error).
        """
        return 2 * U64 * np.abs(x) if exact_is_mp else 0.0 * x

    def want_err(x, b_ref):  # ref's own error: float64 rounding of mpmath, or the reference's
        return (U64 + MP_REL) * np.abs(x) * (1 + U64) if exact_is_mp else b_ref

    def lm(b, h, A_g, A_r, want):
        p = heads[h]
        z = p.W @ A_r + p.b
        dz_t = linear_stage_bound(REF, p.W, A_r, p.b, dX=slack(A_r))
        zub = np.abs(z) + dz_t
        dz_g = linear_stage_bound(ar, p.W, A_g, p.b, dX=np.abs(A_g - A_r) + slack(A_r))
        own = metric_tensor_bound(ar, zub, dz_g, p.metric_eps)
        return own + want_err(want, metric_tensor_bound(REF, zub, dz_t, p.metric_eps))

    def pw(b, h, x_g, x_r, want):
        p = heads[h]
        P_held = p.P if ar.u_hold == 0 else p.P.astype(np.float32).astype(np.float64)
        own = power_stage_bound(ar, x_r, np.abs(x_g - x_r) + slack(x_r), p.P, P_held)
        return own + want_err(want, power_stage_bound(REF, x_r, slack(x_r), p.P, p.P))

    def gg(b, h, x_g, x_r, want):
        p = heads[h]
        own = linear_stage_bound(ar, p.a, x_g, p.b_a, dX=np.abs(x_g - x_r) + slack(x_r))
        return own + want_err(want, linear_stage_bound(REF, p.a, x_r, p.b_a, dX=slack(x_r)))

    return {
        "A_LM": stage_bound("A_LM", lambda: per_slice(lm, got["A"], ref["A"], ref["A_LM"])),
        "A_P": stage_bound("A_P", lambda: per_slice(pw, got["A_LM"], ref["A_LM"], ref["A_P"])),
        "G": stage_bound("G", lambda: per_slice(gg, got["A_P"], ref["A_P"], ref["G"])),
    }


def head_bounds(ar, q, k, v, G_used, G_exact, path_scores, path_out):  # type: ignore[no-untyped-def]
    """(scores, output) bounds per slice: ``ar``'s plus the float64 reference's.

    Both against exact arithmetic with ``G_exact`` on the same inputs; the output's is
    :func:`output_bound` (which alone spares the scores' bound).
    """
    from pyverify.fp.models import REFERENCE_ARITHMETIC as REF
    from pyverify.fp.models import scores_bound

    def sc(b, h, qs, ks, g_used, g_ex):
        dG = np.abs(g_used - g_ex)
        own = scores_bound(ar, qs, ks, g_used, dG, path_scores)
        return own + scores_bound(REF, qs, ks, g_ex, None, "reference")

    Gu, Ge = _per_head(q, G_used, G_exact)
    return (
        stage_bound("scores", lambda: per_slice(sc, q, k, Gu, Ge)),
        output_bound(ar, q, k, v, G_used, G_exact, path_out),
    )


def output_bound(ar, q, k, v, G_used, G_exact, path) -> Proved:  # type: ignore[no-untyped-def]
    """The output's bound per slice alone: ``ar``'s on ``path`` plus the float64 reference's.

    Against exact arithmetic with ``G_exact`` on the same inputs; ``G_used`` is the
    operator ``ar`` computed with (its distance to ``G_exact`` an input error).
    """
    from pyverify.fp.attention import attention_bound
    from pyverify.fp.models import REFERENCE_ARITHMETIC as REF

    def out(b, h, qs, ks, vs, g_used, g_ex):
        dG = np.abs(g_used - g_ex)
        own = attention_bound(ar, qs, ks, vs, g_used, dG, path=path)
        return own + attention_bound(REF, qs, ks, vs, g_ex)

    Gu, Ge = _per_head(q, G_used, G_exact)
    return stage_bound("output", lambda: per_slice(out, q, k, v, Gu, Ge))


def _per_head(q, G_used, G_exact):  # type: ignore[no-untyped-def]
    """``G_used``, ``G_exact`` broadcast to ``q``'s (B, H) slices."""
    B, H = q.shape[:2]
    return (
        np.broadcast_to(G_used, (B, H, *G_used.shape[-2:])),
        np.broadcast_to(G_exact, (B, H, *G_exact.shape[-2:])),
    )
