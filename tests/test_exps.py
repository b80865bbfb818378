"""The exponential accuracies: certified for this capability and torch, else declared and said."""

from __future__ import annotations

import torch

from pyverify.fp import exps


def _cert(cap: str, exhaustive: bool = True, version: str | None = None) -> dict:
    return {
        "provenance": {"torch": version or torch.__version__},
        "capabilities": {cap: {"capability": cap, "u_exp": 1.2e-7, "eta_exp": 1.7e-38,
                               "exhaustive": exhaustive}},
    }  # fmt: skip


def test_the_certificate_replaces_the_declared_pair_for_its_capability(monkeypatch):
    cap = exps._capability()
    monkeypatch.setattr(exps, "certificate", lambda: _cert(cap))
    assert exps.exp_accuracy("exp_u20") == (1.2e-7, 1.7e-38)
    assert "certified for CPU capability" in exps.certificate_status()
    # only the float32 fused kernel's exponential, only on the CPU
    assert exps.exp_accuracy("fexp_u20") == exps.DECLARED["fexp_u20"]
    assert exps.exp_accuracy("exp_u20", "cuda") == exps.DECLARED["exp_u20"]


def test_no_certificate_for_this_capability_is_one_line_not_a_failure(monkeypatch):
    for cert, why in (
        ({}, "no exp certificate"),
        (_cert("no-such-capability"), "no exhaustive exp certificate for CPU capability"),
        (_cert(exps._capability(), exhaustive=False), "no exhaustive exp certificate"),
        (_cert(exps._capability(), version="0.0"), "is for torch 0.0"),
    ):
        monkeypatch.setattr(exps, "certificate", lambda c=cert: c)
        assert exps.exp_accuracy("exp_u20") == exps.DECLARED["exp_u20"]
        line = exps.certificate_status()
        assert why in line and "declared u_exp" in line and "\n" not in line


def test_the_read_out_of_sdpa_agrees_with_independent_exponentials():
    """The certificate's read-out (:func:`pyverify.fp.expcert.extract`) on a sample, against
    exponentials computed without torch: the vector lanes are ATen's ``exp_u20`` (its
    NumPy re-implementation, ``tests/test_fp_models.py``) under avx2/avx512 and the C
    library's ``expf`` under ``default``; the scalar tail is ``expf`` (correctly rounded
    here: float64 ``exp`` rounded to float32)."""
    import numpy as np
    from test_fp_models import _exp_u20

    from pyverify.fp import expcert

    x = -np.random.default_rng(2).uniform(0, 90, 20_000).astype(np.float32)
    x = np.concatenate([x, -(2.0 ** -np.arange(1, 40)).astype(np.float32), np.float32([0.0])])
    rounded = np.exp(x.astype(np.float64)).astype(np.float32)
    for path, want in (
        ("vector", _exp_u20(x) if exps._capability() in ("avx2", "avx512") else rounded),
        ("tail", rounded),
    ):
        lo, hi = expcert.extract(x, path)
        assert np.array_equal(lo, hi)  # one float32 fits SDPA's outputs for each x
        assert np.array_equal(lo, want), (path, int(np.sum(lo != want)))
