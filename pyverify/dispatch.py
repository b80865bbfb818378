"""What torch executes on this CPU under this process's capability: probed, never assumed.

torch picks its CPU kernels by capability (``ATEN_CPU_CAPABILITY``) AND by what the
hardware has, and the two can disagree: on an Intel Xeon with AMX, under a forced
``default`` or ``avx2``, torch's own bfloat16 ``scaled_dot_product_attention`` raises
``RuntimeError: pack_vnni2 is only supported when avx512 is supported`` once the
sequence reaches 64 (its flash kernel packs for AMX, which the forced capability was
not compiled for). That is a fact of torch on that CPU, not a failure of this project:
the capability matrix (``tests/capability_matrix.py``) and the cross-check probe each
dtype first, name what torch refuses, with torch's own message, and leave it out.

The probe runs a matrix product and SDPA (plain and causal) per dtype at a few shapes,
chosen to reach the kernels' different paths: a tiny one, one at the sequence length
where the packed AMX path starts (64), and one with the model's head size (256 x 64).
``python -m pyverify.dispatch`` prints ``{"capability": ..., "refusals": {dtype: message}}``.
Setting ``PYVERIFY_TORCH_REFUSES`` to such a ``refusals`` JSON object replaces the
probe (the matrix passes its probe down to the pytest it starts this way).
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache

import torch

from pyverify.errors import InputValueError
from pyverify.precision import DTYPE_NAMES, TORCH_DTYPES, canonical_dtype

__all__ = ["PROBE_SHAPES", "REFUSALS_ENV", "capability", "probe_dtype", "refusals"]

REFUSALS_ENV = "PYVERIFY_TORCH_REFUSES"

#: ``(B, H, S, dk)`` of the probe: tiny; the packed path's first length; the model's head.
PROBE_SHAPES: tuple[tuple[int, int, int, int], ...] = (
    (1, 1, 4, 8),
    (2, 3, 64, 16),
    (1, 2, 256, 64),
)


def capability() -> str:
    """The CPU capability torch runs under in this process (``default``, ``avx2``, ...)."""
    return str(torch.backends.cpu.get_cpu_capability()).lower()


def probe_dtype(dtype: str) -> str | None:
    """``None`` if torch runs a matmul and SDPA in ``dtype`` here, else what it said.

    The message names the operation and shape, then torch's exception type and text.
    """
    name = canonical_dtype(dtype)
    if name is None:
        raise InputValueError(f"dtype: unknown {dtype!r} (use one of {', '.join(DTYPE_NAMES)})")
    dt = TORCH_DTYPES[name]
    g = torch.Generator().manual_seed(0)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for shape in PROBE_SHAPES:
        q = torch.randn(shape, generator=g).to(dt)
        probes = (
            ("matmul", lambda q=q: q @ q.transpose(-2, -1)),
            ("scaled_dot_product_attention", lambda q=q: sdpa(q, q, q)),
            ("scaled_dot_product_attention causal", lambda q=q: sdpa(q, q, q, is_causal=True)),
        )
        for what, run in probes:
            try:
                with torch.inference_mode():
                    run()
            except Exception as exc:  # torch's refusal is the finding: report its words
                text = " ".join(str(exc).split())
                return f"{what} {tuple(shape)}: {type(exc).__name__}: {text}"
    return None


@cache
def _probed() -> dict[str, str]:
    out = {}
    for name in DTYPE_NAMES:
        msg = probe_dtype(name)
        if msg is not None:
            out[name] = msg
    return out


def refusals(dtypes: tuple[str, ...] | list[str] = DTYPE_NAMES) -> dict[str, str]:
    """The dtypes of ``dtypes`` torch refuses on this CPU here, with its message.

    From ``PYVERIFY_TORCH_REFUSES`` when set (a JSON object dtype -> message), else
    probed once per process (:func:`probe_dtype`).
    """
    given = os.environ.get(REFUSALS_ENV, "").strip()
    if given:
        try:
            table = json.loads(given)
        except json.JSONDecodeError as exc:
            raise InputValueError(f"{REFUSALS_ENV}: not a JSON object ({exc})") from None
        if not isinstance(table, dict) or not all(
            canonical_dtype(k) and isinstance(v, str) for k, v in table.items()
        ):
            raise InputValueError(f"{REFUSALS_ENV}: expected {{dtype: message}}; got {given!r}")
        table = {canonical_dtype(k): v for k, v in table.items()}
    else:
        table = _probed()
    wanted = [canonical_dtype(d) for d in dtypes]
    return {d: table[d] for d in wanted if d in table}


def main() -> int:
    """Print this process's capability and refusals as one JSON line."""
    print(json.dumps({"capability": capability(), "refusals": refusals()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
