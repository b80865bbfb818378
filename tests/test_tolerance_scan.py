"""No tolerance constant without a theorem ID: the scan, on synthetic sources and the tree.

The scanner (:mod:`pyverify.testing.tolerance_scan`) must be able to fail: each tolerance
construct in a synthetic file is found, and the same constant inside an ID-carrying
formula (a docstring or ``#:`` comment naming a theorem ID) is not. On the repository the
findings are exactly the known residue (:data:`RESIDUE`, each file with its reason): a
new constant anywhere in ``pyverify/`` or ``property_tests/`` fails, and so does a removed
one that is still listed.
"""

from __future__ import annotations

import collections
from pathlib import Path

from pyverify.testing.tolerance_scan import NOT_SCANNED, RESIDUE, scan_paths, scan_source

ROOT = Path(__file__).resolve().parents[1]

BAD = """
TOL = 2e-6
import numpy as np
def check(err, u):
    assert err <= 1e-5
    assert err < 4 * u
    np.testing.assert_allclose(err, 0.0, atol=1e-9)
    if err > 3.5e-7:
        raise ValueError
def my_bound(u):
    return 8 * u
def test_output_within_bound(x):
    x = np.zeros(3.0)  # data in a test named "bound" is not tolerance code
    slack = 4
    K_SAFETY = 16
    tol = x
    tol *= 2
def check_flow(err, u_io, M, n):
    extra = 2 * u_io * M  # an error expression reaching the comparison below
    size = 3 * n  # no error term: data, not a tolerance
    assert err <= M + extra and size >= 0
"""

GOOD = '''
#: [fp_summation] slack of an evaluated formula
SLACK = 1.0 + 2.0**-40
def my_bound(u):
    """[fp_dot_product] gamma_n, n = 8 products."""
    return 8 * u / (1 - 8 * u)
def check(excess, err, n):
    assert excess <= 1.0
    assert err >= 0
    assert n >= 2  # an integer compared, not scaling a round-off
'''


def test_the_scanner_finds_each_construct():
    found = scan_source(BAD, "bad.py")
    got = sorted((f.line, f.literal) for f in found)
    assert got == [
        (2, "2e-06"), (5, "1e-05"), (6, "4"), (7, "1e-09"), (8, "3.5e-07"), (11, "8"),
        (14, "4"), (15, "16"), (17, "2"), (19, "2"),
    ]  # fmt: skip
    assert {f.context for f in found} >= {
        "assignment to TOL", "comparison in assert", "keyword atol=", "comparison in if",
        "function my_bound",
    }  # fmt: skip
    assert str(found[0]) == "bad.py:2: 2e-06 in assignment to TOL"


def test_id_carrying_formulas_and_trivial_literals_pass():
    assert scan_source(GOOD, "good.py") == []
    # a bound module: every literal counts, unless inside an ID-carrying formula
    assert [f.literal for f in scan_source("x = 0.5\n", "m.py", whole=True)] == ["0.5"]
    assert (
        scan_source('def f():\n    """[fp_softmax]"""\n    return 0.5\n', "m.py", whole=True) == []
    )
    # a non-vacuity threshold is tagged as such; untagged, the same constant is a finding
    tagged = "#: [non-vacuity] a mutant's error exceeds its bound 10 times\nMUTANT_FACTOR = 10.0\n"
    assert scan_source(tagged, "m.py") == []
    assert scan_source("MUTANT_FACTOR = 10.0\n", "m.py") != []
    # an unknown ID in brackets is no ID
    assert scan_source('def tol():\n    """[made_up]"""\n    return 0.5\n', "m.py") != []


def test_the_tree_holds_exactly_the_known_residue():
    found = scan_paths(ROOT)
    per_file = collections.Counter(f.path for f in found)
    known = {path: count for path, (count, _) in RESIDUE.items()}
    new = {p: n for p, n in per_file.items() if p not in known}
    assert not new, "tolerance constants without a theorem ID:\n" + "\n".join(
        str(f) for f in found if f.path in new
    )
    changed = {p: (per_file.get(p, 0), n) for p, n in known.items() if per_file.get(p, 0) != n}
    assert not changed, f"residue changed (found, listed): {changed}: update RESIDUE"
    others = collections.Counter(  # other engineers' packages: reported, not held
        next(p for p in NOT_SCANNED if f.path.startswith(p))
        for f in scan_paths(ROOT, folders=("pyverify",), skip=())
        if f.path.startswith(NOT_SCANNED)
    )
    print("not scanned (other engineers' packages):", dict(others))
