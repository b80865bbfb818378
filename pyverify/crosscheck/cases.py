"""The cases of the cross-check sweep, option parsing and sharding."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from pyverify.errors import InputValueError
from pyverify.precision import DTYPE_NAMES, canonical_dtype

__all__ = [
    "STAGES",
    "Case",
    "available_devices",
    "list_cases",
    "parse_devices",
    "parse_dtypes",
    "parse_shard",
    "shard_cases",
]

#: The learner's sub-stages (two residual units of two SwiGLU blocks, the cases'):
#: ``D = Q^T Q``, ``A0`` its first LayerNorm, per unit ``k`` its first block ``Uk.f1``, the
#: residual sum ``Uk.Z = X + f(X)`` and its LayerNorm ``Ak`` (the last unit's is ``A``).
LEARNER_STAGES = ("D", "A0", "U1.f1", "U1.Z", "A1", "U2.f1", "U2.Z", "A")
#: Stages compared, in pipeline order.
STAGES: tuple[str, ...] = (*LEARNER_STAGES, "A_LM", "A_P", "G", "scores", "output")

# Sweeps: (B, H, S, dk), and the layer of the G_LM file where one is used.
_RANDOM_FULL = [
    (1, 1, 1, 2),
    (1, 1, 8, 4),
    (2, 3, 9, 8),
    (1, 2, 17, 16),
    (4, 2, 33, 8),
    (2, 4, 64, 16),
    (1, 2, 128, 32),
    (2, 2, 96, 64),
    (1, 2, 256, 64),
]
_RANDOM_QUICK = [(2, 3, 9, 8), (2, 4, 64, 16)]
_MPMATH_FULL = [(1, 1, 1, 2), (1, 2, 8, 4), (1, 3, 16, 8), (2, 2, 12, 6), (1, 2, 16, 2)]
_MPMATH_QUICK = [(1, 2, 16, 8)]
_TRAINED_FULL = [(2, 14, 256, 64, layer) for layer in range(5)]
_TRAINED_QUICK = [(1, 14, 64, 64, layer) for layer in range(5)]
_IDENTITY = [(1, 14, 64, 64, 0)]


@dataclass(frozen=True)
class Case:
    """One cross-check case (deterministic: its seed derives from its id).

    Attributes
    ----------
    kind : str
        ``"random"``, ``"mpmath"``, ``"trained"`` or ``"identity"``.
    shape : tuple of int
        ``(B, H, S, dk)``.
    device : str
        Torch device of the kernels (``"cpu"``, ``"cuda"``).
    dtype : str
        Canonical dtype name (:data:`pyverify.precision.DTYPE_NAMES`).
    layer : int or None
        Layer of the ``G_LM`` file (``trained``/``identity`` cases).
    """

    kind: str
    shape: tuple[int, int, int, int]
    device: str
    dtype: str
    layer: int | None = None

    @property
    def inputs_id(self) -> str:
        """The part of the id that fixes the inputs (independent of device and dtype)."""
        B, H, S, dk = self.shape
        tail = f"-L{self.layer}" if self.layer is not None else ""
        return f"{self.kind}-B{B}H{H}S{S}dk{dk}{tail}"

    @property
    def case_id(self) -> str:
        """Unique, stable id, e.g. ``random-B2H3S9dk8-cpu-float32``."""
        return f"{self.inputs_id}-{self.device}-{self.dtype}"

    @property
    def seed(self) -> int:
        """Seed of the case's inputs (CRC-32 of :attr:`inputs_id`: stable across runs)."""
        return zlib.crc32(self.inputs_id.encode())


def parse_shard(text: str) -> tuple[int, int]:
    """Parse ``"k/n"`` (1 <= k <= n) into ``(k, n)``; anything else is a ``ValueError``."""
    if not isinstance(text, str):
        raise InputValueError(f"shard must be a string 'k/n'; got {text!r}")
    parts = text.strip().split("/")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise InputValueError(f"shard must look like 'k/n' with integers 1 <= k <= n; got {text!r}")
    k, n = int(parts[0]), int(parts[1])
    if not 1 <= k <= n:
        raise InputValueError(f"shard 'k/n' needs 1 <= k <= n; got {text!r}")
    return k, n


def available_devices() -> list[str]:
    """``["cpu"]``, plus ``"cuda"`` when CUDA is available."""
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def parse_devices(devices: Sequence[str] | None) -> list[str]:
    """Validate device names (``None`` or ``["all"]``: every available device).

    Raises
    ------
    ValueError
        On an unknown device or CUDA requested but not available.
    """
    if devices is None or list(devices) in (["all"], []):
        return available_devices()
    out: list[str] = []
    for d in devices:
        try:
            dev = torch.device(d)
        except (RuntimeError, TypeError) as exc:
            raise InputValueError(f"unknown device {d!r} (use cpu, cuda, cuda:N or all)") from exc
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise InputValueError(f"device {d!r} requested but CUDA is not available")
        if dev.type not in ("cpu", "cuda"):
            raise InputValueError(f"unsupported device {d!r} (use cpu, cuda, cuda:N or all)")
        if str(dev) not in out:
            out.append(str(dev))
    return out


def parse_dtypes(dtypes: Sequence[str] | None) -> list[str]:
    """Canonical dtype names (``None`` or ``["all"]``: all four), most precise first.

    Raises
    ------
    ValueError
        On an unknown name.
    """
    if dtypes is None or list(dtypes) in (["all"], []):
        return list(DTYPE_NAMES)
    names = set()
    for d in dtypes:
        key = canonical_dtype(d)
        if key is None:
            raise InputValueError(
                f"unknown dtype {d!r}; use one of {', '.join(DTYPE_NAMES)} (or fp64/fp32/bf16/fp16)"
            )
        names.add(key)
    return [n for n in DTYPE_NAMES if n in names]


def list_cases(devices: Sequence[str], dtypes: Sequence[str], quick: bool) -> list[Case]:
    """Every case of the sweep (the quick subset if ``quick``), in a fixed order."""
    cases: list[Case] = []
    if "cpu" in devices and "float64" in dtypes:
        for shp in _MPMATH_QUICK if quick else _MPMATH_FULL:
            cases.append(Case("mpmath", shp, "cpu", "float64"))
    for dev in devices:
        for dt in dtypes:
            for shp in _RANDOM_QUICK if quick else _RANDOM_FULL:
                cases.append(Case("random", shp, dev, dt))
            for B, H, S, dk, layer in _TRAINED_QUICK if quick else _TRAINED_FULL:
                cases.append(Case("trained", (B, H, S, dk), dev, dt, layer))
            for B, H, S, dk, layer in _IDENTITY:
                cases.append(Case("identity", (B, H, S, dk), dev, dt, layer))
    return cases


def shard_cases(cases: Sequence[Case], shard: tuple[int, int]) -> list[Case]:
    """The cases of shard ``(k, n)``: those whose index ``i`` has ``i % n == k - 1``.

    Round-robin, so that every shard gets a similar mix of kinds and sizes;
    the ``n`` shards partition ``cases``.

    Raises
    ------
    ValueError
        Unless ``1 <= k <= n``.
    """
    k, n = shard
    if not (isinstance(k, int) and isinstance(n, int) and 1 <= k <= n):
        raise InputValueError(f"shard must be (k, n) with 1 <= k <= n; got {shard!r}")
    return [c for i, c in enumerate(cases) if i % n == k - 1]
