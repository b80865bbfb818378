"""The rotary twirl: RoPE-commutant figures of G and of the density operator.

The commutant of the RoPE rotations (distinct plane frequencies) is the set of
matrices whose 2 x 2 diagonal blocks are ``x I + y J`` and whose other entries
are 0; ``Pi`` is the orthogonal (Frobenius) projection onto it
(:func:`pyverify.kernels.project_to_rope_commutant`), which is the author's
``audit_lib.commutant_residual`` (the off-frequency entries zeroed in the RoPE
eigenbasis; the basis is unitary, so the Frobenius norms agree).

* :func:`commutant_residual`: ``||M - Pi M||_F / ||M||_F``;
* :func:`density_twirl`: the author's audit (``audit.py``, section D) on the
  DENSITY OPERATOR, the normalised query Gram ``rho = Q^T Q / S`` of each
  head, pre-rotation (``rho0``) and rotated (``rho``): the energy fraction in
  the commutant of each, and the suppression of the off-commutant energy by the
  rotation, ``1 - ||rho - Pi rho||^2 / ||rho0 - Pi rho0||^2``. As the author's
  "prompt-pooled" statistic, the energies are summed over the sequences before
  the ratio (ratios do not commute with pooling); here per layer x head (the
  audit: head 0 of each layer).
"""

from __future__ import annotations

from torch import Tensor

from pyverify.kernels.collapsed import project_to_rope_commutant
from pyverify.measure.order import fro, safe_div

__all__ = ["commutant_residual", "density_twirl"]


def commutant_residual(M: Tensor) -> Tensor:
    """Relative distance of ``M (..., dk, dk)`` from the RoPE commutant (``dk`` even, finite)."""
    return safe_div(fro(M - project_to_rope_commutant(M)), fro(M))


def _energies(rho: Tensor) -> tuple[Tensor, Tensor]:
    """Commutant and off-commutant energy of ``rho (N, L, H, dk, dk)``, summed over N."""
    P = project_to_rope_commutant(rho)
    return (fro(P) ** 2).sum(0), (fro(rho - P) ** 2).sum(0)


def density_twirl(rho: Tensor, rho0: Tensor) -> dict[str, list]:
    """The twirl of the density operator (module docstring); values ``(L, H)`` nested lists.

    Parameters
    ----------
    rho, rho0 : torch.Tensor
        ``(N, L, H, dk, dk)`` density operators of the rotated and unrotated queries.
    """
    comm, off = _energies(rho)
    comm0, off0 = _energies(rho0)
    return {
        "commutant_fraction": safe_div(comm, comm + off).tolist(),
        "commutant_fraction_unrotated": safe_div(comm0, comm0 + off0).tolist(),
        "offcommutant_suppression": (1.0 - safe_div(off, off0)).tolist(),
    }
