"""Data-parallel training on ``torch.distributed``: the process group, the batch split, the means.

A run's job (:mod:`~pyverify.collapse.job`) runs under any launcher that sets the
``torchrun`` environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
``MASTER_PORT``): ``torchrun``, ``srun`` exporting those variables, and so on. The
backend is gloo on CPU, NCCL on CUDA; the model is wrapped in
:class:`~torch.nn.parallel.DistributedDataParallel`. Without ``WORLD_SIZE`` a job
is one process and nothing here communicates (the numbers are those of the plain
loop, bit for bit).

The data split: step ``t``'s global batch of ``B`` windows is drawn from
``default_rng([seed, t])`` by every rank (:meth:`~pyverify.collapse.corpus.Corpus.batch`)
and rank ``r`` of ``W`` trains on rows ``r B/W .. (r+1) B/W - 1``; ``W`` must divide
``B``. So the tokens of a step do not depend on ``W``. Each rank's loss is the mean
over its rows and DDP averages the ranks' gradients (each divided by ``W``, then
summed); that is the gradient of the mean over the global batch, because every rank
holds the same number of loss terms (the same rows per rank and positions per row,
under every objective). The reported loss and accuracy are the ranks' means averaged
the same way (:func:`global_mean`). What changes with ``W`` is the order of float32
sums (within a rank's rows, then across ranks), hence rounding only.

Rank 0 alone measures and writes. A measurement holds the other ranks at their
next gradient reduction, so the process group's timeout (:data:`TIMEOUT`) is long.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import torch
from torch import Tensor, nn
from torch import distributed as dist

from pyverify.errors import InputValueError

__all__ = [
    "TIMEOUT",
    "DistEnv",
    "broadcast",
    "check_split",
    "dist_env",
    "global_mean",
    "local_rows",
    "start",
    "stop",
    "wrap",
]

TIMEOUT = timedelta(hours=2)
"""Process-group timeout: rank 0's measurements (a record, the end-of-run measurements of
a large model on CPU) hold the other ranks at a collective for that long at most."""

DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class DistEnv:
    """A process's place in a job: rank, world size, device, and whether it communicates."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    distributed: bool = False
    """Launched by ``torchrun`` or the like (``WORLD_SIZE`` set, even to 1): a process
    group and DDP are used."""

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that measures, prints and writes."""
        return self.rank == 0

    @property
    def backend(self) -> str | None:
        """``gloo`` on CPU, ``nccl`` on CUDA; ``None`` for one plain process."""
        if not self.distributed:
            return None
        return "nccl" if self.device.type == "cuda" else "gloo"

    def describe(self) -> str:
        """One phrase for progress lines: ``2 processes (gloo, cpu)``."""
        n = f"{self.world_size} process{'es' if self.world_size > 1 else ''}"
        return f"{n} ({self.backend or 'no process group'}, {self.device})"


def _env_int(environ: Mapping[str, str], key: str, default: int) -> int:
    text = environ.get(key)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise InputValueError(f"{key}={text!r}: not an integer (set by torchrun)") from None


def dist_env(device: str = "cpu", environ: Mapping[str, str] | None = None) -> DistEnv:
    """The calling process's :class:`DistEnv` from the launcher's environment and ``--device``."""
    environ = os.environ if environ is None else environ
    if device not in DEVICES:
        raise InputValueError(f"--device: {device!r} is not one of {', '.join(DEVICES)}")
    distributed = "WORLD_SIZE" in environ
    world = _env_int(environ, "WORLD_SIZE", 1)
    rank = _env_int(environ, "RANK", 0)
    local = _env_int(environ, "LOCAL_RANK", rank)
    if world < 1 or not 0 <= rank < world or local < 0:
        raise InputValueError(f"RANK={rank}, LOCAL_RANK={local}, WORLD_SIZE={world}: inconsistent")
    dev = torch.device("cpu")
    if device == "cuda":
        if not torch.cuda.is_available():
            raise InputValueError("--device cuda: torch finds no CUDA device here")
        if local >= torch.cuda.device_count():
            raise InputValueError(
                f"--device cuda: LOCAL_RANK={local} but {torch.cuda.device_count()} CUDA devices"
            )
        dev = torch.device("cuda", local)
    return DistEnv(rank, world, local, dev, distributed)


def check_split(batch: int, env: DistEnv) -> int:
    """Rows per rank; a one-line error when the world size does not divide the global batch."""
    if batch % env.world_size:
        raise InputValueError(
            f"the global batch of {batch} windows does not split over {env.world_size} "
            f"processes (WORLD_SIZE={env.world_size}): use a world size that divides {batch}"
        )
    return batch // env.world_size


def start(env: DistEnv) -> None:
    """Join the process group (``env://`` rendezvous) when the job is distributed."""
    if not env.distributed or dist.is_initialized():
        return
    if env.device.type == "cuda":
        torch.cuda.set_device(env.device)
    dist.init_process_group(env.backend, timeout=TIMEOUT)


def stop(env: DistEnv) -> None:
    """Leave the process group (a no-op for one plain process)."""
    if env.distributed and dist.is_initialized():
        dist.destroy_process_group()


def local_rows(t: Tensor, env: DistEnv) -> Tensor:
    """The calling rank's rows of a global batch (all of them for one process)."""
    if env.world_size == 1:
        return t
    n = check_split(t.shape[0], env)
    return t[env.rank * n : (env.rank + 1) * n]


def global_mean(values: tuple[float, ...], env: DistEnv) -> tuple[float, ...]:
    """The ranks' values averaged (float64 sum over ranks, divided by ``W``); as is for one."""
    if not env.distributed:
        return values
    t = torch.tensor(values, dtype=torch.float64, device=env.device)
    dist.all_reduce(t)
    return tuple(float(v) for v in (t / env.world_size).cpu())


def broadcast(obj: Any, env: DistEnv) -> Any:
    """Rank 0's ``obj`` on every rank (picklable; as is for one process)."""
    if not env.distributed:
        return obj
    box = [obj if env.is_main else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def wrap(model: nn.Module, env: DistEnv) -> nn.Module:
    """``model`` in DDP when distributed (every rank starts from rank 0's parameters)."""
    if not env.distributed:
        return model
    ids = [env.device.index] if env.device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids)
