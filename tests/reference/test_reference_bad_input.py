# ruff: noqa: E501 (one case a line: the table is the contract)
"""Bad input to the reference's public API: one case a line, the contract as a table.

Each case raises ``TypeError`` (wrong kind of value) or ``ValueError`` (wrong shape, range
or a non-finite value) with a one-line message naming the argument or parameter field.
(The head's array arguments are tabulated in ``test_reference_validation.py``.)
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pyverify.reference import PLGAParams, ResUnit, mp, plga_forward
from pyverify.testing.bad_input import one_line_error_test

P = PLGAParams.random(dk=4, a_dff=6, num_reslayer=1, num_dense=1, seed=0)
_rng = np.random.default_rng(0)
Q, K, V = _rng.normal(size=(3, 4)), _rng.normal(size=(3, 4)), _rng.normal(size=(3, 2))
U0 = P.reslayers[0]


def params(**fields) -> PLGAParams:
    return dataclasses.replace(P, **fields)


def unit(**fields) -> list[ResUnit]:
    return [dataclasses.replace(U0, **fields)]


CASES = [
    # (case, call, exception, message regex)
    ("random p_range (nan, 1)", lambda: PLGAParams.random(4, 6, 1, 1, p_range=(float("nan"), 1)), ValueError, r"^p_range must be finite"),
    ("random p_range (0, inf)", lambda: PLGAParams.random(4, 6, 1, 1, p_range=(0, float("inf"))), ValueError, r"^p_range must be finite"),
    ("random p_range (2, 1)", lambda: PLGAParams.random(4, 6, 1, 1, p_range=(2.0, 1.0)), ValueError, r"^p_range must have low <= high"),
    ("random p_range 'ab'", lambda: PLGAParams.random(4, 6, 1, 1, p_range="ab"), TypeError, r"^p_range must be a pair"),
    ("PLGAParams(dense=None)", lambda: PLGAParams(dense=None), TypeError, r"unexpected keyword argument 'dense'"),
    ("ResUnit dense=None", lambda: plga_forward(Q, K, V, params(reslayers=unit(dense=None))), TypeError, r"^params\.reslayers\[0\]\.dense must be a list of SwiGLUBlock; got NoneType"),
    ("ResUnit dense=3", lambda: plga_forward(Q, K, V, params(reslayers=unit(dense=3))), TypeError, r"^params\.reslayers\[0\]\.dense must be a list"),
    ("SwiGLUBlock W1=None", lambda: plga_forward(Q, K, V, params(reslayers=unit(dense=[dataclasses.replace(U0.dense[0], W1=None)]))), ValueError, r"^params\.reslayers\[0\]\.dense\[0\]\.W1"),
    ("PLGAParams W=None", lambda: plga_forward(Q, K, V, params(W=None)), ValueError, r"^params\.W must have shape"),
    ("PLGAParams P='x'", lambda: plga_forward(Q, K, V, params(P=np.full((4, 4), "x"))), TypeError, r"^params\.P must be a real floating array"),
    ("PLGAParams reslayers=None", lambda: plga_forward(Q, K, V, params(reslayers=None)), TypeError, r"^params\.reslayers must be a list"),
    ("PLGAParams ln_eps='x'", lambda: plga_forward(Q, K, V, params(ln_eps="x")), TypeError, r"^params\.ln_eps must be a float"),
    ("PLGAParams metric_eps=nan", lambda: plga_forward(Q, K, V, params(metric_eps=float("nan"))), ValueError, r"^params\.metric_eps must be finite and > 0"),
    ("plga_forward causal='False'", lambda: plga_forward(Q, K, V, P, causal="False"), TypeError, r"^causal must be a bool; got str"),
    ("mp causal='False'", lambda: mp.plga_forward(Q, K, V, P, causal="False", dps=20), TypeError, r"^causal must be a bool; got str"),
    ("mp a row that is 2-D", lambda: mp.plga_forward([Q[:1]] * 3, K, V, P, dps=20), ValueError, r"^q must be 2-D \(a sequence of rows\); row 0 is a ndarray of shape \(1, 4\)"),
    ("mp a row that is a number", lambda: mp.plga_forward(list(Q[0]), K, V, P, dps=20), ValueError, r"^q must be 2-D .*row 0 is a float64"),
]  # fmt: skip


test_bad_input_raises_a_typed_one_line_error = one_line_error_test(CASES)


def test_mp_accepts_a_list_of_numpy_rows():
    """A list of 1-D NumPy rows is a 2-D input: the same result as the array itself."""
    rows = mp.plga_forward(list(Q), list(K), list(V), P, dps=20)[0]
    arr = mp.plga_forward(Q, K, V, P, dps=20)[0]
    assert mp.to_numpy(rows).tolist() == mp.to_numpy(arr).tolist()
