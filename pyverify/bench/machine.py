"""What the bench's ratios depend on besides the code: the CPU, and what torch runs on it.

The same code gave P3's ratio at B = 4 as 0.49-0.54 on one machine and 0.84-0.89 on
another (``docs/bench-notes.md``): the rows divide our time by a baseline's, and the two
sides lean on different kernels (a few-row product through MKL's GEMV or GEMM paths,
SDPA's flash kernel against plain batched products), whose speeds differ by vendor and
instruction set. So every bench JSON records, in ``meta.machine``:

* the CPU: vendor, model name, and which of the instruction-set extensions torch's
  kernels choose between it has (AVX2, FMA, AVX-512 F/BW/VL/VNNI/BF16, AMX);
* torch's dispatch: the capability its vectorised kernels run under
  (:func:`pyverify.dispatch.capability`, ``ATEN_CPU_CAPABILITY`` overrides it), the BLAS
  (MKL's version: on a non-Intel CPU MKL may take a generic path), oneDNN's version, the
  threads, and the environment variables that steer them;
* which attention kernel the rows' SDPA calls reach here (read off the profiler);
* the form each few-row product of the decode step took (``(W^T x^T)^T``, ``x W`` or
  one matrix-vector product per row), timed on this machine
  (:func:`pyverify.kernels.linear.few_rows_form`).
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from pyverify.dispatch import capability
from pyverify.kernels.linear import few_row_forms

__all__ = ["CPU_FLAGS", "ENV_VARS", "machine_facts"]

#: The /proc/cpuinfo flags that decide which CPU kernels torch, MKL and oneDNN run.
CPU_FLAGS = (
    "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
    "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
)  # fmt: skip

#: Environment variables that change what torch, MKL and OpenMP execute.
ENV_VARS = (
    "ATEN_CPU_CAPABILITY", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "MKL_ENABLE_INSTRUCTIONS",
    "MKL_DEBUG_CPU_TYPE", "MKL_CBWR", "DNNL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA",
    "KMP_AFFINITY", "OMP_WAIT_POLICY",
)  # fmt: skip


def _cpuinfo() -> dict[str, Any]:
    """Vendor, model name, family/model/stepping and flags of the first CPU in /proc/cpuinfo.

    A virtual machine may name the model vaguely ("AMD EPYC"); family and model number
    then say the generation (AMD family 25 = Zen 3/4, Intel family 6 model 143 =
    Sapphire Rapids).
    """
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return {"cpu_vendor": "", "cpu_model": platform.processor(), "cpu_flags": []}

    def field(name: str) -> str:
        m = re.search(rf"^{name}\s*:\s*(.*)$", text, re.MULTILINE)
        return m.group(1).strip() if m else ""

    flags = set(field("flags").split())
    return {
        "cpu_vendor": field("vendor_id"),
        "cpu_model": field("model name"),
        "cpu_family_model_stepping": [field("cpu family"), field("model"), field("stepping")],
        "cpu_flags": [f for f in CPU_FLAGS if f in flags],
    }


def _versions() -> dict[str, str | None]:
    cfg = torch.__config__.show()
    mkl = re.search(r"Math Kernel Library Version ([^\n]+)", cfg)
    dnnl = re.search(r"MKL-DNN v([0-9.]+)", cfg)
    return {
        "blas": "mkl" if torch.backends.mkl.is_available() else "other",
        "mkl": mkl.group(1).strip() if mkl else None,
        "onednn": dnnl.group(1) if dnnl else None,
    }


@contextmanager
def _stderr_silenced() -> Iterator[None]:
    """File descriptor 2 to /dev/null inside (the profiler's start/stop lines are C prints)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _sdpa_kernel(device: torch.device) -> str:
    """The aten kernel a causal float32 SDPA at the rows' head shape reaches here."""
    from torch.profiler import ProfilerActivity, profile

    q = torch.zeros(1, 2, 64, 64, device=device)
    with torch.inference_mode(), _stderr_silenced():
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    names = [e.name for e in prof.events() if e.name.startswith("aten::_scaled_dot_product")]
    return names[0] if names else "aten::scaled_dot_product_attention (math)"


def machine_facts(device: torch.device | None = None) -> dict[str, Any]:
    """The facts listed in the module docstring, JSON-serialisable.

    Parameters
    ----------
    device : torch.device, optional
        The bench's device (default CPU); its SDPA kernel is probed.
    """
    dev = device or torch.device("cpu")
    return {
        **_cpuinfo(),
        "machine": platform.machine(),
        "torch_cpu_capability": capability(),
        **_versions(),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "env": {k: os.environ[k] for k in ENV_VARS if k in os.environ},
        "sdpa_kernel": _sdpa_kernel(dev),
        # the form each few-row product of a decode step took here (timed once per shape)
        "few_row_products": few_row_forms(),
    }
