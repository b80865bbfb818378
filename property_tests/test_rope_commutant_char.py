"""rope_commutant_char: the RoPE commutant is block diagonal with blocks in span{I, J}: dim dk.

Exact checks (Fractions, sympy) for the 2 x 2 characterisation and the dimension count;
numerical checks on each implementation's own rotation matrices (the commutant of its
``R_n`` has dimension dk, spanned by the block span{I, J} matrices) and on the kernels'
commutant projection (idempotent, self-adjoint, rank dk, image in the commutant).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

import pyverify.kernels as kern
from pyverify.fp.exps import TRIG_ACCURACY
from pyverify.fp.formulas import EVAL_SLACK, UNDERFLOW, fp_dot_product
from pyverify.kernels.collapsed import DEFAULT_COMMUTANT_TOL
from pyverify.reference import rope_thetas
from pyverify.testing.exact import J, add, block_diag, eye, matmul, rot, scale
from pyverify.testing.impls import ALL, UNIT_ROUNDOFF, gamma, impl_ids, kernels
from pyverify.testing.rope_bounds import (
    PLANE,
    angle_error,
    entry_error,
    exact_thetas,
    plane_blocks,
    theta_excess,
    trig_excess,
)
from pyverify.testing.stage_bounds import mp_context
from pyverify.testing.strategies import (
    arrays,
    commutant_matrix,
    fraction_matrix,
    fractions,
    pythagorean,
    trained_g_lm,
    trained_head,
)

pytestmark = pytest.mark.theorem("rope_commutant_char")

#: ``[fp_ieee_rounding]`` float64's unit round-off: the residual's float64 arithmetic.
U64 = UNIT_ROUNDOFF["float64"]
#: ``[non-vacuity]`` The relative size of the off-commutant departure in the membership test.
DEPARTURE = 1e-2
#: ``[non-vacuity]`` That departure's relative residual (at least DEPARTURE / (1 + DEPARTURE))
#: must exceed ``in_rope_commutant``'s tolerance even after halving by this factor.
DEPARTURE_MARGIN = 0.5
#: ``[non-vacuity]`` The spec: the trained G_LM's residual is "well above 0.5 for most heads";
#: every head's residual must exceed TRAINED_FLOOR, and more than MOST of the heads' RESIDUAL.
TRAINED_FLOOR = 0.1
#: ``[non-vacuity]`` (see TRAINED_FLOOR) the spec's residual level.
RESIDUAL = 0.5
#: ``[non-vacuity]`` (see TRAINED_FLOOR) "most heads": more than this fraction.
MOST = 0.5


# --------------------------------------------------------------------------- exact, 2 x 2
@pytest.mark.implementation("reference", dtype="exact")
@given(
    pythagorean(nonzero_sin=True),
    st.one_of(
        fraction_matrix(2, 2),
        st.tuples(fractions(), fractions()).map(
            lambda xy: add(scale(xy[0], eye(2)), scale(xy[1], J))
        ),
    ),
)
def test_two_by_two_commutes_iff_in_span_of_i_and_j(cs, M):
    """Exact: for rot(c, s) with s != 0, M rot = rot M iff M = x I + y J."""
    c, s = cs
    R = rot(c, s)
    commutes = matmul(M, R) == matmul(R, M)
    in_span = M[0][0] == M[1][1] and M[0][1] == -M[1][0]
    assert commutes == in_span


@pytest.mark.implementation("reference", dtype="exact")
def test_two_by_two_commutant_symbolically():
    """Symbolic: the solutions of M rot(c, s) = rot(c, s) M with s != 0 are M = x I + y J."""
    m = sympy.symbols("m00 m01 m10 m11")
    c = sympy.Symbol("c", real=True)
    s = sympy.Symbol("s", real=True, nonzero=True)
    M = sympy.Matrix(2, 2, m)
    R = sympy.Matrix([[c, -s], [s, c]])
    sol = sympy.solve(list(M * R - R * M), m, dict=True)
    assert len(sol) == 1
    general = M.subs(sol[0])
    x, y = general[0, 0], general[1, 0]
    assert sympy.simplify(general - (x * sympy.eye(2) + y * sympy.Matrix([[0, -1], [1, 0]]))) == (
        sympy.zeros(2, 2)
    )
    assert len(general.free_symbols - {c, s}) == 2  # two free parameters: dimension 2


# --------------------------------------------------------------------------- exact, dk x dk
def _sylvester_null(Rp: sympy.Matrix, Rq: sympy.Matrix) -> list[sympy.Matrix]:
    """Exact basis of {X : X Rq = Rp X} (sympy nullspace of ``X -> X Rq - Rp X``): the
    commutant of ``R`` for ``Rp = Rq = R``; block (p, q) of the commutant of an exactly
    block-diagonal R (``(M R - R M)_pq = M_pq R_q - R_p M_pq``)."""
    n = Rp.shape[0]
    cols = []
    for i in range(n):
        for j in range(n):
            E = sympy.zeros(n, n)
            E[i, j] = 1
            cols.append(list(E * Rq - Rp * E))
    L = sympy.Matrix(cols).T  # column (i, j) = vec(E_ij Rq - Rp E_ij), row-major vec
    return [sympy.Matrix(n, n, list(v)) for v in L.nullspace()]


def _commutant_basis(R: sympy.Matrix) -> list[sympy.Matrix]:
    """Exact basis of {M : M R = R M}."""
    return _sylvester_null(R, R)


def _in_block_span(M: sympy.Matrix) -> bool:
    n = M.shape[0]
    for i in range(n):
        for j in range(n):
            if i // 2 != j // 2 and M[i, j] != 0:
                return False
    return all(
        M[2 * p, 2 * p] == M[2 * p + 1, 2 * p + 1] and M[2 * p, 2 * p + 1] == -M[2 * p + 1, 2 * p]
        for p in range(n // 2)
    )


@pytest.mark.implementation("reference", dtype="exact")
@given(st.lists(pythagorean(nonzero_sin=True), min_size=1, max_size=3, unique_by=lambda p: p[0]))
def test_block_commutant_has_dimension_dk_exactly(planes):
    """Exact: R block diagonal with rational rotations of pairwise distinct cosines (so no
    two planes share an eigenvalue e^{+-i phi}) and non-zero sines: the commutant has
    dimension dk and every element is block diagonal with blocks in span{I, J}."""
    dk = PLANE * len(planes)
    R = sympy.Matrix(block_diag([rot(c, s) for c, s in planes]))
    basis = _commutant_basis(R)
    assert len(basis) == dk
    assert all(_in_block_span(B) for B in basis)


@pytest.mark.implementation("reference", dtype="exact")
@given(pythagorean(nonzero_sin=True), st.integers(2, 3))
def test_repeated_plane_rotation_enlarges_the_commutant(cs, n_planes):
    """The hypothesis matters: equal plane rotations let off-diagonal blocks commute too."""
    c, s = cs
    R = sympy.Matrix(block_diag([rot(c, s)] * n_planes))
    assert len(_commutant_basis(R)) > PLANE * n_planes


# --------------------------------------------------------------------------- implementations
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@given(st.sampled_from([2, 4, 6, 8]), st.integers(1, 64))
def test_commutant_of_implementation_rotations_has_dimension_dk(impl, dk, n):
    """The implementation's R_n, exactly (its entries are rationals): block diagonal with
    blocks ``c I + s J``. The theorem's hypotheses come from the spec: where the exact
    ``cos(n theta_p)`` are pairwise apart and the exact ``sin(n theta_p)`` away from 0 by
    more than twice the entries' proved errors (:func:`entry_error` at the spec's exact
    frequencies, :func:`angle_error`), the implementation's ``c_p`` must be pairwise apart
    and its ``s_p`` away from 0 by more than those errors (so no implementation with
    planes at a wrong frequency passes). Then its exact commutant, computed block by block
    on its own entries, has dimension dk and lies in the block span{I, J}: no tolerance.
    That last step is the theorem at the implementation's rationals (off the unit circle,
    where the exact test above draws Pythagorean points): once the asserts before it
    hold, no implementation can make it fail."""
    assert theta_excess(dk, impl.device) <= 1  # the frequencies' premise (LIB_ACCURACY)
    assert trig_excess(np.outer([n], rope_thetas(dk)), impl.device) <= 1  # TRIG_ACCURACY
    ctx = mp_context()
    th = exact_thetas(dk)
    cos, sin = [ctx.cos(n * t) for t in th], [ctx.sin(n * t) for t in th]
    err = entry_error(angle_error(n, dk), impl.u_io, UNDERFLOW[impl.dtype]).tolist()
    planes = range(dk // PLANE)
    pairs = [(p, q) for p in planes for q in planes if p < q]
    # the spec's R_n satisfies the hypotheses with room for the entries' errors: a pair of
    # computed entries is at most e_p + e_q nearer than the exact pair
    assume(all(abs(sin[p]) > err[p] + err[p] for p in planes))
    assume(all(abs(cos[p] - cos[q]) > (err[p] + err[q]) + (err[p] + err[q]) for p, q in pairs))
    e = [Fraction(x) for x in err]  # each entry's proved error, exactly
    R = impl.rotation_matrix(n, dk)
    assert np.all(R[plane_blocks(dk) == 0] == 0)
    blocks = [R[PLANE * p : PLANE * p + PLANE, PLANE * p : PLANE * p + PLANE] for p in planes]
    assert all(B[0, 0] == B[1, 1] and B[0, 1] == -B[1, 0] for B in blocks)
    cs = [(Fraction(float(B[0, 0])), Fraction(float(B[1, 0]))) for B in blocks]
    # the hypotheses on the implementation's entries, beyond their proved errors
    assert all(abs(cs[p][1]) > e[p] for p in planes)
    assert all(abs(cs[p][0] - cs[q][0]) > e[p] + e[q] for p, q in pairs)
    exact = [rot(c, s) for c, s in cs]
    dim = 0
    for p in planes:
        for q in planes:
            null = _sylvester_null(sympy.Matrix(exact[p]), sympy.Matrix(exact[q]))
            dim += len(null)
            assert p == q or not null  # off-diagonal blocks vanish
            assert all(X[0, 0] == X[1, 1] and X[0, 1] == -X[1, 0] for X in null)  # span{I, J}
    assert dim == dk


def _residual_bound(P: np.ndarray) -> float:
    """``[fp_dot_product]`` ``[fp_elementwise]`` ``rope_commutant_residual`` of a matrix ``P``
    in the commutant (exactly: block span{I, J}, checked bitwise before), in float64.

    The projection part is exactly 0 (``P - proj(P) = 0`` bitwise). The commutator part,
    ``||P R - R P||_F / (2 ||P||_F)``: ``R = rope_matrix(n)`` has blocks ``c I + s J``
    exactly, which commute exactly with ``P``'s blocks, so each entry of the computed
    ``fl(P R) - fl(R P)`` is at most ``(1 + u)(gamma_2 (|P||R| + |R||P|))`` (two 2-term dot
    products, ``[fp_dot_product]``, then one rounded difference, ``[fp_ieee_rounding]``),
    ``|R| <= (1 + TRIG_ACCURACY)`` on the planes; the Frobenius norms: a sum of ``dk^2``
    squares (``[fp_dot_product]``, ``gamma_{dk^2}``) and a correctly rounded square root
    (``[fp_elementwise]``, ``r = u``), up for the numerator and down for ``||P||_F``; the
    quotient rounded (``u``); ``||P||_F`` clamped at the smallest normal, as the kernel does.
    """
    dk = P.shape[0]
    n = dk * dk
    absR = plane_blocks(dk) * (1 + TRIG_ACCURACY)
    A = np.abs(P)
    ent = (1 + U64) * (fp_dot_product(A @ absR, PLANE, U64) + fp_dot_product(absR @ A, PLANE, U64))
    num = (1 + U64) * np.sqrt((1 + gamma(n, U64)) * np.sum(ent * ent))
    den = (1 - U64) * np.sqrt((1 - gamma(n, U64)) * np.sum(P * P))
    den = max(den, np.finfo(np.float64).tiny)  # the residual's clamp (P = 0: num = 0)
    return float((1 + U64) * num / (2 * den) * EVAL_SLACK)  # the kernel's 2 ||P||_F


def _project_np(G: np.ndarray) -> np.ndarray:
    out = np.zeros_like(G)
    for p in range(G.shape[0] // 2):
        i = 2 * p
        x, y = (G[i, i] + G[i + 1, i + 1]) / 2, (G[i + 1, i] - G[i, i + 1]) / 2
        out[i : i + 2, i : i + 2] = [[x, -y], [y, x]]
    return out


@pytest.mark.parametrize("impl", kernels(), ids=impl_ids)
@given(st.sampled_from([2, 4, 6, 8, 16]), st.data())
def test_kernel_commutant_projection(impl, dk, data):
    """``project_to_rope_commutant``: idempotent (bitwise: (x + x)/2 = x, (y + y)/2 = y in any
    binary format), image in the commutant, rank dk, self-adjoint."""
    G = impl.t(data.draw(arrays((dk, dk), 4.0), label="G"))
    P = kern.project_to_rope_commutant(G)
    assert torch.equal(kern.project_to_rope_commutant(P), P)
    P64 = P.double().cpu().numpy()
    # image: block span{I, J}, hence commutes with every R_n (exactly in real arithmetic;
    # the residual is computed in float64: a few u64 relative)
    assert np.array_equal(_project_np(P64), P64)
    assert float(kern.rope_commutant_residual(P).max()) <= _residual_bound(P64)
    # rank dk: apply the projection to the basis E_ij (exact values 0, +-1/2, 1)
    basis = torch.eye(dk * dk, dtype=impl.tdtype, device=impl.device).view(dk * dk, dk, dk)
    images = kern.project_to_rope_commutant(basis).reshape(dk * dk, dk * dk).double().cpu()
    assert int(torch.linalg.matrix_rank(images)) == dk
    # self-adjoint (an orthogonal projection): <P A, B> = <A, P B>. Each side's projected
    # matrix is rounded to the dtype (u_io relative per entry); the inner products of dk^2
    # terms are then exact-ish in float64 (gamma_{dk^2}(u64)):
    #   |lhs - rhs| <= (u_io + gamma_{dk^2}(u64)) (sum |P A||B| + sum |A||P B|)
    B = impl.t(data.draw(arrays((dk, dk), 4.0), label="B"))
    PB = kern.project_to_rope_commutant(B)
    lhs = float((P.double() * B.double()).sum())
    rhs = float((G.double() * PB.double()).sum())
    mass = float((P.double().abs() * B.double().abs()).sum())
    mass += float((G.double().abs() * PB.double().abs()).sum())
    bound = (impl.u_io + gamma(dk * dk, U64)) * mass
    assert abs(lhs - rhs) <= bound


@pytest.mark.parametrize("impl", kernels(), ids=impl_ids)
@given(st.sampled_from([2, 4, 8]), st.data())
def test_kernel_commutant_membership(impl, dk, data):
    """Commutant elements are recognised; a relative departure of 1e-2 (>> the 1e-5 default
    tolerance, >> bf16 rounding) is not."""
    C = data.draw(commutant_matrix(dk), label="C")
    assume(np.linalg.norm(C) > 0.1)
    assert kern.in_rope_commutant(impl.t(C))
    # an off-commutant direction: G - proj(G) for a random G, scaled to 1e-2 ||C||
    N = data.draw(arrays((dk, dk), 1.0), label="N")
    off = N - _project_np(N)
    assume(np.linalg.norm(off) > 0.1)
    D = C + DEPARTURE * np.linalg.norm(C) * off / np.linalg.norm(off)
    assert DEPARTURE * DEPARTURE_MARGIN > DEFAULT_COMMUTANT_TOL
    assert not kern.in_rope_commutant(impl.t(D))


@pytest.mark.parametrize("impl", kernels("float64", "float32"), ids=impl_ids)
@given(trained_head)
def test_trained_operator_is_outside_its_projection_inside(impl, head):
    """The real trained G_LM is not in the commutant (spec: residual well above 0.5 for most
    heads); its projection is."""
    G = impl.t(trained_g_lm()[head])
    assert float(kern.rope_commutant_residual(G)) > TRAINED_FLOOR
    assert kern.in_rope_commutant(kern.project_to_rope_commutant(G))


@pytest.mark.parametrize("impl", kernels("float64"), ids=impl_ids)
def test_trained_operator_residual_above_half_for_most_heads(impl):
    res = kern.rope_commutant_residual(impl.t(trained_g_lm()))
    assert float((res > RESIDUAL).double().mean()) > MOST
