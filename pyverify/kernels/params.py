"""Torch parameter containers for batched multi-head PLGA.

The per-head metric-learner parameters of the float64 reference
(:class:`pyverify.reference.PLGAParams`, one object per head) are stacked along
a leading head axis, so that the metric learner runs as batched matrix
products over (heads, batch x rows) with no per-batch tiling and no Python loop
over heads. Row-vector convention as in the reference: ``x @ W1 + b1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import torch

from pyverify.kernels.validation import check_device_dtype, validate_reference_head

__all__ = ["HeadParams", "SwiGLUParams", "UnitParams", "from_reference"]


def _to(x: torch.Tensor, device: torch.device | str | None, dtype: torch.dtype | None):
    return x.to(device=device, dtype=dtype)


@dataclass(frozen=True)
class SwiGLUParams:
    """One SwiGLU block per head: ``(silu(x @ W1 + b1) * (x @ W2 + b2)) @ W3 + b3``.

    Attributes
    ----------
    W1, W2 : torch.Tensor
        (H, dk, a_dff).
    b1, b2 : torch.Tensor
        (H, a_dff).
    W3 : torch.Tensor
        (H, a_dff, dk).
    b3 : torch.Tensor
        (H, dk).
    """

    W1: torch.Tensor
    b1: torch.Tensor
    W2: torch.Tensor
    b2: torch.Tensor
    W3: torch.Tensor
    b3: torch.Tensor

    def to(self, device=None, dtype=None) -> SwiGLUParams:
        """Return a copy on ``device`` with ``dtype``."""
        return SwiGLUParams(*(_to(getattr(self, f.name), device, dtype) for f in fields(self)))


@dataclass(frozen=True)
class UnitParams:
    """One residual unit of the metric learner: ``LN(X + f_k(...f_1(X)))``.

    Attributes
    ----------
    dense : list of SwiGLUParams
        The SwiGLU blocks, applied in order.
    ln_gamma, ln_beta : torch.Tensor
        (H, dk) LayerNorm affine parameters.
    """

    dense: list[SwiGLUParams]
    ln_gamma: torch.Tensor
    ln_beta: torch.Tensor

    def to(self, device=None, dtype=None) -> UnitParams:
        """Return a copy on ``device`` with ``dtype``."""
        return UnitParams(
            [d.to(device, dtype) for d in self.dense],
            _to(self.ln_gamma, device, dtype),
            _to(self.ln_beta, device, dtype),
        )


@dataclass(frozen=True)
class HeadParams:
    """Metric-learner parameters of H PLGA heads, stacked along axis 0.

    Attributes
    ----------
    ln0_gamma, ln0_beta : torch.Tensor
        (H, dk), LayerNorm of the rows of ``D = Q^T Q``.
    reslayers : list of UnitParams
        The residual units.
    W, b, P, a, b_a : torch.Tensor
        (H, dk, dk): ``A_LM = iSwiGLU(W A + b) + eps``, ``A_P = A_LM ** P``,
        ``G = a A_P + b_a``.
    ln_eps : float
        LayerNorm epsilon (1e-6).
    metric_eps : float
        The ``eps`` added to iSwiGLU (1e-9).
    """

    ln0_gamma: torch.Tensor
    ln0_beta: torch.Tensor
    reslayers: list[UnitParams]
    W: torch.Tensor
    b: torch.Tensor
    P: torch.Tensor
    a: torch.Tensor
    b_a: torch.Tensor
    ln_eps: float = 1e-6
    metric_eps: float = 1e-9
    _cache: dict[Any, HeadParams] = field(default_factory=dict, repr=False, compare=False)

    @property
    def num_heads(self) -> int:
        """Number of heads H."""
        return int(self.W.shape[0])

    @property
    def dk(self) -> int:
        """Head dimension dk."""
        return int(self.W.shape[-1])

    @property
    def dtype(self) -> torch.dtype:
        """The parameters' dtype."""
        return self.W.dtype

    @property
    def device(self) -> torch.device:
        """The parameters' device."""
        return self.W.device

    def to(self, device=None, dtype=None) -> HeadParams:
        """Return the parameters on ``device`` with ``dtype`` (memoised, no copy if equal).

        Parameters
        ----------
        device : torch.device or str, optional
            Target device (default: unchanged).
        dtype : torch.dtype, optional
            Target dtype (default: unchanged).

        Returns
        -------
        HeadParams
            ``self`` when nothing changes, else a (cached) converted copy.
        """
        dev = torch.device(device) if device is not None else self.device
        dt = dtype if dtype is not None else self.dtype
        if dev == self.device and dt == self.dtype:
            return self
        key = (str(dev), dt)
        if key not in self._cache:
            self._cache[key] = replace(
                self,
                ln0_gamma=_to(self.ln0_gamma, dev, dt),
                ln0_beta=_to(self.ln0_beta, dev, dt),
                reslayers=[u.to(dev, dt) for u in self.reslayers],
                W=_to(self.W, dev, dt),
                b=_to(self.b, dev, dt),
                P=_to(self.P, dev, dt),
                a=_to(self.a, dev, dt),
                b_a=_to(self.b_a, dev, dt),
                _cache={},
            )
        return self._cache[key]

    def head(self, h: int) -> HeadParams:
        """Return the parameters of head ``h`` alone (H = 1)."""
        sl = slice(h, h + 1)
        return replace(
            self,
            ln0_gamma=self.ln0_gamma[sl],
            ln0_beta=self.ln0_beta[sl],
            reslayers=[
                UnitParams(
                    [SwiGLUParams(*(getattr(d, f.name)[sl] for f in fields(d))) for d in u.dense],
                    u.ln_gamma[sl],
                    u.ln_beta[sl],
                )
                for u in self.reslayers
            ],
            W=self.W[sl],
            b=self.b[sl],
            P=self.P[sl],
            a=self.a[sl],
            b_a=self.b_a[sl],
            _cache={},
        )


def _stack(arrs: Sequence[Any], device, dtype) -> torch.Tensor:
    return torch.as_tensor(np.stack([np.asarray(x, dtype=np.float64) for x in arrs])).to(
        device=device, dtype=dtype
    )


def from_reference(
    p: Any | Sequence[Any],
    device: torch.device | str | None = "cpu",
    dtype: torch.dtype = torch.float64,
) -> HeadParams:
    """Build stacked torch parameters from reference ``PLGAParams``.

    Parameters
    ----------
    p : PLGAParams or sequence of PLGAParams
        One reference parameter object per head (a single object means H = 1).
        Any object with the reference's field names works.
    device : torch.device or str, default "cpu"
        Target device.
    dtype : torch.dtype, default torch.float64
        Target dtype. For bfloat16/float16 inputs the kernels run the metric
        learner in float32, so float32 (or float64) parameters are the natural
        choice; they are converted (and memoised) on use.

    Returns
    -------
    HeadParams
        Parameters with a leading head axis H.

    Raises
    ------
    ValueError
        If the heads disagree in structure (dk, a_dff, number of units/blocks).
    """
    heads = list(p) if isinstance(p, list | tuple) else [p]
    if not heads:
        raise ValueError("p must hold at least one head's PLGAParams")
    check_device_dtype(device, dtype)
    dk0 = None
    for i, hp in enumerate(heads):  # shapes, types, finiteness, naming the field
        dk0, _ = validate_reference_head(hp, f"p[{i}]" if len(heads) > 1 else "p", dk0)
    first = heads[0]
    n_units = len(first.reslayers)
    for i, hp in enumerate(heads):
        units_i = hp.reslayers
        if len(units_i) != n_units or any(
            len(u.dense) != len(u0.dense) for u, u0 in zip(units_i, first.reslayers, strict=True)
        ):
            raise ValueError(f"p[{i}] has a different metric-learner structure from p[0]")
        if np.shape(hp.W) != np.shape(first.W):
            raise ValueError(f"p[{i}].W has shape {np.shape(hp.W)}; p[0].W has {np.shape(first.W)}")

    def st(get) -> torch.Tensor:
        return _stack([get(hp) for hp in heads], device, dtype)

    units = []
    for ui, u0 in enumerate(first.reslayers):
        dense = []
        for di in range(len(u0.dense)):
            dense.append(
                SwiGLUParams(
                    *(
                        st(lambda hp, n=name, ui=ui, di=di: getattr(hp.reslayers[ui].dense[di], n))
                        for name in ("W1", "b1", "W2", "b2", "W3", "b3")
                    )
                )
            )
        units.append(
            UnitParams(
                dense,
                st(lambda hp, ui=ui: hp.reslayers[ui].ln_gamma),
                st(lambda hp, ui=ui: hp.reslayers[ui].ln_beta),
            )
        )
    return HeadParams(
        ln0_gamma=st(lambda hp: hp.ln0_gamma),
        ln0_beta=st(lambda hp: hp.ln0_beta),
        reslayers=units,
        W=st(lambda hp: hp.W),
        b=st(lambda hp: hp.b),
        P=st(lambda hp: hp.P),
        a=st(lambda hp: hp.a),
        b_a=st(lambda hp: hp.b_a),
        ln_eps=float(getattr(first, "ln_eps", 1e-6)),
        metric_eps=float(getattr(first, "metric_eps", 1e-9)),
    )
