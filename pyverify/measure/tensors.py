"""The model's deductive tensors on a token set, stacked per sequence (float64).

Also the two ways of getting the float64 model every measurement runs on: a
copy of a study's model (:func:`as_float64`) and any ``pldr_model_v510`` state
dict loaded into the study's model class (:func:`load_model`).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from pyverify.measure.inputs import TokenSet
from pyverify.reference.v510 import CheckpointError, check_layout, load_state_dict
from pyverify.trainable.decoder import DEDUCTIVE, ModelConfig, PLDRDecoder

__all__ = ["as_float64", "config_of", "deductive_stack", "load_model"]

_DENSITY = {"rho": "D", "rho0": "D0"}


def as_float64(model: PLDRDecoder) -> PLDRDecoder:
    """A float64 copy of ``model`` in eval mode, no gradients (the weights converted exactly)."""
    return copy.deepcopy(model).double().eval().requires_grad_(False)


def config_of(sizes: Mapping[str, int]) -> ModelConfig:
    """The :class:`ModelConfig` of sizes inferred by :func:`pyverify.reference.v510.infer_sizes`."""
    return ModelConfig(
        vocab=sizes["input_vocab_size"],
        d_model=sizes["d_model"],
        num_heads=sizes["num_heads"],
        num_layers=sizes["num_layers"],
        dff=sizes["dff"],
        a_dff=sizes["A_dff"],
        num_reslayer=sizes["num_reslayerA"],
        num_dense=sizes["num_denseA"],
    )


def load_model(source: str | os.PathLike[str] | Mapping[str, Any]) -> PLDRDecoder:
    """Load any ``pldr_model_v510`` state dict into the study's model class (float64, eval).

    Parameters
    ----------
    source : str, path or mapping
        A ``torch.save`` file (a state dict, or the author's checkpoint dict with
        ``model_state_dict``, as ``pyverify collapse`` writes it), or the mapping.

    Raises
    ------
    CheckpointError
        Unreadable file, layout mismatch (keys named) or a non-finite tensor.
    """
    where = str(source) if isinstance(source, str | os.PathLike) else "state dict"
    sd = load_state_dict(source)
    z = check_layout(sd, where)
    sd = {k: v for k, v in sd.items() if ".rotary_embedding." not in k}
    for k, v in sd.items():
        if not isinstance(v, Tensor) or not v.is_floating_point():
            raise CheckpointError(f"{where}: {k} is not a floating tensor")
        if not bool(torch.isfinite(v).all()):
            raise CheckpointError(f"{where}: {k} holds inf or NaN")
    try:
        cfg = config_of(z).validate()
    except ValueError as exc:
        raise CheckpointError(f"{where}: sizes the study's model cannot take ({exc})") from None
    model = PLDRDecoder(cfg, init=False).double()
    model.load_state_dict(sd, strict=True)  # copy_ converts every dtype to float64 exactly
    return model.eval().requires_grad_(False)


@torch.no_grad()
def deductive_stack(
    model64: PLDRDecoder, seqs: TokenSet, names: tuple[str, ...] = DEDUCTIVE
) -> dict[str, Tensor]:
    """Per-sequence tensors: name -> ``(N, L, H, dk, dk)`` float64, in ``seqs``' order.

    ``names`` may hold the deductive tensors ``A, A_LM, A_P, G``, the Gram
    ``D = Q^T Q`` of the rotated queries, and the density operators ``rho =
    D / S`` (rotated queries) and ``rho0`` (unrotated), the normalised query
    Grams of the rotary twirl.
    """
    capture = "rho0" in names
    parts: dict[str, list[Tensor]] = {t: [] for t in names}
    for group in seqs:
        _, deds, _ = model64(group, capture=capture)
        S = group.shape[1]
        for t in names:
            src = _DENSITY.get(t, t)
            x = torch.stack([d[src] for d in deds], dim=1)
            parts[t].append(x / S if t in _DENSITY else x)
    return {t: v[0] if len(v) == 1 else torch.cat(v) for t, v in parts.items()}
