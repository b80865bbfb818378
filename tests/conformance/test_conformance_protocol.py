"""The protocol, the loader's one-line user errors, the verdict rule, and the shipped plugins."""

from __future__ import annotations

import dataclasses
import sys
import textwrap

import numpy as np
import pytest
import torch

from pyverify.cli import main
from pyverify.conformance.loading import ImplementationError, load
from pyverify.conformance.run import CheckRun, parse_ids
from pyverify.conformance.shipped import KernelsPLGA, ReferencePLGA
from pyverify.conformance.verdict import verdict
from pyverify.errors import InputValueError
from pyverify.testing import impls
from pyverify.theorems import CHECK_IDS

GOOD = """
    class Impl:
        name = "tiny"
        capabilities = ("rope",)
        devices = ("cpu",)
        dtypes = ("float64",)
        def rope(self, x, *, offset=0):
            return x
        def rotation_matrix(self, n, dk):
            import numpy
            return numpy.eye(dk)
    def factory(device="cpu", dtype="float64"):
        return Impl()
"""


def _module(tmp_path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body), "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    return name


@pytest.mark.parametrize(
    ("body", "spec_tail", "needle"),
    [
        (None, "factory", "cannot import module"),
        (GOOD, "nope", "has no callable 'nope'"),
        ("def factory(**kw):\n    raise RuntimeError('no GPU here')\n", "factory",
         "factory() raised RuntimeError: no GPU here"),
        (GOOD.replace("        def rope(self, x, *, offset=0):\n            return x\n", ""),
         "factory", "declares capability 'rope' but has no method rope"),
        (GOOD.replace('"tiny"', '"kernels"'), "factory", "reserved"),
        (GOOD.replace('("rope",)', '("rope", "flux")'), "factory", "unknown capability 'flux'"),
        (GOOD.replace('dtypes = ("float64",)', "dtypes = None"), "factory", "must declare dtypes"),
    ],
    ids=["no-module", "no-factory", "factory-raises", "missing-method", "reserved", "unknown-cap",
         "no-dtypes"],
)  # fmt: skip
def test_user_errors_are_one_line_naming_module_and_method(
    tmp_path, monkeypatch, capsys, body, spec_tail, needle
):
    name = f"conf_user_{abs(hash((body, spec_tail))) % 10**8}"
    if body is not None:
        _module(tmp_path, monkeypatch, name, body)
    code = main(["check", "--impl", f"{name}:{spec_tail}", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and needle in err[0] and name in err[0], err


def test_spec_dtype_and_ids_errors(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "conf_user_dtype", GOOD)
    with pytest.raises(ImplementationError, match="dtype 'float32' not declared"):
        load(f"{name}:factory", dtypes=["float32"])
    with pytest.raises(ImplementationError, match="module:factory"):
        load("no_colon_here")
    with pytest.raises(InputValueError, match="unknown theorem ID 'rope_grp'"):
        parse_ids(["rope_group,rope_grp"])
    assert parse_ids(["softmax_shift", "rope_group"]) == ("rope_group", "softmax_shift")
    with pytest.raises(InputValueError, match="own measurements"):
        parse_ids(["order_parameter_rms_bound"])  # a suite ID: no implementation to check


def test_a_plugin_without_a_group_is_not_applicable_there(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "conf_user_na", GOOD)
    (sub,) = load(f"{name}:factory")
    assert str(sub) == "tiny-cpu-float64" and sub.offers("rope") and not sub.offers("plga")
    with pytest.raises(pytest.skip.Exception, match="not applicable: capability 'head'"):
        sub.plga(np.eye(2), np.eye(2), np.eye(2), None)
    np.testing.assert_array_equal(sub.rot2(0.5), np.eye(2))  # default: rotation_matrix(a, 2)


def _run(tests) -> CheckRun:
    return CheckRun("m:f", "x", ("x-cpu-float64",), ("head",), ("rope_group", "softmax_shift",
                    "density_psd", "dag_floor"), True, tests, None, 1.0, 0, "")  # fmt: skip


def _t(nodeid, ids, outcome, reason="", example=""):
    return {"nodeid": nodeid, "theorems": ids, "implementation": "x", "outcome": outcome,
            "reason": reason, "example": example}  # fmt: skip


def test_verdict_rule():
    v = verdict(_run([
        _t("a", ["rope_group"], "passed"),
        _t("b", ["rope_group"], "failed", example="long example text"),
        _t("c", ["rope_group"], "failed", example="short"),
        _t("d", ["softmax_shift"], "skipped", "not applicable: capability 'head' not offered"),
        _t("e", ["density_psd"], "skipped", "some other reason"),
    ]))  # fmt: skip
    th = v["theorems"]
    assert th["rope_group"]["verdict"] == "failed"
    assert th["rope_group"]["smallest_failing_example"] == {"test": "c", "example": "short"}
    assert th["softmax_shift"]["verdict"] == "not applicable"
    assert th["softmax_shift"]["not_applicable"] == ["capability 'head' not offered"]
    assert th["density_psd"]["verdict"] == "not run"  # a plain skip is never a pass
    assert th["dag_floor"]["verdict"] == "not run" and not v["ok"]
    ok = verdict(_run([_t("a", ["rope_group"], "passed")]))
    assert ok["ok"] and ok["theorems"]["rope_group"]["verdict"] == "passed"
    broken_suite = verdict(dataclasses.replace(_run([]), pytest_exit=4))
    assert not broken_suite["ok"] and broken_suite["suite"] == "pytest exited 4"
    nothing = verdict(dataclasses.replace(_run([]), pytest_exit=5))  # nothing collected
    assert not nothing["ok"] and nothing["suite"] == "pytest exited 5"
    only_na = verdict(_run([_t("d", ["softmax_shift"], "skipped", "not applicable: no 'head'")]))
    assert not only_na["ok"] and only_na["suite"] == "no test checked a theorem ID"
    stray = verdict(_run([_t("a", ["rope_group"], "passed"), _t("z", [], "failed")]))
    assert not stray["ok"] and stray["suite"] == "a failing test names no theorem ID"


def test_shipped_implementations_are_plugins_of_the_same_protocol():
    """No second code path: the tests' subjects wrap the shipped plugins, which the public
    loader accepts like any user implementation."""
    assert isinstance(impls.REFERENCE.target, ReferencePLGA)
    assert all(isinstance(s.target, KernelsPLGA) for s in impls.ALL if s.name == "kernels")
    (ref,) = load("pyverify.conformance.shipped:reference", allow_reserved=True)
    ker = load("pyverify.conformance.shipped:kernels", dtypes=["float32"], allow_reserved=True)
    assert str(ref) == "reference-cpu-float64" and {s.dtype for s in ker} == {"float32"}
    # the compute dtype is read from each configuration (float64 computes in float64)
    k64 = load("pyverify.conformance.shipped:kernels", dtypes=["float64"], allow_reserved=True)
    assert k64[0].u_compute == 2.0**-53 and ker[0].u_compute == 2.0**-24
    q = np.arange(8.0).reshape(4, 2) / 7
    np.testing.assert_allclose(ker[0].rope(q), ref.rope(q), rtol=0, atol=1e-6)
    with pytest.raises(ImplementationError, match="reserved"):
        load("pyverify.conformance.shipped:reference")


def test_empty_ids_is_a_user_error(capsys):
    for text in ([""], [" , "], ["", ""]):
        with pytest.raises(InputValueError, match="--ids: no theorem ID given"):
            parse_ids(text)
    assert parse_ids(None) == CHECK_IDS
    code = main(["check", "--impl", "no_such_module:factory", "--ids", ""])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--ids" in err[0], err


def test_help_lists_exit_codes_and_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for needle in ("exit status:", "0 no theorem ID failed", "1 a theorem ID failed",
                   "2 a user error", "default: reports/conformance", "--junit-xml FILE",
                   "default 30"):  # fmt: skip
        assert needle in text, needle


class _Boundary:
    """Results of every kind a user might return, chosen per test by ``self.out``."""

    name = "edge"
    capabilities = ("head",)
    devices = ("cpu",)
    dtypes = ("float64",)

    def __init__(self, out, E=None):
        self.out, self.E = out, E

    def plga(self, q, k, v, params, *, G=None, A=None, causal=True):
        return {"out": self.out, "E": self.E}

    def scores(self, q, k, G):
        return self.out

    def softmax(self, E, *, causal=False):
        return self.out


def _subject(out, E=None):
    from pyverify.conformance.subject import Subject

    return Subject("edge", "cpu", "float64", _Boundary(out, E), frozenset({"head"}))


@pytest.mark.parametrize(
    ("out", "needle"),
    [
        (np.ones((2, 1)) + 7j, "plga(...).out has dtype complex128; the protocol needs real"),
        (np.ones((2, 1), dtype=np.int64), "plga(...).out has dtype int64"),
        (np.ones((2, 1), dtype=bool), "plga(...).out has dtype bool"),
        (np.ones((1, 2)), "plga(...).out has shape (1, 2); the protocol declares (2, 1)"),
        (np.array([[1.0], [np.nan]]), "plga(...).out has 1 non-finite entries (1 NaN) of 2"),
        (np.array([[np.inf], [1.0]]), "plga(...).out has 1 non-finite entries (0 NaN) of 2"),
        (None, "plga(...).out is None"),
        ("text", "plga(...).out has dtype <U4"),
        (torch.ones(2, 1, dtype=torch.complex64), "plga(...).out has dtype torch.complex64"),
        (torch.ones(2, 1, dtype=torch.int32), "plga(...).out has dtype torch.int32"),
    ],
    ids=["complex", "int", "bool", "shape", "nan", "inf", "none", "str", "torch-complex",
         "torch-int"],
)  # fmt: skip
def test_results_are_checked_at_the_protocol_boundary(out, needle):
    from pyverify.conformance.subject import ProtocolViolation

    sub = _subject(out)
    q = np.zeros((2, 2))
    with pytest.raises(ProtocolViolation) as err:
        sub.plga(q, q, np.zeros((2, 1)), None)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("edge-cpu-float64: ") and needle in msg, msg


def test_the_boundary_accepts_what_the_protocol_allows():
    q = np.zeros((2, 2))
    # lists of floats, float16/bfloat16 tensors, -inf in the scores at masked places
    for out in (
        [[0.5], [1.0]],
        np.ones((2, 1), np.float16),
        torch.ones(2, 1, dtype=torch.bfloat16),
    ):
        r = _subject(out, E=np.array([[0.0, -np.inf], [1.0, 2.0]])).plga(
            q, q, np.zeros((2, 1)), None
        )
        assert r.out.dtype == np.float64 and r.out.shape == (2, 1) and r.A is None
    # but +inf or NaN in the scores is not masking
    from pyverify.conformance.subject import ProtocolViolation

    with pytest.raises(ProtocolViolation, match=r"plga\(\.\.\.\)\.E has 1 non-finite"):
        _subject(np.ones((2, 1)), E=np.array([[0.0, np.inf], [1.0, 2.0]])).plga(
            q, q, np.zeros((2, 1)), None
        )
    with pytest.raises(ProtocolViolation, match=r"softmax\(\.\.\.\) has shape \(3, 2\)"):
        _subject(np.ones((3, 2))).softmax(np.zeros((2, 3)))


def test_junit_xml_holds_one_case_per_id_and_the_failures(tmp_path):
    import xml.etree.ElementTree as ET

    from pyverify.conformance.verdict import write_junit

    v = verdict(_run([
        _t("a", ["rope_group"], "failed", example="at: x.py:1: 1 <= 0\nfailed: assert 1 <= 0"),
        _t("d", ["softmax_shift"], "skipped", "not applicable: capability 'head' not offered"),
        _t("e", ["density_psd"], "passed"),
    ]))  # fmt: skip
    write_junit(v, tmp_path / "j.xml")
    suite = ET.parse(tmp_path / "j.xml").getroot()
    assert suite.get("tests") == "4" and suite.get("failures") == "1"
    assert suite.get("skipped") == "2" and suite.get("errors") == "0"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"rope_group", "softmax_shift", "density_psd", "dag_floor"}
    assert "failed: assert 1 <= 0" in cases["rope_group"].find("failure").text
    assert cases["density_psd"].find("failure") is None
    assert "not applicable" in cases["softmax_shift"].find("skipped").get("message")
