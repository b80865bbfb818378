"""The accuracy of each exponential the bounds rest on: certified where a sweep exists.

``Pldr.fp_softmax_exp`` takes the library exponential as a hypothesis,
``|e^(z) - exp z| <= u_exp exp z + eta_exp``. For the exponential inside torch's float32
CPU flash attention (ATen's ``exp_u20`` on the vector lanes, the C library's ``expf`` on
the tail) the pair is *certified*: every float32 ``z`` in ``[X_MIN, 0]`` swept per CPU
capability (:mod:`pyverify.fp.expcert`, the data in ``exp_certificate.json``, its
provenance inside). Everywhere else it is *declared* (:data:`DECLARED`), with the
measurement behind it; a CPU capability (or torch version) without a certificate gets
the declared pair and one line saying so (:func:`certificate_status`), never a failure.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import torch

__all__ = [
    "DECLARED",
    "LIB_ACCURACY",
    "TRIG_ACCURACY",
    "certificate",
    "certificate_status",
    "exp_accuracy",
]

#: ``[fp_softmax]`` ``(u_exp, eta_exp)`` declared per exponential (relative error; absolute
#: error below
#: ``2^-125``, where ATen flushes to 0 under ``ln(FLT_MIN)``). ``numpy``: NumPy's SIMD
#: float64 ``exp`` (measured <= 0.6 ulp; 2 ulp declared). ``sleef``: ATen's float64
#: ``exp_u20`` = ``Sleef_expd8_u10`` and torch's float64 ``softmax`` (1 ulp; 2 declared).
#: ``exp_u20``: the float32 flash kernel's (``"ULP=20"`` in ATen's source; replaced by
#: the certificate where one exists). ``fexp_u20``: ATen's degree-3 ``fexp_u20`` of the
#: bfloat16/float16 flash kernel (1.13e-4 measured on a re-implementation; 2^-12
#: declared: its outputs are rounded to 8 or 11 bits before use, so no sweep could read
#: them back exactly). ``softmax32``: torch's float32 ``softmax``, the MATH backend's
#: (at most 2.9 units of 2^-24 read back from 300,000 rows; 2^-21 declared).
DECLARED: dict[str, tuple[float, float]] = {
    "numpy": (2.0**-51, 2.0**-1021),
    "sleef": (2.0**-51, 2.0**-1021),
    "exp_u20": (20 * 2.0**-23, 2.0**-125),
    "fexp_u20": (2.0**-12, 2.0**-125),
    "softmax32": (2.0**-21, 2.0**-125),
}

#: ``[fp_elementwise]`` Relative error of the library ``exp`` and ``pow`` of the metric
#: stages (1 ulp for
#: NumPy/glibc and Sleef ``u10``; 2 ulp declared), by compute dtype.
LIB_ACCURACY: dict[str, float] = {"float64": 2.0**-51, "float32": 2.0**-22}

#: ``[fp_elementwise]`` Absolute error (the ``eta_f``; values in ``[-1, 1]``) of the float64
#: library ``cos`` and ``sin`` of the RoPE rotations: NumPy's, torch's CPU (Sleef ``u10``,
#: 1 ulp) and CUDA's (2 ulp documented): 2 ulp of ``[1/2, 1)`` declared, ``2^-52``. Checked
#: against mpmath on the drawn angles by ``property_tests/test_rope_*.py``
#: (:func:`pyverify.testing.rope_bounds.trig_excess`).
TRIG_ACCURACY: float = 2.0**-52

#: Which declared exponential a certificate entry replaces.
_CERTIFIED_KEY = "exp_u20"


@cache
def certificate() -> dict[str, Any]:
    """The committed certificate (:mod:`pyverify.fp.expcert`), ``{}`` if there is none."""
    from pyverify.fp.expcert import CERTIFICATE

    return json.loads(CERTIFICATE.read_text()) if CERTIFICATE.exists() else {}


def _capability() -> str:
    return str(torch.backends.cpu.get_cpu_capability()).lower()


def _entry() -> tuple[dict[str, Any] | None, str]:
    """The certificate entry of this process's capability, or None and why there is none."""
    cert = certificate()
    cap = _capability()
    if not cert:
        return None, "no exp certificate (pyverify/fp/exp_certificate.json)"
    made = cert.get("provenance", {}).get("torch")
    if made != torch.__version__:
        return None, f"the exp certificate is for torch {made}, this is {torch.__version__}"
    entry = cert.get("capabilities", {}).get(cap)
    if entry is None or not entry.get("exhaustive", False):
        return None, f"no exhaustive exp certificate for CPU capability {cap}"
    return entry, ""


def exp_accuracy(key: str, device: str = "cpu") -> tuple[float, float]:
    """``(u_exp, eta_exp)`` of exponential ``key``: certified, else declared.

    Only torch's float32 flash kernel on the CPU (``exp_u20``) has a certificate; for it,
    this process's CPU capability must have an exhaustive entry made with this torch.
    """
    if key == _CERTIFIED_KEY and device == "cpu":
        entry, _ = _entry()
        if entry is not None:
            return float(entry["u_exp"]), float(entry["eta_exp"])
    return DECLARED[key]


def certificate_status() -> str:
    """One line: the certified ``u_exp`` in use, or why the declared one is (``[fp_softmax]``)."""
    entry, why = _entry()
    u_dec = DECLARED[_CERTIFIED_KEY][0]
    if entry is None:
        return f"{why}: the declared u_exp {u_dec:.3g} ({u_dec / 2**-24:g} x 2^-24) is used"
    cap = entry["capability"]
    return (
        f"u_exp certified for CPU capability {cap}: {entry['u_exp']:.4g} "
        f"({entry['u_exp'] / 2**-24:.2f} x 2^-24), eta_exp {entry['eta_exp']:.3g} "
        f"(declared {u_dec:.3g})"
    )
