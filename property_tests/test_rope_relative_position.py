"""rope_relative_position: G commutes with all R_n iff scores depend only on n - m.

Scores are evaluated the way each implementation does it: the query and key rows are
rotated by the implementation's RoPE at their positions, then ``(q' G) k'^T / sqrt(dk)``
(the kernels form ``q' G`` with ``rotate_query``, as their SDPA path does).

Tolerance of one score (first order): a rotated row is off by ``eps_1`` times its largest
plane 1-norm per entry (see test_rope_group: cos/sin of the float64 angle rounded to the
compute dtype, the plane rotation, the rounding to the dtype), i.e. by
``sqrt(2 dk) eps_1 ||x||_2`` in 2-norm; the score is bilinear with
``|q G k^T| <= ||q|| ||G||_F ||k||``; the product itself adds ``gamma_{2dk+1}(u_c)`` and, in
bf16/fp16, rounding ``q' G`` to the dtype adds ``u_io``. Two scores are compared: twice.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pyverify.reference import rotation_matrix
from pyverify.testing.impls import ALL, UNIT_ROUNDOFF, gamma, impl_ids
from pyverify.testing.strategies import (
    arrays,
    commutant_matrix,
    project_commutant_np,
    trained_g_lm,
    trained_head,
)

pytestmark = pytest.mark.theorem("rope_relative_position")

U64 = UNIT_ROUNDOFF["float64"]


def score(impl, q, m, k, n, G) -> float:
    """``q R_m^T G R_n k^T / sqrt(dk)`` through the implementation."""
    qr = impl.rope(q[None], offset=m)
    kr = impl.rope(k[None], offset=n)
    return float(impl.scores(qr, kr, G)[0, 0])


def plane_norms(x: np.ndarray) -> np.ndarray:
    """Each entry replaced by the 2-norm of its RoPE plane: a rotated row is bounded by it."""
    p = np.hypot(x[0::2], x[1::2])
    return np.repeat(p, 2)


def score_tol(impl, q, k, G, max_pos: int) -> float:
    """Bound on |score(m, n) - score(m', n')| when the exact scores are equal.

    With qp, kp the plane norms of q and k (rotated rows satisfy |q'| <= qp entrywise) and
    scale = qp |G| kp^T / sqrt(dk): each rotated entry is off by <= sqrt 2 eps_1 qp (plane
    1-norm <= sqrt 2 plane 2-norm), moving the score by <= 2 sqrt 2 eps_1 scale (q and k);
    the product adds gamma_{2dk+1}(u_c) scale; bf16/fp16 round q' G to the dtype: u_io scale.
    """
    dk = q.shape[0]
    eps_1 = (
        2 * (impl.u_compute + 2 * U64 + 4 * U64 * max_pos) + gamma(2, impl.u_compute) + impl.u_io
    )
    low = impl.u_io if impl.dtype in ("bfloat16", "float16") else 0.0
    scale = float(plane_norms(q) @ np.abs(G) @ plane_norms(k)) / np.sqrt(dk)
    return 2 * scale * (2 * np.sqrt(2) * eps_1 + gamma(2 * dk + 1, impl.u_compute) + low)


positions = st.integers(0, 2048)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4, 6, 8, 16]), positions, positions, positions, st.data())
def test_commuting_operator_gives_offset_only_scores(impl, dk, m, n, t, data):
    """Sufficiency: G in the commutant -> score(m, n) = score(m + t, n + t)."""
    G = impl.round(data.draw(commutant_matrix(dk), label="G"))
    q = impl.round(data.draw(arrays((dk,), 2.0), label="q"))
    k = impl.round(data.draw(arrays((dk,), 2.0), label="k"))
    tol = score_tol(impl, q, k, G, max(m, n) + t)
    assert abs(score(impl, q, m, k, n, G) - score(impl, q, m + t, k, n + t, G)) <= tol


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(trained_head, positions, positions, positions, st.data())
def test_projected_trained_operator_gives_offset_only_scores(impl, head, m, n, t, data):
    """The commutant projection of the real trained G_LM (dk = 64) is offset-only."""
    G = impl.round(project_commutant_np(trained_g_lm()[head]))
    q = impl.round(data.draw(arrays((64,), 1.0), label="q"))
    k = impl.round(data.draw(arrays((64,), 1.0), label="k"))
    tol = score_tol(impl, q, k, G, max(m, n) + t)
    assert abs(score(impl, q, m, k, n, G) - score(impl, q, m + t, k, n + t, G)) <= tol


def _witness(impl, G: np.ndarray) -> tuple[int, int, int, float, float]:
    """(i, j, t, delta, tol): unit vectors e_i, e_j at positions (0, 0) and (t, t) give
    scores G_ij / sqrt(dk) and (R_t^T G R_t)_ij / sqrt(dk), differing by delta (float64);
    chosen over t <= 16 and (i, j) to maximise delta / tol for this implementation."""
    dk = G.shape[0]
    eye = np.eye(dk)
    best = (0, 0, 1, 0.0, 1.0)
    for t in range(1, 17):
        R = rotation_matrix(t, dk)
        D = (R.T @ G @ R - G) / np.sqrt(dk)
        # tolerance of the pair (e_i, e_j): score_tol's scale is the |G| mass of the 2 x 2
        # block of planes (i, j)
        blocks = np.abs(G).reshape(dk // 2, 2, dk // 2, 2).sum(axis=(1, 3))
        mass = np.repeat(np.repeat(blocks, 2, axis=0), 2, axis=1)
        ratio = np.abs(D) / np.maximum(mass, np.finfo(float).tiny)
        i, j = np.unravel_index(int(np.argmax(ratio)), D.shape)
        tol = score_tol(impl, eye[i], eye[j], G, t)
        if tol > 0 and abs(D[i, j]) / tol > abs(best[3]) / best[4]:
            best = (int(i), int(j), t, float(D[i, j]), tol)
    return best


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(trained_head)
def test_trained_operator_scores_are_not_offset_only(impl, head):
    """Necessity, on the real trained G_LM (not in the commutant): scores at positions
    (0, 0) and (t, t) differ for a witness e_i, e_j where R_t^T G R_t - G is large."""
    G = impl.round(trained_g_lm()[head])
    i, j, t, delta, tol = _witness(impl, G)
    q, k = np.eye(64)[i], np.eye(64)[j]
    assert abs(delta) > 4 * tol  # the difference is far above rounding ...
    diff = score(impl, q, t, k, t, G) - score(impl, q, 0, k, 0, G)
    assert abs(diff - delta) <= tol + 4 * U64 * np.max(np.abs(G))  # ... and it is observed


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4, 6, 8]), st.data())
def test_non_commuting_operator_has_a_witness(impl, dk, data):
    """Necessity for drawn G: if G R_1 != R_1 G, the unit-vector witness shows a score that
    changes under a common shift m, n -> m + t, n + t."""
    G = impl.round(data.draw(arrays((dk, dk), 2.0), label="G"))
    i, j, t, delta, tol = _witness(impl, G)
    q, k = np.eye(dk)[i], np.eye(dk)[j]
    assume(abs(delta) > 4 * tol)  # G far enough outside the commutant for this dtype
    diff = score(impl, q, t, k, t, G) - score(impl, q, 0, k, 0, G)
    assert abs(diff - delta) <= tol + 4 * U64 * np.max(np.abs(G))
    assert abs(diff) > 2 * tol
