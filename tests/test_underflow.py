"""The subnormal probe (pyverify.fp.underflow) and the refusal of the bounds under flush-to-zero.

The probe reads bit patterns; its independent oracle here is NumPy's float32 arithmetic
on the same thread (the MXCSR mode is per thread and shared by NumPy and torch's CPU
kernels there), read back as bits too. Under ``torch.set_flush_denormal(True)`` a kernel's
dot product of inputs whose products fall below ``2^-126`` leaves the gradual-underflow
bound of ``fp_dot_product`` (it flushes them to 0, an error of up to ``2^-126`` each,
against ``eta = 2^-150`` in the bound), so a suite that evaluated that bound there would
pass or fail by chance: the arithmetic refuses instead, with one line naming the device,
the dtype and the mode, and the cross-check leaves those cases out with that line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction

import numpy as np
import pytest
import torch

from pyverify import crosscheck as cc
from pyverify.fp import underflow as uf
from pyverify.fp.formulas import UNDERFLOW, fp_dot_product
from pyverify.fp.models import arithmetic
from pyverify.testing.fp import worst_excess


@contextmanager
def flush_to_zero() -> Iterator[None]:
    """torch's (and this thread's) flush-to-zero and denormals-are-zero, restored after."""
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU has no flush-to-zero mode torch can set (no SSE3)")
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


def _numpy_keeps_subnormals() -> bool:
    a = np.array([2.0**-64], dtype=np.float32)
    return int((a * a).view(np.uint32)[0]) == 1 << 21  # 2^-128, a float32 subnormal


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16", "float16"])
def test_probe_agrees_with_numpy_on_this_thread(dtype):
    found = uf.probe("cpu", dtype)
    assert set(found.ops) == set(uf.OPS) - {op for op in uf.OPS if op not in found.ops}
    assert _numpy_keeps_subnormals()
    # the elementwise and small-matrix paths keep subnormals at every dtype here; a large
    # bfloat16 matrix product may flush by instruction (AVX512-BF16), which the probe shows
    for op in ("mul", "add", "matmul", "sdpa_pv"):
        assert found.ops[op], (dtype, found.line())
    assert found.reads_subnormals


def test_probe_sees_flush_to_zero_and_the_bounds_refuse():
    with flush_to_zero():
        assert not _numpy_keeps_subnormals()  # the oracle: this thread flushes now
        f32 = uf.probe("cpu", "float32")
        assert not f32.gradual and "flush-to-zero" in f32.mode and not f32.reads_subnormals
        assert not uf.probe_numpy().gradual  # the float64 reference flushes too
        with pytest.raises(uf.FlushToZero, match=r"^cpu float32: flush-to-zero \(add"):
            arithmetic("kernels", "float32")
        with pytest.raises(uf.FlushToZero, match="numpy float64"):
            arithmetic("reference", "float64")
        # float16 computes in float32 (whose normal range holds float16's subnormals) but
        # its SDPA runs in float16: refused for the float32 arithmetic
        with pytest.raises(uf.FlushToZero, match="cpu float32"):
            arithmetic("kernels", "float16")
    assert arithmetic("kernels", "float32").device == "cpu"  # restored: gradual again


def test_flushed_dot_products_leave_the_gradual_bound():
    """Why the refusal: the same inputs within the bound, then outside it under FTZ."""
    rng = np.random.default_rng(5)
    q = (rng.uniform(1, 2, (3, 16)) * 2.0**-70).astype(np.float32).astype(np.float64)
    k = (rng.uniform(1, 2, (4, 16)) * 2.0**-70).astype(np.float32).astype(np.float64)
    exact = [[sum(Fraction(a) * Fraction(b) for a, b in zip(r, c, strict=True)) for c in k]
             for r in q]  # fmt: skip
    ar = arithmetic("kernels", "float32")
    bound = fp_dot_product(np.abs(q) @ np.abs(k).T, 16, ar.u_c, 16 * UNDERFLOW["float32"])

    def kernel() -> np.ndarray:
        return (
            (torch.tensor(q, dtype=torch.float32) @ torch.tensor(k, dtype=torch.float32).T)
            .double()
            .numpy()
        )

    assert worst_excess(kernel(), exact, bound) <= 1.0  # gradual: within
    with flush_to_zero():
        got = kernel()
    assert np.all(got == 0.0)  # every product (~2^-140) flushed
    assert worst_excess(got, exact, bound) > 1e3  # the gradual bound would be a false verdict


def test_crosscheck_leaves_a_flushing_device_out_with_one_line():
    with flush_to_zero():
        res = cc.run_crosscheck(["cpu"], ["float32"], quick=True, shard=(1, 8))
    assert res.rows == [] and res.ok
    (line,) = res.left_out.values()
    assert "cpu float32: flush-to-zero" in line and "refused" in line
    assert "left out: cpu float32" in cc.format_crosscheck(res)


def test_survey_names_every_device_and_dtype():
    got = uf.survey(["cpu"])
    assert set(got) == {"numpy", "cpu"}
    assert set(got["cpu"]) == {"float64", "float32", "bfloat16", "float16"}
    assert got["cpu"]["float32"]["mode"] == "gradual"


def test_cuda_matrix_product_premises_are_checked_by_flag():
    """TF32, reduced-precision reductions and float16 accumulation are outside the model:
    named and refused (torch's defaults allow bfloat16/float16 reduced-precision
    reductions: CUDA at those dtypes is refused unless they are turned off)."""
    mm = torch.backends.cuda.matmul
    names = ("allow_tf32", "allow_bf16_reduced_precision_reduction",
             "allow_fp16_reduced_precision_reduction", "allow_fp16_accumulation")  # fmt: skip
    saved = {n: getattr(mm, n) for n in names}
    try:
        for n in names:
            setattr(mm, n, False)
        assert uf.cuda_premises("float32") is None
        assert uf.cuda_premises("bfloat16", "float32") is None
        mm.allow_tf32 = True
        assert "allow_tf32" in uf.cuda_premises("float32")
        assert uf.cuda_premises("float64") is None
        mm.allow_fp16_reduced_precision_reduction = True
        assert "fp16_reduced" in uf.cuda_premises("float16", "float32")
        mm.allow_fp16_reduced_precision_reduction = False
        mm.allow_fp16_accumulation = True
        assert "fp16_accumulation" in uf.cuda_premises("float16", "float32")
        with pytest.raises(uf.NotModelled, match=r"^cuda float32: TF32"):
            uf.require_gradual("cuda", "float32")
    finally:
        for n, val in saved.items():
            setattr(mm, n, val)
