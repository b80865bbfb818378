"""Every bad input raises TypeError/ValueError naming the argument; never a silent NaN."""

from __future__ import annotations

import numpy as np
import pytest

from pyverify.reference import PLGAParams, mp, plga_forward
from pyverify.reference.validation import as_float_array, check_positive_int

RNG = np.random.default_rng(0)
Q = RNG.normal(size=(4, 4))
K = RNG.normal(size=(4, 4))
V = RNG.normal(size=(4, 3))
P = PLGAParams.random(dk=4, a_dff=6, num_reslayer=1, num_dense=1, seed=0)

BAD = [
    # (kwargs overriding q, k, v, params, ...), exception, regex in message
    ({"q": Q[0]}, ValueError, r"q must have shape \(S, dk\)"),
    ({"q": Q.astype(complex)}, TypeError, "q must be a real floating array.*complex"),
    ({"q": Q > 0}, TypeError, "q .*bool"),
    ({"q": Q.astype(object)}, TypeError, "q .*object"),
    ({"q": np.array([["a"] * 4] * 4)}, TypeError, "q .*dtype"),
    ({"q": np.where(np.eye(4) > 0, np.nan, Q)}, ValueError, "q must be finite"),
    ({"k": K[:, :3]}, ValueError, r"k must have shape \(S, 4\)"),
    ({"k": K[:3]}, ValueError, "k must have at least as many rows"),
    ({"k": np.vstack([K, K])}, ValueError, "k must have shape"),
    ({"k": np.where(np.eye(4) > 0, np.inf, K)}, ValueError, "k must be finite"),
    ({"v": V[:3]}, ValueError, r"v must have shape \(4, dv\)"),
    ({"v": V[:, 0]}, ValueError, "v must have shape"),
    ({"v": V * np.inf}, ValueError, "v must be finite"),
    ({"params": "p"}, TypeError, "params must be a PLGAParams"),
    ({"G": np.eye(3)}, ValueError, r"G must have shape \(4, 4\)"),
    ({"G": np.eye(4) * np.nan}, ValueError, "G must be finite"),
    ({"G": np.eye(4), "A": np.eye(4)}, ValueError, "at most one of G"),
    ({"mask": np.ones((4, 4))}, TypeError, "mask must be a bool array"),
    ({"mask": np.ones((4, 3), dtype=bool)}, ValueError, r"mask must have shape \(4, 4\)"),
    ({"mask": ~np.eye(4, dtype=bool)}, ValueError, r"mask.*allows no key.*\[0\]"),
    ({"causal": False, "mask": np.zeros((4, 4), dtype=bool)}, ValueError, "allows no key"),
    ({"causal": "yes"}, TypeError, "causal must be a bool"),
    ({"A": np.ones((4, 5))}, ValueError, r"A must have shape \(4, 4\)"),
]


@pytest.mark.parametrize(("over", "exc", "msg"), BAD)
def test_float64_head_rejects(over, exc, msg):
    args = {"q": Q, "k": K, "v": V, "params": P} | over
    with pytest.raises(exc, match=msg):
        plga_forward(**args)


@pytest.mark.parametrize(("over", "exc", "msg"), BAD)
def test_mp_head_rejects_alike(over, exc, msg):
    args = {"q": Q, "k": K, "v": V, "params": P} | over
    with pytest.raises(exc):
        mp.plga_forward(**args, dps=20)


def test_bad_params_fields_are_named():
    from dataclasses import replace

    with pytest.raises(ValueError, match=r"params.P must have shape \(4, 4\)"):
        plga_forward(Q, K, V, replace(P, P=np.ones((4, 3))))
    with pytest.raises(ValueError, match=r"params\.b_a must be finite"):
        plga_forward(Q, K, V, replace(P, b_a=np.full((4, 4), np.nan)))
    with pytest.raises(ValueError, match=r"params\.ln0_gamma"):
        plga_forward(Q, K, V, replace(P, ln0_gamma=np.ones(5)))
    with pytest.raises(ValueError, match=r"params.reslayers\[0\].dense\[0\].W3"):
        bad = replace(P.reslayers[0].dense[0], W3=np.ones((6, 5)))
        unit = replace(P.reslayers[0], dense=[bad])
        plga_forward(Q, K, V, replace(P, reslayers=[unit]))
    with pytest.raises(ValueError, match=r"params\.ln_eps"):
        plga_forward(Q, K, V, replace(P, ln_eps=-1.0))
    with pytest.raises(ValueError, match=r"params\.W"):
        plga_forward(Q[:, :3], K[:, :3], V, P)  # dk mismatch with the params


def test_mp_specific_arguments():
    with pytest.raises(ValueError, match="dps"):
        mp.plga_forward(Q, K, V, P, dps=5)
    with pytest.raises(TypeError, match="q must hold real numbers"):
        mp.plga_forward([[1j, 0, 0, 0]] * 4, K, V, P)
    with pytest.raises(ValueError, match="q must be rectangular"):
        mp.plga_forward([[1, 2, 3, 4], [1, 2]], K, V, P)
    with pytest.raises(ValueError, match="q must be finite"):
        mp.plga_forward([["inf", 0, 0, 0]] * 4, K, V, P)


def test_helpers():
    assert check_positive_int(4, "dk", even=True) == 4
    with pytest.raises(ValueError, match="dk must be even"):
        check_positive_int(5, "dk", even=True)
    with pytest.raises(TypeError, match="dk must be an int"):
        check_positive_int(4.0, "dk")
    with pytest.raises(TypeError, match="dk must be an int"):
        check_positive_int(True, "dk")
    with pytest.raises(ValueError, match="dk must be positive"):
        check_positive_int(0, "dk")
    with pytest.raises(TypeError, match="x must be a real numeric array"):
        as_float_array([[1, 2], [3]], "x")
    assert as_float_array(np.float32([1.5]), "x").dtype == np.float64
