"""fp_power_law: the computed potential ``A_P = A_LM ** P`` is within the proved bound.

Lean: ``Pldr.fp_power_law`` and ``fp_power_law_hpow`` (``lean/Pldr/Float/Stages.lean``):
a positive base off by ``rho a`` (``rho < 1``), a power routine of relative accuracy
``u_pow`` and absolute error ``eta_pow``:
``|pi^ - a^P| <= ((1 + u_pow)(1 - rho)^-|P| - 1) a^P + eta_pow``
(:func:`pyverify.fp.stages.fp_power_law`).

Through the protocol's ``plga(q, k, v, params, A=A)`` (step 5 of the head from a given
learner output ``A``, as ``test_fp_elementwise``): the base is the implementation's own
``A_LM``, compared with the exact ``A_LM`` of the spec (mpmath, 50 digits) on the exact
``A``: ``rho`` is that measured relative difference (the stage's input error), so a power
routine that loses precision cannot hide behind the stage before it. The exponents ``P``
are drawn representable in the compute dtype (the kernels hold ``P`` there: with ``P``
exact the statement's ``P`` is the one the routine gets). The routines: NumPy's float64
``**`` (glibc ``pow``) and torch's ``pow`` (Sleef ``u10``) in the compute dtype (float32
below float64): ``u_pow = LIB_ACCURACY[compute]`` (1 ulp, 2 declared), ``eta_pow`` twice
the compute dtype's underflow (as :func:`pyverify.fp.models.power_stage_bound`).

Non-vacuity: a power computed in bfloat16 on the same base is outside the bound
(``test_a_bfloat16_power_breaks_the_bound``).

Evaluation: the right-hand side in mpmath (50 digits), then rounded up: in float64
``(1 + u_pow) c - 1`` cancels (at ``u = 2^-53`` completely); where it does not
(``rho``, ``u_pow`` of float32) it is checked to agree with the float64
:func:`~pyverify.fp.stages.fp_power_law`. Oracle: ``A_LM ** P`` in mpmath on the exact
``A_LM``; compared in mpmath. Tolerance: the proved bound, nothing added.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from pyverify.fp.formulas import UNDERFLOW
from pyverify.fp.models import LIB_ACCURACY
from pyverify.fp.stages import fp_power_law
from pyverify.reference import PLGAParams
from pyverify.reference import mp_stages as mps
from pyverify.testing.fp import arith, mp_excess
from pyverify.testing.impls import ALL, impl_ids, kernels
from pyverify.testing.stage_bounds import f64, mp_context
from pyverify.testing.strategies import arrays, examples, head_params

pytestmark = pytest.mark.theorem("fp_power_law")

#: [fp_power_law] How far the float64 ``fp_power_law`` may be from its mpmath evaluation
#: where ``u_pow = 2^-22`` (float32): the coefficient ``(1 + u_pow) c - 1 >= u_pow`` is
#: formed from numbers near 1 with a few ``2^-53`` absolute error (``2^-28`` relative at
#: most); ``2^-24`` checks that both evaluate the same formula (the bound used is mpmath's).
F64_AGREEMENT = 2.0**-24


def _bound(ctx, ap, rho, P, u_pow: float, eta_pow: float) -> np.ndarray:
    """``fp_power_law``'s right-hand side in mpmath, each entry rounded up to float64."""
    out = np.empty((len(ap), len(ap[0])))
    for i, row in enumerate(ap):
        for j, a_p in enumerate(row):
            c = (1 - rho[i][j]) ** (-abs(ctx.mpf(float(P[i, j]))))
            b = ((1 + ctx.mpf(u_pow)) * c - 1) * a_p + ctx.mpf(eta_pow)
            f = float(b)
            out[i, j] = f if ctx.mpf(f) >= b else float(np.nextafter(f, np.inf))
    return out


def _excess(impl, params, A, power=None) -> float:
    """``max |pi^ - a^P| / bound`` of one case (> 1: violated); ``power(A_LM, P)``: a
    perturbed routine applied to the implementation's own ``A_LM`` instead of its ``A_P``."""
    dk = A.shape[0]
    q = np.ones((1, dk))
    res = impl.plga(q, q, np.ones((1, 1)), params, A=A)
    got = res.A_P if power is None else power(res.A_LM, params.P)
    ar = arith(impl)
    ctx = mp_context()
    lm = mps.metric_tensor(A, params.W, params.b, params.metric_eps, ctx)  # the exact base
    ap = mps.power_law(lm, params.P, ctx)
    rho = [[abs(ctx.mpf(float(res.A_LM[i, j])) - a) / a for j, a in enumerate(row)]
           for i, row in enumerate(lm)]  # fmt: skip
    if not all(r < 1 for row in rho for r in row):
        assume(False)  # outside the statement's premise rho < 1
    u_pow, eta_pow = LIB_ACCURACY[ar.compute], 2 * UNDERFLOW[ar.compute]
    bound = _bound(ctx, ap, rho, params.P, u_pow, eta_pow)
    if ar.compute == "float32":  # float64 evaluates the formula well enough here
        rho64 = f64(rho) * (1 + 2.0**-50)
        f = fp_power_law(f64(ap), rho64, params.P, u_pow, eta_pow)
        np.testing.assert_allclose(f, bound, rtol=F64_AGREEMENT)
    return mp_excess(got, ap, bound)


@pytest.mark.parametrize("impl", ALL, ids=impl_ids)
@examples(30)
@given(st.data())
def test_power_law_within_proved_bound(impl, data):
    dk = data.draw(st.sampled_from([2, 4, 6]), label="dk")
    params = data.draw(head_params(dk), label="params")
    params = dataclasses.replace(params, P=impl.hold(params.P))  # P as the kernels hold it
    A = data.draw(arrays((dk, dk), 2.0), label="A")
    assert _excess(impl, params, A) <= 1.0


@pytest.mark.parametrize("impl", kernels("float32"), ids=impl_ids)
def test_a_bfloat16_power_breaks_the_bound(impl):
    """``A_LM ** P`` evaluated in bfloat16 (a perturbed routine) on the kernel's own
    ``A_LM`` is outside the bound its float32 ``pow`` meets."""
    params = PLGAParams.random(dk=4, a_dff=2, num_reslayer=0, num_dense=0, seed=3)
    params = dataclasses.replace(params, P=impl.hold(params.P))
    A = np.random.default_rng(3).normal(0.0, 1.0, (4, 4))

    def bf16_pow(a, p):
        t = torch.pow(torch.tensor(a).to(torch.bfloat16), torch.tensor(p).to(torch.bfloat16))
        return t.to(torch.float64).numpy()

    assert _excess(impl, params, A) <= 1.0
    assert _excess(impl, params, A, bf16_pow) > 1.0  # measured: ~40000
