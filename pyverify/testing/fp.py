"""What the floating-point bound tests share: an implementation's arithmetic, exact checks.

The bounds are :mod:`pyverify.fp.models` (the Lean theorems of ``lean/Pldr/Float``
instantiated for each implementation). The oracles are exact: rational arithmetic
(``fractions.Fraction``) where the value is rational, mpmath at :data:`MP_DPS` digits
where it is not; the comparison ``|computed - exact| <= bound`` is itself done exactly
(in Fractions) or in mpmath with the oracle's own error (:data:`MP_REL`) taken off the
bound, so the check adds no rounding of its own.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

from pyverify.fp.attention import default_path
from pyverify.fp.formulas import EVAL_SLACK
from pyverify.fp.models import Arithmetic, arithmetic
from pyverify.precision import UNIT_ROUNDOFF, gamma
from pyverify.testing.exact import Mat

__all__ = [
    "MP_DPS",
    "MP_REL",
    "arith",
    "attention_path",
    "exact_product",
    "mp_excess",
    "oracle_rounding",
    "pinned_sdpa",
    "scores_path",
    "worst_excess",
]

#: Digits of the mpmath oracles.
MP_DPS = 50
#: ``[fp_summation]`` Relative error of an mpmath oracle value at MP_DPS digits: at most
#: ``2^20`` roundings on a path at ``10^-MP_DPS`` (a softmax or attention row; far below
#: any float64 bound).
MP_REL = gamma(2**20, 10.0**-MP_DPS)
#: ``[fp_ieee_rounding]`` float64's unit round-off.
U64 = UNIT_ROUNDOFF["float64"]


def arith(impl: Any) -> Arithmetic:
    """The arithmetic the bounds assume for ``impl`` (a :class:`~pyverify.testing.impls.Impl`)."""
    return arithmetic(
        impl.name, impl.dtype, getattr(impl, "compute", "") or None, getattr(impl, "device", "cpu")
    )


def scores_path(impl: Any) -> str:
    """How ``impl``'s ``scores`` forms ``Q G K^T / sqrt(dk)``: its path for ``scores_bound``.

    ``reference`` for the reference, else ``matmul`` (the kernels' product in their dtype).
    """
    return "reference" if arith(impl).impl == "reference" else "matmul"


def attention_path(impl: Any, collapsed: bool = False) -> str:
    """How ``impl`` forms the scores it feeds SDPA (:func:`pyverify.fp.models.scores_bound`).

    The reference: ``reference``; the kernels' G-cached head: ``sdpa_split`` below float32
    (the compensated ``[hi, lo]``), else ``sdpa``; the collapsed head: ``sdpa_rounded``
    below float32, else ``sdpa``.
    """
    ar = arith(impl)
    if collapsed and ar.reduced and ar.impl != "reference":
        return "sdpa_rounded"
    return default_path(ar)


def pinned_sdpa(impl: Any, path: str, dq: int, dv: int) -> Any:
    """A context running ``impl``'s SDPA on the backend its bound models, and only it.

    :func:`pyverify.fp.attention.sdpa_backend` of the path and head sizes; torch raises
    where it cannot run that backend, so the test then fails instead of measuring
    another kernel against the bound.
    """
    from pyverify.fp.attention import pinned, sdpa_backend

    return pinned(sdpa_backend(path, dq, dv), getattr(impl, "device", "cpu"))


def exact_product(A: np.ndarray, B: np.ndarray) -> Mat:
    """``A @ B`` in Fractions (the entries of float arrays are dyadic rationals)."""
    Af = [[Fraction(float(x)) for x in row] for row in np.asarray(A, np.float64)]
    Bt = [[Fraction(float(x)) for x in col] for col in np.asarray(B, np.float64).T]
    return [[sum((a * b for a, b in zip(r, c, strict=True)), Fraction(0)) for c in Bt] for r in Af]


def oracle_rounding(x: np.ndarray) -> np.ndarray:
    """``[fp_ieee_rounding]`` How far the exact value is from its mpmath oracle in float64, ``x``.

    The oracle's ``x*`` is within ``MP_REL |x*|`` of the exact value and ``x = fl(x*)``
    within ``u64 |x*|`` of ``x*``, ``|x*| <= |x| / (1 - u64)``: ``(u64 + MP_REL) |x| /
    (1 - u64)``, evaluated in float64 (times ``EVAL_SLACK``).
    """
    return EVAL_SLACK * (U64 + MP_REL) * np.abs(x) / (1 - U64)


def worst_excess(got: np.ndarray, exact: Mat, bound: np.ndarray) -> float:
    """The largest ``|got - exact| / bound`` (exact in Fractions; > 1 means violated).

    Returns 0 for an empty matrix; ``inf`` where the bound is 0 and the error is not.
    """
    worst = 0.0
    g, b = np.asarray(got, np.float64), np.asarray(bound, np.float64)
    for i, row in enumerate(exact):
        for j, e in enumerate(row):
            err = abs(Fraction(float(g[i, j])) - e)
            bij = Fraction(float(b[i, j]))
            if err > bij:
                worst = max(worst, float(err / bij) if bij > 0 else float("inf"))
            elif bij > 0:
                worst = max(worst, float(err / bij))
    return worst


def mp_excess(got: np.ndarray, exact: Any, bound: np.ndarray) -> float:
    """The largest ``|got - exact| / (bound - MP_REL |exact|)`` for an mpmath oracle.

    ``exact`` is a nested list or ``mpmath.matrix`` of mpf values (MP_DPS digits).
    """
    ctx = mpmath.MPContext()
    ctx.dps = MP_DPS
    g, b = np.asarray(got, np.float64), np.asarray(bound, np.float64)
    worst = ctx.mpf(0)
    for i in range(g.shape[0]):
        for j in range(g.shape[1]):
            e = ctx.mpf(exact[i][j] if isinstance(exact, list) else exact[i, j])
            room = ctx.mpf(float(b[i, j])) - MP_REL * abs(e)
            err = abs(ctx.mpf(float(g[i, j])) - e)
            if room <= 0:
                if err > 0:
                    return float("inf")
                continue
            worst = max(worst, err / room)
    return float(worst)
