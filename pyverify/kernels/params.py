"""Torch parameter containers for batched multi-head PLGA.

Two forms of the metric learner (the row LayerNorm of ``D`` and the residual
SwiGLU units, steps 2-3 of ``plga-spec.md``):

* shared (the model's form, ``pldr_model_v510``): one set of weights used by
  every head of a layer; its tensors carry no head axis (``ln0_gamma`` (dk,),
  ``W1`` (dk, a_dff), ...), and the learner runs as ONE matrix product per
  weight over all B*H*dk rows;
* per head (the generalisation): each head owns a learner; the tensors are
  stacked along a leading head axis (``ln0_gamma`` (H, dk), ``W1``
  (H, dk, a_dff), ...) and the learner runs as batched products over the
  head axis, with no per-batch tiling and no Python loop over heads.

``W, b, P, a, b_a`` are per head in both forms, (H, dk, dk). Row-vector
convention as in the reference: ``x @ W1 + b1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import torch

from pyverify.errors import InputValueError
from pyverify.kernels.validation import check_device_dtype, validate_reference_head
from pyverify.reference.params import learners_equal

__all__ = [
    "SWIGLU_FIELDS",
    "FFNParams",
    "HeadParams",
    "SwiGLUParams",
    "UnitParams",
    "from_reference",
    "learners_equal",
]


def _to(x: torch.Tensor, device: torch.device | str | None, dtype: torch.dtype | None):
    return x.to(device=device, dtype=dtype)


@dataclass(frozen=True)
class SwiGLUParams:
    """A SwiGLU block ``(silu(x @ W1 + b1) * (x @ W2 + b2)) @ W3 + b3``.

    Used for the metric learner (shared: no head axis; per head: a leading
    head axis H) and for the decoder's feed-forward network (no head axis,
    ``d_in = d_out = d_model``, hidden width dff).

    Attributes
    ----------
    W1, W2 : torch.Tensor
        ([H,] d_in, d_hidden).
    b1, b2 : torch.Tensor
        ([H,] d_hidden).
    W3 : torch.Tensor
        ([H,] d_hidden, d_out).
    b3 : torch.Tensor
        ([H,] d_out).
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


FFNParams = SwiGLUParams
"""The decoder's feed-forward SwiGLU: the same container, no head axis."""

#: The fields of a SwiGLU block, in order (``W1, b1, W2, b2, W3, b3``).
SWIGLU_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(SwiGLUParams))


@dataclass(frozen=True)
class UnitParams:
    """One residual unit of the metric learner: ``LN(X + f_k(...f_1(X)))``.

    Attributes
    ----------
    dense : list of SwiGLUParams
        The SwiGLU blocks, applied in order.
    ln_gamma, ln_beta : torch.Tensor
        (dk,) shared or (H, dk) per head: LayerNorm affine parameters.
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
    """Parameters of the H PLGA heads of one layer.

    The learner (``ln0_*`` and ``reslayers``) is shared by all heads when its
    tensors have no head axis (:attr:`shared_learner`), else per head.

    Attributes
    ----------
    ln0_gamma, ln0_beta : torch.Tensor
        (dk,) shared or (H, dk) per head: LayerNorm of the rows of ``D = Q^T Q``.
    reslayers : list of UnitParams
        The residual units (same form as ``ln0_*``).
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
    def shared_learner(self) -> bool:
        """True when one metric learner serves all heads (no head axis)."""
        return self.ln0_gamma.dim() == 1

    def per_head(self) -> HeadParams:
        """Return the per-head form: a shared learner replicated along the head axis.

        Returns
        -------
        HeadParams
            ``self`` if the learner is already per head; else a copy whose
            learner tensors are (H, ...) replicas (same results, the
            generalisation's layout).
        """
        if not self.shared_learner:
            return self
        H = self.num_heads

        def rep(x: torch.Tensor) -> torch.Tensor:
            return x.unsqueeze(0).repeat(H, *([1] * x.dim()))

        return replace(
            self,
            ln0_gamma=rep(self.ln0_gamma),
            ln0_beta=rep(self.ln0_beta),
            reslayers=[
                UnitParams(
                    [SwiGLUParams(*(rep(getattr(d, f.name)) for f in fields(d))) for d in u.dense],
                    rep(u.ln_gamma),
                    rep(u.ln_beta),
                )
                for u in self.reslayers
            ],
            _cache={},
        )

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
        """Return the parameters of head ``h`` alone (H = 1; a shared learner is kept)."""
        sl = slice(h, h + 1)
        new = {name: getattr(self, name)[sl] for name in ("W", "b", "P", "a", "b_a")}
        if not self.shared_learner:
            new.update(
                ln0_gamma=self.ln0_gamma[sl],
                ln0_beta=self.ln0_beta[sl],
                reslayers=[
                    UnitParams(
                        [
                            SwiGLUParams(*(getattr(d, f.name)[sl] for f in fields(d)))
                            for d in u.dense
                        ],
                        u.ln_gamma[sl],
                        u.ln_beta[sl],
                    )
                    for u in self.reslayers
                ],
            )
        return replace(self, **new, _cache={})


def _stack(arrs: Sequence[Any], device, dtype) -> torch.Tensor:
    return torch.as_tensor(np.stack([np.asarray(x, dtype=np.float64) for x in arrs])).to(
        device=device, dtype=dtype
    )


def from_reference(
    p: Any | Sequence[Any],
    device: torch.device | str | None = "cpu",
    dtype: torch.dtype = torch.float64,
    *,
    shared: bool | None = None,
) -> HeadParams:
    """Build torch parameters from reference ``PLGAParams``.

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
    shared : bool, optional
        Learner form. ``None`` (default): shared when every head's learner
        equals head 0's (:func:`learners_equal`), else per head. ``True``:
        shared (the heads' learners must be equal). ``False``: per head.

    Returns
    -------
    HeadParams
        Parameters; ``W, b, P, a, b_a`` with a leading head axis H.

    Raises
    ------
    ValueError
        If the heads disagree in structure (dk, a_dff, number of units/blocks),
        or ``shared=True`` and their learners differ.
    """
    heads = list(p) if isinstance(p, list | tuple) else [p]
    if not heads:
        raise InputValueError("p must hold at least one head's PLGAParams")
    check_device_dtype(device, dtype)
    dk0, a_dff0 = None, None
    for i, hp in enumerate(heads):  # shapes, types, finiteness, naming the field
        dk0, a_dff = validate_reference_head(hp, f"p[{i}]" if len(heads) > 1 else "p", dk0)
        if a_dff0 is not None and a_dff != a_dff0:
            raise InputValueError(f"p[{i}] has a_dff = {a_dff}; p[0] has {a_dff0}")
        a_dff0 = a_dff
    first = heads[0]
    n_units = len(first.reslayers)
    for i, hp in enumerate(heads):
        units_i = hp.reslayers
        if len(units_i) != n_units or any(
            len(u.dense) != len(u0.dense) for u, u0 in zip(units_i, first.reslayers, strict=True)
        ):
            raise InputValueError(f"p[{i}] has a different metric-learner structure from p[0]")
    same = learners_equal(heads)
    if shared and not same:
        raise InputValueError("shared=True but the heads' metric learners differ")
    is_shared = same if shared is None else bool(shared)
    learner_heads = heads[:1] if is_shared else heads

    def st(get) -> torch.Tensor:
        return _stack([get(hp) for hp in heads], device, dtype)

    def lt(get) -> torch.Tensor:
        t = _stack([get(hp) for hp in learner_heads], device, dtype)
        return t[0] if is_shared else t

    units = []
    for ui, u0 in enumerate(first.reslayers):
        dense = []
        for di in range(len(u0.dense)):
            dense.append(
                SwiGLUParams(
                    *(
                        lt(lambda hp, n=name, ui=ui, di=di: getattr(hp.reslayers[ui].dense[di], n))
                        for name in SWIGLU_FIELDS
                    )
                )
            )
        units.append(
            UnitParams(
                dense,
                lt(lambda hp, ui=ui: hp.reslayers[ui].ln_gamma),
                lt(lambda hp, ui=ui: hp.reslayers[ui].ln_beta),
            )
        )
    return HeadParams(
        ln0_gamma=lt(lambda hp: hp.ln0_gamma),
        ln0_beta=lt(lambda hp: hp.ln0_beta),
        reslayers=units,
        W=st(lambda hp: hp.W),
        b=st(lambda hp: hp.b),
        P=st(lambda hp: hp.P),
        a=st(lambda hp: hp.a),
        b_a=st(lambda hp: hp.b_a),
        ln_eps=float(getattr(first, "ln_eps", 1e-6)),
        metric_eps=float(getattr(first, "metric_eps", 1e-9)),
    )
