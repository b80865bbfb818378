"""Does this device keep subnormal numbers? A probe per device and dtype, never assumed.

The proved bounds (:mod:`pyverify.fp.formulas`) assume IEEE 754 gradual underflow: a
product or quotient below the normal range has an absolute error ``eta`` of half a
subnormal spacing, and the sum of two floating-point numbers is exact there. A device in
flush-to-zero mode (results below ``2^emin`` become 0: GPU kernels and CPU fast-math,
``torch.set_flush_denormal(True)``, the MXCSR bits of x86) or denormals-are-zero mode
(subnormal *inputs* read as 0) breaks both: the errors can exceed those bounds by
orders of magnitude. Some instructions flush whatever the mode: the bfloat16 dot
products of AVX512-BF16 (``vdpbf16ps``) that torch's bfloat16 matrix products use from
some size on.

:func:`probe` runs each operation the kernels use (an elementwise product and sum, a
matrix product at a small and a large size, SDPA's ``p V`` product) on inputs built from
bit patterns, and compares the results' bit patterns (a comparison of floats would itself
be flushed): the product ``2^(e/2) * 2^(e/2)`` and the sum ``1.5 N - N`` must be the
subnormal ``2^e``, ``N / 2``, and a subnormal times 16 must not read as 0.
:func:`require_gradual` raises :class:`FlushToZero`, one line naming the device, the
dtype and the mode, where the probe finds anything else: the bounds are then refused
(``fp_flush_to_zero`` proves the flushed sums and dot products, which the tests hold
under a forced FTZ mode; the softmax, head and decoder bounds are proved for gradual
underflow only, so those are refused rather than passed or failed).

The probe runs on the calling thread (the MXCSR mode is per thread; torch runs these
small operations there), every time it is asked: a process can change the mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from pyverify.precision import TORCH_DTYPES, canonical_dtype

__all__ = [
    "OPS",
    "BoundRefused",
    "FlushToZero",
    "NotModelled",
    "UnderflowProbe",
    "cuda_premises",
    "probe",
    "probe_numpy",
    "probes_of",
    "require_gradual",
    "survey",
]

#: ``(exponent bits, mantissa bits, emin)`` of each format.
_FORMAT: dict[str, tuple[int, int, int]] = {
    "float64": (11, 52, -1022),
    "float32": (8, 23, -126),
    "bfloat16": (8, 7, -126),
    "float16": (5, 10, -14),
}
_INT = {
    "float64": (np.uint64, torch.int64),
    "float32": (np.uint32, torch.int32),
    "bfloat16": (np.uint16, torch.int16),
    "float16": (np.uint16, torch.int16),
}


class BoundRefused(Exception):  # noqa: N818 (a refusal, not an error of the code checked)
    """A proved bound whose premises this device or this input does not meet: refused.

    Its message is one line naming the device, the dtype and why. The property tests
    report it as skipped with that line (``property_tests/conftest.py``), the cross-check
    as a row without a proved bound (or, for a flushing device, its cases left out).
    """


class FlushToZero(BoundRefused):
    """The device flushes subnormal numbers: the gradual-underflow bounds do not hold."""


class NotModelled(BoundRefused):
    """The device runs kernels whose arithmetic the bounds do not model (CUDA SDPA)."""


@dataclass(frozen=True)
class UnderflowProbe:
    """What one device did with subnormal numbers at one dtype.

    Attributes
    ----------
    device, dtype : str
        Where and in which format (``"numpy"`` for NumPy's float64, the reference's).
    ops : dict of str to bool
        Per operation: True if it kept the subnormal result (gradual underflow).
    reads_subnormals : bool
        Whether a subnormal input is read as itself (False: denormals-are-zero).
    """

    device: str
    dtype: str
    ops: dict[str, bool] = field(default_factory=dict)
    reads_subnormals: bool = True

    @property
    def mode(self) -> str:
        """``gradual``, ``flush-to-zero``, ``denormals-are-zero`` or both, with the ops."""
        flushed = sorted(k for k, ok in self.ops.items() if not ok)
        parts = []
        if flushed:
            parts.append(f"flush-to-zero ({', '.join(flushed)})")
        if not self.reads_subnormals:
            parts.append("denormals-are-zero")
        return " + ".join(parts) or "gradual"

    @property
    def gradual(self) -> bool:
        """Whether every operation kept its subnormal result and read subnormal inputs."""
        return all(self.ops.values()) and self.reads_subnormals

    def line(self) -> str:
        """One line: the device, the dtype and the mode."""
        return f"{self.device} {self.dtype}: {self.mode}"

    def to_dict(self) -> dict[str, object]:
        """JSON-ready."""
        return {"mode": self.mode, "ops": dict(sorted(self.ops.items())),
                "reads_subnormals": self.reads_subnormals}  # fmt: skip


def _bits(dtype: str, value_exp: int, mant: int = 0) -> int:
    """The bit pattern of ``(1 + mant 2^-m) 2^value_exp`` in ``dtype``.

    Below the normal range: of the subnormal ``2^value_exp`` (``mant`` ignored).
    """
    _, m_bits, emin = _FORMAT[dtype]
    if value_exp < emin:
        return 1 << (m_bits - (emin - value_exp))
    return ((value_exp - emin + 1) << m_bits) | mant


def _tensor(dtype: str, bits: int, shape: tuple[int, ...], device: str) -> torch.Tensor:
    np_int, t_int = _INT[dtype]
    raw = torch.from_numpy(np.full(shape, bits, dtype=np_int).view(np.int64 if np_int is np.uint64
                           else np.int32 if np_int is np.uint32 else np.int16))  # fmt: skip
    return raw.to(device).view(TORCH_DTYPES[dtype]) if raw.dtype == t_int else raw


def _same(t: torch.Tensor, dtype: str, bits: int) -> bool:
    np_int, t_int = _INT[dtype]
    got = t.detach().to("cpu").contiguous().view(t_int).numpy().view(np_int)
    return bool(np.all(got == np_int(bits)))


#: The operations of the probe: elementwise, matrix products, SDPA's ``p V``.
OPS: tuple[str, ...] = ("mul", "add", "matmul", "matmul_large", "sdpa_pv", "sdpa_pv_large")
#: What a kernel does at a dtype below its arithmetic's: only SDPA runs in that dtype.
_LOW_OPS: tuple[str, ...] = ("sdpa_pv", "sdpa_pv_large")


def probe(device: str, dtype: str, ops: tuple[str, ...] = OPS) -> UnderflowProbe:
    """Run the subnormal probe of ``dtype`` on torch's ``device`` (in this thread).

    ``ops``: which operations count (:data:`OPS`); the denormals-are-zero read is always
    probed.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel

    name = canonical_dtype(dtype) or dtype
    _, m_bits, emin = _FORMAT[name]
    sub_e = emin - 2  # the subnormal 2^(emin-2)
    half_e = sub_e // 2 if sub_e % 2 == 0 else (sub_e - 1) // 2
    other_e = sub_e - half_e
    sub = _bits(name, sub_e)
    a, b = _bits(name, half_e), _bits(name, other_e)
    found: dict[str, bool] = {}
    with torch.inference_mode():
        x, y = _tensor(name, a, (64,), device), _tensor(name, b, (64,), device)
        found["mul"] = _same(x * y, name, sub)
        big = _tensor(name, _bits(name, emin, 1 << (m_bits - 1)), (64,), device)  # 1.5 N
        neg = -_tensor(name, _bits(name, emin), (64,), device)  # -N (exact negation)
        found["add"] = _same(big + neg, name, _bits(name, emin - 1))  # N / 2
        for label, n, k in (("matmul", 4, 16), ("matmul_large", 128, 64)):
            q = torch.zeros(n, k, dtype=TORCH_DTYPES[name], device=device)
            kk = torch.zeros(n, k, dtype=TORCH_DTYPES[name], device=device)
            q[:, 0], kk[:, 0] = x[0], y[0]
            found[label] = _same(q @ kk.T, name, sub)
        for label, s in (("sdpa_pv", 4), ("sdpa_pv_large", 256)):
            z = torch.zeros(1, 1, s, 64, dtype=TORCH_DTYPES[name], device=device)
            v = _tensor(name, sub, (1, 1, s, 64), device)
            try:
                with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                    out = torch.nn.functional.scaled_dot_product_attention(z, z, v)
                found[label] = _same(out, name, sub)
            except RuntimeError:  # no fused kernel here (CUDA dtype, ...): not probed
                pass
        sixteen = _tensor(name, _bits(name, 4), (64,), device)
        reads = _same(_tensor(name, sub, (64,), device) * sixteen, name, _bits(name, sub_e + 4))
    return UnderflowProbe(device, name, {k: v for k, v in found.items() if k in ops}, reads)


def probe_numpy() -> UnderflowProbe:
    """The probe of NumPy's float64 (the reference's arithmetic), in this thread."""
    a = np.array([_bits("float64", -512)], dtype=np.uint64).view(np.float64)
    b = np.array([_bits("float64", -1024 + 512)], dtype=np.uint64).view(np.float64)
    sub = _bits("float64", -1024)

    def same(v: np.ndarray, bits: int) -> bool:
        return bool(np.all(np.asarray(v, np.float64).view(np.uint64) == np.uint64(bits)))

    big = np.array([_bits("float64", -1022, 1 << 51)], dtype=np.uint64).view(np.float64)
    n = np.array([_bits("float64", -1022)], dtype=np.uint64).view(np.float64)
    sub_v = np.array([sub], dtype=np.uint64).view(np.float64)
    ops = {
        "mul": same(a * b, sub),
        "add": same(big - n, _bits("float64", -1023)),
        "matmul": same(np.full((4, 16), 0.0) @ np.full((16, 4), 0.0) + a @ b.T, sub),
    }
    reads = same(sub_v * 16.0, _bits("float64", -1020))
    return UnderflowProbe("numpy", "float64", ops, reads)


def probes_of(device: str, dtype: str, compute: str | None = None) -> list[UnderflowProbe]:
    """The probes an implementation's bounds rest on.

    Every operation in its arithmetic (``compute``, default ``dtype``), and SDPA in
    ``dtype`` when that is lower. ``device`` ``"numpy"``: NumPy's float64 (the reference).
    """
    if device == "numpy":
        return [probe_numpy()]
    comp = compute or dtype
    found = [probe(device, comp)]
    if comp != dtype:
        found.append(probe(device, dtype, _LOW_OPS))
    return found


def cuda_premises(dtype: str, compute: str | None = None) -> str | None:
    """Why a CUDA matrix product is outside the bounds' model, or None.

    The bounds take a float32 product as float32 multiplications and additions in any
    order (cuBLAS: any order is covered), and a bfloat16/float16 product as accumulated in
    float32. torch lets cuBLAS do otherwise: TF32 products (10-bit mantissas) where
    ``torch.backends.cuda.matmul.allow_tf32``, and reduced-precision reductions where
    ``allow_bf16_reduced_precision_reduction`` / ``allow_fp16_reduced_precision_reduction``
    (both on by default), float16 accumulation where ``allow_fp16_accumulation``.
    """
    mm = torch.backends.cuda.matmul
    comp = compute or dtype
    if comp == "float32" and dtype == "float32" and mm.allow_tf32:
        return "TF32 matrix products (torch.backends.cuda.matmul.allow_tf32)"
    flag = {"bfloat16": "allow_bf16_reduced_precision_reduction",
            "float16": "allow_fp16_reduced_precision_reduction"}.get(dtype)  # fmt: skip
    if flag and getattr(mm, flag, False):
        return f"reduced-precision reductions (torch.backends.cuda.matmul.{flag})"
    if dtype == "float16" and getattr(mm, "allow_fp16_accumulation", False):
        return "float16 accumulation (torch.backends.cuda.matmul.allow_fp16_accumulation)"
    return None


def require_gradual(device: str, dtype: str, compute: str | None = None) -> list[UnderflowProbe]:
    """:func:`probes_of`; raises :class:`FlushToZero` (one line) unless all are gradual.

    On a CUDA device its matrix products' premises are checked first
    (:func:`cuda_premises`): :class:`NotModelled` names the device, the dtype and the flag.
    """
    if device.startswith("cuda"):
        why = cuda_premises(dtype, compute)
        if why is not None:
            raise NotModelled(f"{device} {dtype}: {why}: outside the bounds' model, refused")
    found = probes_of(device, dtype, compute)
    bad = [p for p in found if not p.gradual]
    if bad:
        raise FlushToZero(
            f"{'; '.join(p.line() for p in bad)}: the proved bounds assume gradual underflow "
            "(IEEE 754); under flush-to-zero only sums and dot products are proved "
            "(fp_flush_to_zero): refused"
        )
    return found


def survey(devices: list[str]) -> dict[str, dict[str, dict[str, object]]]:
    """Every probe (all :data:`OPS`) per device and dtype, and NumPy's: for the report."""
    from pyverify.precision import DTYPE_NAMES

    out: dict[str, dict[str, dict[str, object]]] = {"numpy": {"float64": probe_numpy().to_dict()}}
    for dev in devices:
        out[dev] = {dt: probe(dev, dt).to_dict() for dt in DTYPE_NAMES}
    return out
