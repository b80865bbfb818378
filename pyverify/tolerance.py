"""The tolerance policy of the kernels against the float64 reference (and of it against mpmath).

Errors are norm-wise relative, ``max|x - y| / max|y|`` per (batch, head)
slice, ``y`` the more accurate side; ``u`` is the unit round-off
(:data:`pyverify.precision.UNIT_ROUNDOFF`).

* float64, every stage, kernels vs reference and reference vs mpmath:
  :data:`TOL_FLOAT64` ``= 1e-12``. The same formulas with a different
  summation order: ``u = 1.1e-16`` times a conditioning/accumulation factor of
  up to ~1e4 (``dk`` ~ 64 terms per product, ~20 chained GEMM/LayerNorm
  stages, ``|P| <= 1.5`` in the power law, scores up to ~200 for the trained
  ``G_LM``); observed ~1e-15.
* float32, deductive stages and scores: :data:`TOL_FLOAT32` ``= 1e-5``
  (``u = 6e-8`` times the factor of ~100 actually realised; observed
  <= 3e-6). Output: ``1e-5``, or twice the error torch's SDPA itself makes at
  float32 when handed the correctly rounded generalised query ``fl(Q G)``, if
  that is larger: softmax turns the absolute error of a score into a relative
  error of the weights, so large scores (``|E|`` ~ 170 for the trained
  ``G_LM``) amplify the unavoidable rounding of ``Q G`` (observed up to ~1e-5
  there; the kernels cannot be more accurate than that floor).
* bfloat16/float16 (the kernels keep ``D``, the metric learner and ``G`` in
  float32): deductive stages ``1e-5`` (float32, as above); scores
  ``1e-5 + 4 u^2``: the compensated kernels feed SDPA ``Q G = hi + lo``, two
  input-dtype terms, which carry ``Q G`` to relative ``u^2`` before float32
  accumulation. Output of the uncached and G-cached kernels (compensated):
  within 2 x the *control's* error plus :data:`TOL_LOW_FLOOR`, the control
  being torch SDPA at that dtype (``G = I``, same rounded ``q, k, v``, against
  float64 SDPA): the kernels may not be less accurate than the fused
  attention they build on. Output of the collapsed kernel (its default
  ``precision="rounded"`` rounds ``Q G`` once, the speed path): the control is
  SDPA fed ``fl(Q G)``.
* identity control (G-cached kernel with ``G = I``) vs float64 SDPA on the
  same rounded inputs: as the output above.

The "within k x the control's error" rule (:func:`within_control`) is the one
FlashAttention's tests apply against their ``attention_ref`` control and
PyTorch's ``_check_equal(..., fudge_factor)``; its factors per compared
quantity are in :data:`CONTROL_FACTOR`.

These tolerances are statistical, with constants no theorem carries; they are the
*fallback* only. A cross-check row whose stage has a proved bound (the floating-point
theorems of ``lean/Pldr/Float``, :mod:`pyverify.fp`) is held to that bound instead
(:meth:`pyverify.crosscheck.compare.Comparer.stage`); the metric learner's sub-stages
have theirs since its LayerNorms' statistics are certified per call
(:mod:`pyverify.fp.learner`). What still falls back here: an output whose
proved bounds' premises all fail (the MATH backend and the reference normalise first, and
no hull theorem covers that order), and the kernel
engineer's tests (``tests/kernels``). They are the listed residue of
:mod:`pyverify.testing.tolerance_scan`.
"""

from __future__ import annotations

from pyverify.precision import UNIT_ROUNDOFF

__all__ = [
    "CONTROL_FACTOR",
    "MPMATH_DPS",
    "TOL_FLOAT32",
    "TOL_FLOAT64",
    "TOL_LOW_FLOOR",
    "control_bound",
    "output_tolerance",
    "stage_tolerances",
    "within_control",
]

#: float64, every stage (see the module docstring).
TOL_FLOAT64 = 1e-12
#: float32 arithmetic: deductive stages, scores, output floor.
TOL_FLOAT32 = 1e-5
#: Absolute floor added to a control-relative bound at bfloat16/float16.
TOL_LOW_FLOOR = 1e-6
#: Digits of the mpmath oracle (its own error ~1e-40: nothing next to float64's).
MPMATH_DPS = 40

#: k of "within k x the control's error", per compared quantity: 2 for the attention
#: output (one rounding of the control's plus at most as much of our own).
CONTROL_FACTOR: dict[str, float] = {"output": 2.0}


def control_bound(control_error: float, quantity: str = "output", floor: float = 0.0) -> float:
    """``CONTROL_FACTOR[quantity] * control_error + floor``."""
    return CONTROL_FACTOR[quantity] * control_error + floor


def within_control(
    error: float, control_error: float, quantity: str = "output", floor: float = 0.0
) -> bool:
    """Whether ``error <= k * control_error + floor`` (``k`` from :data:`CONTROL_FACTOR`)."""
    return error <= control_bound(control_error, quantity, floor)


def stage_tolerances(dtype: str) -> tuple[float, float]:
    """(deductive-stage tolerance, scores tolerance) of the kernels at ``dtype``."""
    if dtype == "float64":
        return TOL_FLOAT64, TOL_FLOAT64
    if dtype == "float32":
        return TOL_FLOAT32, TOL_FLOAT32
    return TOL_FLOAT32, TOL_FLOAT32 + 4 * UNIT_ROUNDOFF[dtype] ** 2


def output_tolerance(
    dtype: str, path: str, e_sdpa: float, e_qg: float, qg: str = "fl(Q G)"
) -> tuple[float, str | None]:
    """One output tolerance and the rule that sets it, from one computation.

    Parameters
    ----------
    dtype : str
        The case's dtype.
    path : {"uncached", "collapsed"}
        The uncached and G-cached kernels (compensated ``Q G``) or the collapsed one.
    e_sdpa, e_qg : float
        torch SDPA's own error on ``Q`` (the compensated kernels' control) and when fed
        ``fl(Q G)`` (the collapsed kernel's, and every kernel's at float32).
    qg : str, default "fl(Q G)"
        What the control SDPA is fed, for the rule's text (``"Q"`` when ``G = I``).

    Returns
    -------
    (float, str or None)
        The tolerance, and its rule in words (None for a constant): the deterministic
        report keeps the rule, the measurements file the number.
    """
    if path not in ("uncached", "collapsed"):
        raise ValueError(f"path must be 'uncached' or 'collapsed'; got {path!r}")
    if dtype == "float64":
        return TOL_FLOAT64, None
    k = CONTROL_FACTOR["output"]
    if dtype == "float32":
        return max(TOL_FLOAT32, control_bound(e_qg)), (
            f"max({TOL_FLOAT32:g}, {k:g} x SDPA's error on {qg})"
        )
    fed, err = ("Q", e_sdpa) if path == "uncached" else (qg, e_qg)
    return control_bound(err, floor=TOL_LOW_FLOOR), (
        f"{k:g} x SDPA's error on {fed} + {TOL_LOW_FLOOR:g}"
    )
