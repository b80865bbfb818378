"""fp_elementwise: the metric pipeline's entrywise stages on a perturbed input.

Lean: ``Pldr.fp_elementwise`` (``lean/Pldr/Float/Head.lean``): an entrywise stage ``f``
evaluated by a routine of relative error ``r`` (absolute ``eta_f``) on a computed input
off by ``d``, ``f`` moving by at most ``L |x^ - x|`` on the segment:
``|f^(x^) - f(x)| <= (1 + r) L d + r |f(x)| + eta_f``; with ``fp_mixed_precision`` and
``fp_mixed_precision_propagated`` for the linear stages around them.

Through the protocol's ``plga(q, k, v, params, A=A)``: from a metric-learner output ``A``
(held in the compute dtype: the kernels' ``d = |fl(A) - A|``) the implementation computes
``A_LM = iSwiGLU(W A + b) + eps`` (``L = M (2 + M)``, ``M >= |z| + d``: the derivative of
``z^2 sigma(z)`` is at most ``|z| (2 + |z|)``), ``A_P = A_LM ** P`` (``L = |P| t^(P-1)`` at
the segment's worse end) and ``G = a A_P + b_a``, stage by stage
(:mod:`pyverify.fp.models`). Each stage is compared with the exact stage (mpmath, 50
digits) applied to the *exact* previous stage: the implementation's own input error is
the measured difference, so a stage that loses precision cannot hide behind an earlier
one.
"""

from __future__ import annotations

import dataclasses

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyverify.fp.models import (
    REFERENCE_ARITHMETIC,
    linear_stage_bound,
    metric_tensor_bound,
    power_stage_bound,
)
from pyverify.reference import mp_stages as mps
from pyverify.testing.fp import MP_DPS, arith, mp_excess, oracle_rounding
from pyverify.testing.impls import ALL, impl_ids
from pyverify.testing.stage_bounds import f64
from pyverify.testing.strategies import arrays, examples, head_params

pytestmark = pytest.mark.theorem("fp_elementwise")


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(20)
@given(st.data())
def test_metric_stages_within_proved_bounds(impl, data):
    dk = data.draw(st.sampled_from([2, 4, 6]), label="dk")
    params = data.draw(head_params(dk), label="params")
    params = dataclasses.replace(params, metric_eps=1e-9)
    A = data.draw(arrays((dk, dk), 2.0), label="A")
    q = np.ones((1, dk))
    res = impl.plga(q, q, np.ones((1, 1)), params, A=A)
    ar = arith(impl)
    ctx = mpmath.MPContext()
    ctx.dps = MP_DPS
    A_held = A if ar.u_hold == 0 else impl.hold(A)
    # A_LM from the exact A: W A + b (held weights, the held A), then iSwiGLU + eps
    lm_mp = mps.metric_tensor(A, params.W, params.b, params.metric_eps, ctx)
    z = np.abs(params.W @ A + params.b) + linear_stage_bound(
        REFERENCE_ARITHMETIC, params.W, A, params.b
    )  # an upper bound of |W A + b| (exact), from its float64 evaluation
    dz = linear_stage_bound(ar, params.W, A_held, params.b, dX=np.abs(A_held - A))
    b_lm = metric_tensor_bound(ar, z, dz, params.metric_eps)
    assert mp_excess(res.A_LM, lm_mp, b_lm) <= 1.0
    # A_P from the exact A_LM: the implementation's A_LM is its input, off by the difference
    x = f64(lm_mp)
    dx = np.abs(res.A_LM - x) + oracle_rounding(x)
    P_held = params.P if ar.u_hold == 0 else impl.hold(params.P)
    ap_mp = mps.power_law(lm_mp, params.P, ctx)
    b_ap = power_stage_bound(ar, x, dx, params.P, P_held)
    assert mp_excess(res.A_P, ap_mp, b_ap) <= 1.0


@pytest.mark.theorem("fp_mixed_precision")
@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(15)
@given(st.data())
def test_energy_stage_within_proved_bound(impl, data):
    """``G = a A_P + b_a`` from the implementation's own ``A_P``, against the exact stage
    on the exact ``A_P``: ``fp_mixed_precision`` plus the propagated ``|a| dA_P``."""
    dk = data.draw(st.sampled_from([2, 4, 6]), label="dk")
    params = data.draw(head_params(dk), label="params")
    A = data.draw(arrays((dk, dk), 2.0), label="A")
    q = np.ones((1, dk))
    res = impl.plga(q, q, np.ones((1, 1)), params, A=A)
    ctx = mpmath.MPContext()
    ctx.dps = MP_DPS
    lm_mp = mps.metric_tensor(A, params.W, params.b, params.metric_eps, ctx)
    ap_mp = mps.power_law(lm_mp, params.P, ctx)
    g_mp = mps.energy_curvature(ap_mp, params.a, params.b_a, ctx)
    x = f64(ap_mp)
    dx = np.abs(res.A_P - x) + oracle_rounding(x)
    bound = linear_stage_bound(arith(impl), params.a, res.A_P, params.b_a, dX=dx)
    assert mp_excess(res.G, g_mp, bound) <= 1.0
