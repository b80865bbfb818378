"""rope_relative_position: G commutes with all R_n iff scores depend only on n - m.

Scores are evaluated the way each implementation does it: the query and key rows are
rotated by the implementation's RoPE at their positions, then ``(q' G) k'^T / sqrt(dk)``
(the kernels form ``q' G`` with ``rotate_query``, as their SDPA path does).

Bound of one score (:func:`score_and_bound`) against the exact ``q R_m^T G R_n k^T /
sqrt(dk)`` of the held ``q``, ``k``, ``G``: each rotated row within
:func:`~pyverify.testing.rope_bounds.rope_row_error` of the exact rotation
(``[fp_elementwise]``, ``[fp_dot_product]``, ``[fp_ieee_rounding]``); the scores of the
computed rows within :func:`~pyverify.fp.models.scores_bound` (``[fp_head_scores]``); the
rows' errors carried through the exact bilinear score. Two scores are compared: the sum of
their bounds. Sufficiency compares an implementation with itself (exact rotations at its own
frequencies); necessity compares with an exact witness (mpmath, the spec's frequencies).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pyverify.fp.formulas import EVAL_SLACK
from pyverify.fp.models import scores_bound
from pyverify.reference import rope_thetas, rotation_matrix
from pyverify.testing.fp import MP_REL, arith, scores_path
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.rope_bounds import (
    PLANE,
    angle_error,
    angle_rounding,
    exact_thetas,
    plane_norm1,
    rope_row_error,
    theta_excess,
    trig_excess,
)
from pyverify.testing.stage_bounds import mp_context
from pyverify.testing.strategies import (
    arrays,
    commutant_matrix,
    project_commutant_np,
    trained_g_lm,
    trained_head,
)

pytestmark = pytest.mark.theorem("rope_relative_position")

#: [non-vacuity] A witness's exact score change must exceed the two scores' bounds this many
#: times (then the implementation's change is far above its rounding).
WITNESS_MARGIN = 4


def score_and_bound(impl, q, m, k, n, G, angle) -> tuple[float, float]:
    """``q R_m^T G R_n k^T / sqrt(dk)`` through the implementation, and its bound.

    ``[fp_head_scores]`` (:func:`scores_bound` of the computed rows, path ``reference`` or
    the kernels' ``matmul``) plus the rows' errors ``dq``, ``dk`` (:func:`rope_row_error`,
    the angle's error ``angle(position)``) through the exact score, exact algebra:
    ``tau (dq |G| |k^| + (|q^| + dq) |G| dk)``.
    """
    ar = arith(impl)
    qr = impl.rope(q[None], offset=m)
    kr = impl.rope(k[None], offset=n)
    s = float(impl.scores(qr, kr, G)[0, 0])
    dq = rope_row_error(ar, plane_norm1(q), angle(m))
    dk_ = rope_row_error(ar, plane_norm1(k), angle(n))
    b_fl = float(scores_bound(ar, qr, kr, G, None, scores_path(impl))[0, 0])
    Ga, tau = np.abs(G), 1 / np.sqrt(q.shape[0])
    prop = tau * (dq @ Ga @ np.abs(kr[0]) + (np.abs(qr[0]) + dq) @ Ga @ dk_)
    return s, (b_fl + float(prop)) * EVAL_SLACK


def _own(m: int):  # type: ignore[no-untyped-def]
    """The angle's error against the implementation's own frequencies (theta^_p <= 1)."""
    return angle_rounding(m)


def _spec(dk: int):  # type: ignore[no-untyped-def]
    """The angle's error against the spec's exact frequencies, per coordinate."""
    return lambda m: np.repeat(angle_error(m, dk), PLANE)


positions = st.integers(0, 2048)


def _offset_only(impl, G, q, k, m, n, t) -> None:
    dk = q.shape[0]
    pos = [m, n, m + t, n + t]
    assert trig_excess(np.outer(pos, rope_thetas(dk)), impl.device) <= 1  # TRIG_ACCURACY
    s1, b1 = score_and_bound(impl, q, m, k, n, G, _own)
    s2, b2 = score_and_bound(impl, q, m + t, k, n + t, G, _own)
    assert abs(s1 - s2) <= b1 + b2  # the exact scores are equal


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4, 6, 8, 16]), positions, positions, positions, st.data())
def test_commuting_operator_gives_offset_only_scores(impl, dk, m, n, t, data):
    """Sufficiency: G in the commutant -> score(m, n) = score(m + t, n + t)."""
    G = impl.round(data.draw(commutant_matrix(dk), label="G"))  # rounding keeps x I + y J
    q = impl.round(data.draw(arrays((dk,), 2.0), label="q"))
    k = impl.round(data.draw(arrays((dk,), 2.0), label="k"))
    _offset_only(impl, G, q, k, m, n, t)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(trained_head, positions, positions, positions, st.data())
def test_projected_trained_operator_gives_offset_only_scores(impl, head, m, n, t, data):
    """The commutant projection of the real trained G_LM (dk = 64) is offset-only."""
    G = impl.round(project_commutant_np(trained_g_lm()[head]))
    q = impl.round(data.draw(arrays((64,), 1.0), label="q"))
    k = impl.round(data.draw(arrays((64,), 1.0), label="k"))
    _offset_only(impl, G, q, k, m, n, t)


def _witness(G: np.ndarray) -> tuple[int, int, int, mpmath.mpf]:
    """(i, j, t, delta): unit vectors e_i, e_j at positions (0, 0) and (t, t) give scores
    G_ij / sqrt(dk) and (R_t^T G R_t)_ij / sqrt(dk), differing by delta (mpmath, the spec's
    exact frequencies); (i, j, t), t <= 16, chosen in float64 to maximise |delta| over the
    |G| mass of the planes of i and j (what the scores' bounds scale with)."""
    dk = G.shape[0]
    blocks = np.abs(G).reshape(dk // PLANE, PLANE, dk // PLANE, PLANE).sum(axis=(1, 3))
    mass = np.maximum(np.repeat(np.repeat(blocks, PLANE, 0), PLANE, 1), np.finfo(float).tiny)
    best, pick = -1.0, (0, 0, 1)
    for t in range(1, 17):
        R = rotation_matrix(t, dk)
        ratio = np.abs(R.T @ G @ R - G) / mass
        i, j = np.unravel_index(int(np.argmax(ratio)), G.shape)
        if ratio[i, j] > best:
            best, pick = float(ratio[i, j]), (int(i), int(j), t)
    i, j, t = pick
    ctx = mp_context()
    th = exact_thetas(dk)

    def col(c: int) -> dict[int, mpmath.mpf]:  # column c of the exact R_t: its plane only
        p, a = c // PLANE, t * th[c // PLANE]
        cs, sn = ctx.cos(a), ctx.sin(a)
        return {PLANE * p: cs, PLANE * p + 1: sn} if c % PLANE == 0 else {
            PLANE * p: -sn, PLANE * p + 1: cs}  # fmt: skip

    ri, rj = col(i), col(j)
    quad = ctx.fsum(ri[a] * ctx.mpf(float(G[a, b])) * rj[b] for a in ri for b in rj)
    return i, j, t, (quad - ctx.mpf(float(G[i, j]))) / ctx.sqrt(dk)


def _observed(impl, G: np.ndarray, assume_margin: bool) -> None:
    """The witness's change, observed through the implementation within the two bounds."""
    dk = G.shape[0]
    assert theta_excess(dk, impl.device) <= 1  # the frequencies' premise (LIB_ACCURACY)
    i, j, t, delta = _witness(G)
    assert trig_excess(np.outer([t], rope_thetas(dk)), impl.device) <= 1
    q, k = np.eye(dk)[i], np.eye(dk)[j]
    s_t, b_t = score_and_bound(impl, q, t, k, t, G, _spec(dk))
    s_0, b_0 = score_and_bound(impl, q, 0, k, 0, G, _spec(dk))
    tol = b_t + b_0
    far = abs(delta) > WITNESS_MARGIN * tol  # the difference is far above rounding ...
    if assume_margin:
        assume(far)  # G far enough outside the commutant for this dtype
    else:
        assert far
    ctx = mp_context()
    diff = ctx.mpf(s_t) - ctx.mpf(s_0)  # exact at MP_DPS digits
    # ... and it is observed: then |diff| > (WITNESS_MARGIN - 1) tol, beyond the at most
    # tol by which equal exact scores could differ
    assert abs(diff - delta) <= tol - MP_REL * abs(delta)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(trained_head)
def test_trained_operator_scores_are_not_offset_only(impl, head):
    """Necessity, on the real trained G_LM (not in the commutant): scores at positions
    (0, 0) and (t, t) differ for a witness e_i, e_j where R_t^T G R_t - G is large."""
    _observed(impl, impl.round(trained_g_lm()[head]), assume_margin=False)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4, 6, 8]), st.data())
def test_non_commuting_operator_has_a_witness(impl, dk, data):
    """Necessity for drawn G: if G R_1 != R_1 G, the unit-vector witness shows a score that
    changes under a common shift m, n -> m + t, n + t."""
    _observed(impl, impl.round(data.draw(arrays((dk, dk), 2.0), label="G")), assume_margin=True)
