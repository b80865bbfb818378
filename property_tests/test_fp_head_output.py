"""fp_head_output: computed attention outputs are within the proved bound of softmax(E) V.

Lean: ``Pldr.fp_head_output`` (fused: numerator and denominator accumulated in any order,
``N^ * (1 / D^)``), ``Pldr.fp_head_output_normalized`` (weights first, then ``p V``) and
``Pldr.fp_head_output_of_bounds`` (``lean/Pldr/Float/Softmax.lean``, ``Head.lean``), fed
by ``fp_head_scores`` (the scores' error, the metric ``G`` held in the compute dtype as an
input bound) and ``fp_softmax_exp`` (the exponentials):
``|y^ - sum_j p_j v_j| <= (1 + w)((a + beta) mu + H_N sigma)/(1 - beta) + w mu + eta_y``.

Through the protocol's ``plga(q, k, v, params, G=G)`` (the G-cached head: the kernels run
torch's SDPA on ``Q G``, split ``hi + lo`` below float32) and the optional
``collapsed(q, k, v, G)`` (``Q G`` rounded once), each call pinned to the SDPA backend
its bound models (the fused kernel where the head sizes agree, else MATH: the
compensated ``[hi, lo]`` queries, ``dv != dk``); torch raises if it would run another.
Values near the smallest normal number put products and outputs below the normal range,
where the statement's ``eta`` terms are the bound: :func:`pyverify.fp.attention.attention_bound`
with ``mu`` the exact ``sum_j p_ij |v_jc|``. Oracle: mpmath at 50 digits on the same held
inputs and the unrounded ``G``, compared in mpmath.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyverify.conformance.subject import not_applicable
from pyverify.fp.attention import attention_bound, sdpa_backend
from pyverify.fp.models import scores_bound
from pyverify.reference import PLGAParams
from pyverify.reference import mp as rmp
from pyverify.testing.fp import MP_DPS, arith, attention_path, mp_excess, pinned_sdpa
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.strategies import arrays, examples, subnormal_floats, underflow_band

pytestmark = pytest.mark.theorem("fp_head_output")


def _case(data, impl, dk=None, dv=None):
    """Inputs; ``dv`` equal to ``dk`` (torch's fused kernel) or not (its MATH backend),
    values of ordinary size or near the dtype's smallest normal number (outputs and
    products below the normal range: the ``eta`` terms of the statement)."""
    dk = dk or data.draw(st.sampled_from([2, 4, 8]), label="dk")
    s = data.draw(st.integers(1, 8), label="S")
    dv = dv or data.draw(st.sampled_from([dk, 1, 3]), label="dv")
    q, k = (impl.round(data.draw(arrays((s, dk), 2.0), label=n)) for n in ("q", "k"))
    emin = underflow_band(impl.dtype, impl.dtype)[1] - 1  # the dtype's smallest normal
    tiny = data.draw(st.booleans(), label="tiny v")
    near = hnp.arrays(np.float64, (s, dv), elements=subnormal_floats((emin - 8, emin + 2)))
    v = impl.round(data.draw(near if tiny else arrays((s, dv), 3.0), label="v"))
    G = data.draw(arrays((dk, dk), 2.0), label="G")
    return q, k, v, G


def _exact(q, k, v, G):
    """The exact output and ``mu = sum_j p_ij |v_jc|`` (an upper bound in float64)."""
    dk = q.shape[1]
    params = PLGAParams.random(dk, 1, 0, 0, seed=0)
    r = rmp.plga_forward_full(q, k, v, params, causal=True, G=G, dps=MP_DPS)
    ctx = mpmath.MPContext()
    ctx.dps = MP_DPS
    w = [[ctx.mpf(r.weights[i, j]) for j in range(k.shape[0])] for i in range(q.shape[0])]
    mass = np.array([[float(sum(w[i][j] * abs(ctx.mpf(float(v[j, c]))) for j in range(k.shape[0])))
                      for c in range(v.shape[1])] for i in range(q.shape[0])])  # fmt: skip
    return r.out, mass * (1 + 2.0**-50)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(25)
@given(st.data())
def test_g_cached_output_within_proved_bound(impl, data):
    q, k, v, G = _case(data, impl)
    path = attention_path(impl)
    with pinned_sdpa(impl, path, q.shape[1], v.shape[1]):  # the backend the bound models
        got = impl.plga(q, k, v, PLGAParams.random(q.shape[1], 1, 0, 0, seed=0), G=G).out
    ar = arith(impl)
    held = G if ar.impl == "reference" else impl.hold(G)
    exact, mass = _exact(q, k, v, G)
    bound = attention_bound(ar, q, k, v, held, np.abs(held - G), causal=True, path=path, mass=mass)
    assert mp_excess(got, exact, bound) <= 1.0


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(15)
@given(st.data())
def test_collapsed_output_within_proved_bound(impl, data):
    if not impl.offers("collapsed"):
        not_applicable("the optional method collapsed")
    q, k, v, G = _case(data, impl)
    path = attention_path(impl, collapsed=True)
    with pinned_sdpa(impl, path, q.shape[1], v.shape[1]):
        got = impl.collapsed(q, k, v, G)
    ar = arith(impl)
    held = impl.hold(G)
    exact, mass = _exact(q, k, v, G)
    bound = attention_bound(ar, q, k, v, held, np.abs(held - G), causal=True, path=path, mass=mass)
    assert mp_excess(got, exact, bound) <= 1.0


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(15)
@given(st.data())
def test_collapsed_output_within_hull_bound_where_scores_are_far_off(impl, data):
    """``Pldr.fp_head_output_hull`` (``lean/Pldr/Float/Hull.lean``): the fused kernel's
    bound with no premise on the scores. ``G`` is scaled until some row's score error
    bound exceeds 1 (the premise ``fp_head_output`` needs fails there, as on the bfloat16
    trained-metric cases of the cross-check); those rows are held to the values' range
    plus the kernel's own roundings, the rest to the smaller of the two bounds. The
    oracle is mpmath on the same held inputs; the scaling is a power of two, exact."""
    if not impl.offers("collapsed"):
        not_applicable("the optional method collapsed")
    ar = arith(impl)
    path = attention_path(impl, collapsed=True)
    dk = data.draw(st.sampled_from([2, 4, 8]), label="dk")
    if ar.impl == "reference" or sdpa_backend(path, dk, dk) != "flash":
        not_applicable("the hull bound: torch's fused SDPA kernel only")
    q, k, v, G = _case(data, impl, dk=dk, dv=dk)
    d0 = scores_bound(ar, q, k, impl.hold(G), None, path).max()
    G = G * 2.0 ** max(0, math.ceil(math.log2(2.0 / max(d0, 1e-300))))  # some row's > 1
    # scores put off (not all-zero q or k), Q G inside the format's range (float16)
    assume(np.abs(q @ G).max() < torch.finfo(getattr(torch, impl.dtype)).max / 4)
    held = impl.hold(G)
    delta = scores_bound(ar, q, k, held, np.abs(held - G), path)
    assume(delta.max() >= 1)
    with pinned_sdpa(impl, path, dk, dk):
        got = impl.collapsed(q, k, v, G)
    exact, mass = _exact(q, k, v, G)
    bound = attention_bound(ar, q, k, v, held, np.abs(held - G), causal=True, path=path, mass=mass)
    assert np.all(np.isfinite(bound))
    assert mp_excess(got, exact, bound) <= 1.0
