"""Shape, dtype and device checks for the torch kernels.

Every check raises ``TypeError`` (not a tensor, wrong dtype) or ``ValueError``
(wrong shape, mismatched devices) with the argument's name and the expected
shape/dtype in the message. Non-finite intermediate results (the power law
``A_LM ** P`` overflowing the working precision) raise
:class:`PowerLawOverflowError`, a ``ValueError`` subclass, mirroring the float64
reference (``pyverify.reference.validation.PowerLawOverflowError``): nothing
returns inf/NaN silently.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from pyverify.errors import NonFiniteStageError, PowerLawOverflowError

__all__ = [
    "FLOAT_DTYPES",
    "NonFiniteStageError",
    "PowerLawOverflowError",
    "check_finite",
    "check_g",
    "check_qkv",
    "check_tensor",
    "compute_dtype",
]

#: Floating dtypes the kernels accept.
FLOAT_DTYPES: tuple[torch.dtype, ...] = (
    torch.float64,
    torch.float32,
    torch.bfloat16,
    torch.float16,
)


def _shape_str(shape: Sequence[object]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + (",)" if len(shape) == 1 else ")")


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Return the dtype used for statistics and the metric learner.

    float64 stays float64; float32, bfloat16 and float16 all compute in float32
    (as torch's fused SDPA kernels do for softmax statistics).

    Parameters
    ----------
    dtype : torch.dtype
        The input dtype.

    Returns
    -------
    torch.dtype
        ``torch.float64`` or ``torch.float32``.
    """
    return torch.float64 if dtype == torch.float64 else torch.float32


def check_tensor(
    x: object,
    name: str,
    *,
    shape: Sequence[int | str | None] | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | None = None,
) -> torch.Tensor:
    """Check that ``x`` is a floating tensor of the expected shape/dtype/device.

    Parameters
    ----------
    x : object
        The value to check.
    name : str
        Argument name used in error messages.
    shape : sequence of int, str or None, optional
        Expected shape; ``int`` entries must match, ``str``/``None`` are free
        (a string is the symbol shown in messages).
    dtype : torch.dtype, optional
        Required dtype (default: any of :data:`FLOAT_DTYPES`).
    device : torch.device, optional
        Required device.

    Returns
    -------
    torch.Tensor
        ``x`` unchanged.

    Raises
    ------
    TypeError
        If ``x`` is not a tensor or has the wrong dtype.
    ValueError
        If the shape or device is wrong.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor; got {type(x).__name__}")
    if dtype is not None and x.dtype != dtype:
        raise TypeError(f"{name} must have dtype {dtype}; got {x.dtype}")
    if x.dtype not in FLOAT_DTYPES:
        allowed = ", ".join(str(d) for d in FLOAT_DTYPES)
        raise TypeError(f"{name} must have a floating dtype ({allowed}); got {x.dtype}")
    if shape is not None:
        shown = _shape_str([s if s is not None else "?" for s in shape])
        if x.dim() != len(shape):
            raise ValueError(f"{name} must have shape {shown}; got shape {tuple(x.shape)}")
        for axis, (want, got) in enumerate(zip(shape, x.shape, strict=True)):
            if isinstance(want, int) and want != got:
                raise ValueError(
                    f"{name} must have shape {shown}; got shape {tuple(x.shape)} "
                    f"(axis {axis} is {got}, expected {want})"
                )
    if device is not None and x.device != device:
        raise ValueError(f"{name} must be on device {device}; got {x.device}")
    return x


def check_qkv(
    q: object, k: object, v: object, *, causal: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Check (B, H, S, dk) queries/keys and (B, H, S_k, dv) values.

    Parameters
    ----------
    q, k, v : torch.Tensor
        ``q`` (B, H, S_q, dk), ``k`` (B, H, S_k, dk), ``v`` (B, H, S_k, dv),
        one floating dtype and one device.
    causal : bool, default True
        With a causal mask ``S_q <= S_k`` is required (queries are the last
        ``S_q`` positions of the key sequence).

    Returns
    -------
    tuple of torch.Tensor
        ``(q, k, v)`` unchanged.

    Raises
    ------
    TypeError
        If an argument is not a floating tensor or the dtypes differ.
    ValueError
        If shapes or devices are inconsistent.
    """
    q = check_tensor(q, "q", shape=("B", "H", "S_q", "dk"))
    B, H, S_q, dk = q.shape
    k = check_tensor(k, "k", shape=(B, H, "S_k", dk), dtype=q.dtype, device=q.device)
    S_k = k.shape[2]
    v = check_tensor(v, "v", shape=(B, H, S_k, "dv"), dtype=q.dtype, device=q.device)
    if S_q == 0 or S_k == 0 or dk == 0:
        raise ValueError(f"q and k must be non-empty; got q {tuple(q.shape)}, k {tuple(k.shape)}")
    if causal and S_q > S_k:
        raise ValueError(
            f"with causal=True, q (S_q={S_q}) must not have more rows than k (S_k={S_k})"
        )
    return q, k, v


def check_g(G: object, name: str, *, B: int, H: int, dk: int, like: torch.Tensor) -> torch.Tensor:
    """Check an energy-curvature operator of shape (dk, dk), (H, dk, dk) or (B, H, dk, dk).

    Parameters
    ----------
    G : torch.Tensor
        The operator.
    name : str
        Argument name used in error messages.
    B, H, dk : int
        Batch size, number of heads and head dimension.
    like : torch.Tensor
        A tensor whose device ``G`` must share.

    Returns
    -------
    torch.Tensor
        ``G`` reshaped (as a view) to 4 dimensions broadcastable to (B, H, dk, dk).

    Raises
    ------
    TypeError
        If ``G`` is not a floating tensor.
    ValueError
        If the shape or device is wrong.
    """
    G = check_tensor(G, name, device=like.device)
    want = f"(dk, dk), (H, dk, dk) or (B, H, dk, dk) = ({dk}, {dk}), ({H}, {dk}, {dk}) or "
    want += f"({B}, {H}, {dk}, {dk})"
    ok = (
        (G.dim() == 2 and tuple(G.shape) == (dk, dk))
        or (G.dim() == 3 and tuple(G.shape) == (H, dk, dk))
        or (G.dim() == 4 and tuple(G.shape) in ((B, H, dk, dk), (1, H, dk, dk)))
    )
    if not ok:
        raise ValueError(f"{name} must have shape {want}; got shape {tuple(G.shape)}")
    while G.dim() < 4:
        G = G.unsqueeze(0)
    return G


def check_finite(x: torch.Tensor, stage: str, *, power_law: bool = True) -> torch.Tensor:
    """Raise if ``x`` has an inf/NaN entry; otherwise return ``x``.

    Costs one device synchronisation on GPU (a reduction read back to the host).

    Parameters
    ----------
    x : torch.Tensor
        A stage's result.
    stage : str
        The stage's name, reported in the error.
    power_law : bool, default True
        Raise :class:`PowerLawOverflowError` (power law or later) instead of the
        base :class:`NonFiniteStageError`.

    Returns
    -------
    torch.Tensor
        ``x`` unchanged.

    Raises
    ------
    NonFiniteStageError
        If any entry is inf/NaN.
    """
    finite = torch.isfinite(x)
    if not bool(finite.all()):
        bad = int((~finite).sum())
        cls = PowerLawOverflowError if power_law else NonFiniteStageError
        raise cls(stage, f"{bad} non-finite entries ({x.dtype} overflow); inputs too large")
    return x
