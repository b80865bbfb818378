"""Load a ``pldr_model_v510.PLDR_Model`` checkpoint as a :class:`PLGADecoder`.

The supported key layout, size inference and error messages are those of
:mod:`pyverify.reference.v510` (its docstring lists every key and shape): the
state dict is read and checked there, then converted with
:func:`pyverify.kernels.model.from_reference`. The metric learner of each layer
(``mha1.layernorm1``, ``mha1.reslayerAs``) is loaded in the shared form (one
GEMM per weight over all B*H*dk rows); ``plgatt_layer.{Wlst, blst, pwlst, alst,
balst}`` become the per-head ``W, b, P, a, b_a``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import torch

from pyverify.kernels.model import PLGADecoder, from_reference
from pyverify.kernels.validation import FLOAT_DTYPES, check_device_dtype
from pyverify.reference.v510 import CheckpointError, load_state_dict, load_v510_params

__all__ = ["CheckpointError", "load_v510"]


def _source_dtype(sd: Mapping[str, Any]) -> torch.dtype:
    emb = sd.get("decoder.embedding.weight")
    if isinstance(emb, torch.Tensor) and emb.dtype in FLOAT_DTYPES:
        return emb.dtype
    return torch.float32


def load_v510(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> PLGADecoder:
    """Load a ``pldr_model_v510`` state dict into the optimised decoder.

    Parameters
    ----------
    source : str, path or mapping
        Path to a ``torch.save``d state dict of ``PLDR_Model`` (or the author's
        checkpoint dict with ``model_state_dict``), or the mapping itself.
    device : torch.device or str, optional
        Target device (default CPU).
    dtype : torch.dtype, optional
        Parameter and activation dtype (default: the checkpoint's, float32 for
        non-tensor values). For bfloat16/float16 the metric learner and ``G``
        still run in float32.

    Returns
    -------
    PLGADecoder
        The model, sizes inferred from the tensor shapes.

    Raises
    ------
    CheckpointError
        Unreadable file, missing/unexpected keys or wrong shapes (named).
    TypeError, ValueError
        An unsupported ``dtype`` or ``device`` (as :func:`from_reference`), checked
        before the file is read.
    """
    check_device_dtype(device, torch.float32 if dtype is None else dtype)  # before the I/O
    dev = torch.device("cpu" if device is None else device)
    sd = load_state_dict(source)
    name = str(source) if isinstance(source, str | os.PathLike) else None
    params, _ = load_v510_params(sd, name=name)
    return from_reference(params, dev, dtype or _source_dtype(sd))
