"""Rotary position embedding (RoPE) in torch, matching the reference.

Planes are ADJACENT coordinate pairs (2p, 2p+1), ``theta_p = base^(-2p/dk)``,
base 10000. A row ``q`` at position ``n`` becomes ``q R_n^T`` with ``R_n``
block diagonal, blocks ``rot(n theta_p) = [[cos, -sin], [sin, cos]]``:
``out[2p] = cos q[2p] - sin q[2p+1]``, ``out[2p+1] = sin q[2p] + cos q[2p+1]``.
Angles are formed in float64 and the rotation is evaluated in float32 (or
float64) and rounded once to the input dtype.
"""

from __future__ import annotations

import torch

from pyverify.errors import InputValueError
from pyverify.kernels.validation import check_tensor, compute_dtype

__all__ = ["RopeTable", "apply_rope", "rope_angles", "rope_matrix"]


def rope_angles(positions: torch.Tensor, dk: int, *, base: float = 10000.0) -> torch.Tensor:
    """Return the float64 angles ``n * theta_p`` for each position n and plane p.

    Parameters
    ----------
    positions : torch.Tensor
        1-D integer or float positions (length S).
    dk : int
        Head dimension (even).
    base : float, default 10000.0
        RoPE base.

    Returns
    -------
    torch.Tensor
        (S, dk // 2) float64 angles on ``positions.device``.
    """
    if dk % 2:
        raise InputValueError(f"dk must be even (RoPE rotates coordinate pairs); got {dk}")
    p = torch.arange(dk // 2, dtype=torch.float64, device=positions.device)
    theta = base ** (-2.0 * p / dk)
    return positions.to(torch.float64)[:, None] * theta[None, :]


def apply_rope(x: torch.Tensor, *, offset: int = 0, base: float = 10000.0) -> torch.Tensor:
    """Rotate rows of ``x`` (..., S, dk) at positions ``offset .. offset+S-1``.

    Parameters
    ----------
    x : torch.Tensor
        (..., S, dk) with even dk, any floating dtype; the sequence axis is -2.
    offset : int, default 0
        Position of the first row (the KV-cache length when decoding).
    base : float, default 10000.0
        RoPE base.

    Returns
    -------
    torch.Tensor
        Rotated tensor, same shape, dtype and device as ``x``.
    """
    check_tensor(x, "x")
    if x.dim() < 2:
        raise InputValueError(f"x must have shape (..., S, dk); got shape {tuple(x.shape)}")
    S, dk = x.shape[-2], x.shape[-1]
    cdt = compute_dtype(x.dtype)
    ang = rope_angles(torch.arange(offset, offset + S, device=x.device), dk, base=base)
    cos, sin = torch.cos(ang).to(cdt), torch.sin(ang).to(cdt)
    xc = x.to(cdt)
    x0, x1 = xc[..., 0::2], xc[..., 1::2]
    out = torch.stack((cos * x0 - sin * x1, sin * x0 + cos * x1), dim=-1).flatten(-2)
    return out.to(x.dtype)


class RopeTable:
    """The rotations of positions ``0 .. capacity - 1`` as complex numbers, grown on demand.

    Row ``n`` holds ``cos(n theta_p) + i sin(n theta_p)`` per plane ``p``: the angles
    in float64 and their cosines and sines rounded once to the compute dtype, the
    same numbers :func:`apply_rope` forms. A decode step rotates its rows with one
    complex product (:meth:`rotate_`) instead of forming the angles again.

    Parameters
    ----------
    dk : int
        Head dimension (even).
    base : float
        RoPE base.
    dtype : torch.dtype
        The compute dtype (float32 or float64).
    device : torch.device
        Where the table lives.
    """

    def __init__(self, dk: int, base: float, dtype: torch.dtype, device: torch.device) -> None:
        self.dk, self.base, self.dtype, self.device = dk, base, dtype, device
        self.table = self._build(16)

    def _build(self, capacity: int) -> torch.Tensor:
        pos = torch.arange(capacity, device=self.device)
        ang = rope_angles(pos, self.dk, base=self.base)
        return torch.complex(torch.cos(ang).to(self.dtype), torch.sin(ang).to(self.dtype))

    def at(self, position: int) -> torch.Tensor:
        """The rotation of ``position``: (dk // 2,) complex."""
        if position >= self.table.shape[0]:
            self.table = self._build(2 * (position + 1))
        return self.table[position]

    def rotate_(self, x: torch.Tensor, position: int) -> torch.Tensor:
        """Rotate the rows of ``x`` (..., dk), all at ``position``, in place; return ``x``.

        ``x`` must have a unit last stride and even other strides (a slice of a row
        buffer qualifies). Other dtypes than the table's are rotated in it and rounded
        once, as :func:`apply_rope` does.
        """
        rot = self.at(position)
        pairs = x.unflatten(-1, (self.dk // 2, 2))
        if x.dtype == self.dtype:
            torch.view_as_complex(pairs).mul_(rot)
            return x
        wide = torch.view_as_complex(pairs.to(self.dtype)) * rot
        pairs.copy_(torch.view_as_real(wide))
        return x


def rope_matrix(n: int, dk: int, *, base: float = 10000.0, dtype=torch.float64, device=None):
    """Return the block-diagonal rotation ``R_n`` (dk, dk), so that ``q R_n^T`` rotates ``q``.

    Parameters
    ----------
    n : int
        Position.
    dk : int
        Head dimension (even).
    base : float, default 10000.0
        RoPE base.
    dtype : torch.dtype, default torch.float64
        Result dtype.
    device : torch.device, optional
        Result device.

    Returns
    -------
    torch.Tensor
        (dk, dk) orthogonal matrix.
    """
    ang = rope_angles(torch.tensor([n], dtype=torch.float64, device=device), dk, base=base)[0]
    c, s = torch.cos(ang), torch.sin(ang)
    R = torch.zeros(dk, dk, dtype=torch.float64, device=device)
    i = torch.arange(dk // 2, device=device)
    R[2 * i, 2 * i] = c
    R[2 * i, 2 * i + 1] = -s
    R[2 * i + 1, 2 * i] = s
    R[2 * i + 1, 2 * i + 1] = c
    return R.to(dtype)
