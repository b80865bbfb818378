"""Parameters of one PLGA head (metric learner and power-law operator).

Row-vector convention throughout: a SwiGLU block maps a row ``x`` (length
``dk``) to ``(silu(x @ W1 + b1) * (x @ W2 + b2)) @ W3 + b3``. The ``dk x dk``
matrices ``W``, ``b``, ``P``, ``a``, ``b_a`` enter as in ``plga-spec.md``:
``A_LM = iSwiGLU(W @ A + b) + metric_eps``, ``A_P = A_LM ** P``,
``G = a @ A_P + b_a`` (``W @ A`` is the matrix product with ``W`` on the left,
as in the reference implementation's ``torch.matmul(W, A)``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import NDArray

from pyverify.errors import InputTypeError, InputValueError
from pyverify.reference.validation import (
    as_float_array,
    check_list,
    check_positive_int,
    check_range,
)

__all__ = [
    "LN_EPS",
    "METRIC_EPS",
    "SWIGLU_FIELDS",
    "PLGAParams",
    "ResUnit",
    "SwiGLUBlock",
    "learners_equal",
]

LN_EPS: float = 1e-6
"""LayerNorm epsilon of the reference model."""

METRIC_EPS: float = 1e-9
"""Additive epsilon of the metric tensor, ``A_LM = iSwiGLU(...) + METRIC_EPS``."""

Array = NDArray[np.float64]


@dataclass(frozen=True)
class SwiGLUBlock:
    """One SwiGLU block ``(silu(x @ W1 + b1) * (x @ W2 + b2)) @ W3 + b3``.

    Attributes
    ----------
    W1, W2 : numpy.ndarray
        Input weights, shape ``(d_in, d_hidden)``.
    b1, b2 : numpy.ndarray
        Hidden biases, shape ``(d_hidden,)``.
    W3 : numpy.ndarray
        Output weight, shape ``(d_hidden, d_out)``.
    b3 : numpy.ndarray
        Output bias, shape ``(d_out,)``.
    """

    W1: Array
    b1: Array
    W2: Array
    b2: Array
    W3: Array
    b3: Array

    @classmethod
    def random(
        cls, d_in: int, d_hidden: int, d_out: int, rng: np.random.Generator, bias_scale: float = 0.1
    ) -> SwiGLUBlock:
        """Draw a block with weights ``N(0, 1/fan_in)`` and biases ``N(0, bias_scale^2)``.

        Parameters
        ----------
        d_in, d_hidden, d_out : int
            Input, hidden and output widths.
        rng : numpy.random.Generator
            Source of randomness.
        bias_scale : float, default 0.1
            Standard deviation of the biases.

        Returns
        -------
        SwiGLUBlock
            The block.
        """
        return cls(
            W1=rng.normal(0.0, 1.0 / np.sqrt(d_in), (d_in, d_hidden)),
            b1=rng.normal(0.0, bias_scale, d_hidden),
            W2=rng.normal(0.0, 1.0 / np.sqrt(d_in), (d_in, d_hidden)),
            b2=rng.normal(0.0, bias_scale, d_hidden),
            W3=rng.normal(0.0, 1.0 / np.sqrt(d_hidden), (d_hidden, d_out)),
            b3=rng.normal(0.0, bias_scale, d_out),
        )

    @property
    def d_in(self) -> int:
        """Input width."""
        return int(self.W1.shape[0])

    @property
    def d_hidden(self) -> int:
        """Hidden width."""
        return int(self.W1.shape[1])

    @property
    def d_out(self) -> int:
        """Output width."""
        return int(self.W3.shape[1])

    def validate(self, d_in: int, d_out: int, name: str = "block") -> SwiGLUBlock:
        """Check shapes and finiteness; return a copy with float64 arrays.

        Parameters
        ----------
        d_in, d_out : int
            Expected input and output widths.
        name : str, default "block"
            Prefix for error messages.

        Returns
        -------
        SwiGLUBlock
            The validated block (float64).

        Raises
        ------
        TypeError, ValueError
            On a wrong dtype, shape or a non-finite entry.
        """
        h = np.shape(self.W1)[-1] if np.ndim(self.W1) == 2 else None
        if h is None:
            raise InputValueError(
                f"{name}.W1 must have shape ({d_in}, d_hidden); got {np.shape(self.W1)}"
            )
        return SwiGLUBlock(
            W1=as_float_array(self.W1, f"{name}.W1", shape=(d_in, h)),
            b1=as_float_array(self.b1, f"{name}.b1", shape=(h,)),
            W2=as_float_array(self.W2, f"{name}.W2", shape=(d_in, h)),
            b2=as_float_array(self.b2, f"{name}.b2", shape=(h,)),
            W3=as_float_array(self.W3, f"{name}.W3", shape=(h, d_out)),
            b3=as_float_array(self.b3, f"{name}.b3", shape=(d_out,)),
        )


#: The fields of a SwiGLU block, in order (``W1, b1, W2, b2, W3, b3``).
SWIGLU_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(SwiGLUBlock))


@dataclass(frozen=True)
class ResUnit:
    """One residual unit ``U(X) = LayerNorm_rows(X + f_k(...f_1(X)))``.

    Attributes
    ----------
    dense : list of SwiGLUBlock
        The blocks ``f_1 .. f_k`` (each ``dk -> dk``), applied in order.
    ln_gamma, ln_beta : numpy.ndarray
        LayerNorm scale and shift, shape ``(dk,)``.
    """

    dense: list[SwiGLUBlock]
    ln_gamma: Array
    ln_beta: Array


@dataclass(frozen=True)
class PLGAParams:
    """Learned parameters of one PLGA head (``plga-spec.md``, public API).

    Attributes
    ----------
    ln0_gamma, ln0_beta : numpy.ndarray
        LayerNorm of the rows of the density operator ``D``, shape ``(dk,)``.
    reslayers : list of ResUnit
        The metric learner ``Phi`` (``num_reslayerA`` units).
    W, b : numpy.ndarray
        ``A_LM = iSwiGLU(W @ A + b) + metric_eps``, shape ``(dk, dk)``.
    P : numpy.ndarray
        Entrywise powers, ``A_P = A_LM ** P``, shape ``(dk, dk)``.
    a, b_a : numpy.ndarray
        ``G = a @ A_P + b_a``, shape ``(dk, dk)``.
    ln_eps : float
        LayerNorm epsilon (1e-6).
    metric_eps : float
        Metric-tensor epsilon (1e-9).
    """

    ln0_gamma: Array
    ln0_beta: Array
    reslayers: list[ResUnit]
    W: Array
    b: Array
    P: Array
    a: Array
    b_a: Array
    ln_eps: float = LN_EPS
    metric_eps: float = METRIC_EPS

    @property
    def dk(self) -> int:
        """Head dimension (from ``W``)."""
        return int(np.shape(self.W)[0])

    @classmethod
    def random(
        cls,
        dk: int,
        a_dff: int,
        num_reslayer: int,
        num_dense: int,
        seed: int | None = 0,
        *,
        p_range: tuple[float, float] = (0.5, 1.5),
    ) -> PLGAParams:
        """Draw well-conditioned random parameters.

        Weights are ``N(0, 1/fan_in)`` (``a`` and ``W`` use fan-in ``dk``), biases
        ``N(0, 0.1^2)``, LayerNorm ``gamma = 1 + N(0, 0.1^2)``, ``beta = N(0, 0.1^2)``,
        and the powers ``P`` uniform in ``p_range`` (default ``[0.5, 1.5]``), so
        ``A_LM ** P`` stays far from float64 overflow.

        Parameters
        ----------
        dk : int
            Head dimension.
        a_dff : int
            Hidden width of the metric learner's SwiGLU blocks.
        num_reslayer : int
            Number of residual units (may be 0).
        num_dense : int
            SwiGLU blocks per unit.
        seed : int or None, default 0
            Seed of ``numpy.random.default_rng``.
        p_range : tuple of float, default (0.5, 1.5)
            Range of the uniform distribution of ``P``.

        Returns
        -------
        PLGAParams
            The parameters (float64).
        """
        dk = check_positive_int(dk, "dk")
        a_dff = check_positive_int(a_dff, "a_dff")
        for value, name in ((num_reslayer, "num_reslayer"), (num_dense, "num_dense")):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputValueError(f"{name} must be a non-negative int; got {value!r}")
        p_range = check_range(p_range, "p_range")
        rng = np.random.default_rng(seed)

        def ln_pair() -> tuple[Array, Array]:
            return 1.0 + rng.normal(0.0, 0.1, dk), rng.normal(0.0, 0.1, dk)

        g0, b0 = ln_pair()
        units = []
        for _ in range(num_reslayer):
            dense = [SwiGLUBlock.random(dk, a_dff, dk, rng) for _ in range(num_dense)]
            g, bb = ln_pair()
            units.append(ResUnit(dense=dense, ln_gamma=g, ln_beta=bb))
        scale = 1.0 / np.sqrt(dk)
        return cls(
            ln0_gamma=g0,
            ln0_beta=b0,
            reslayers=units,
            W=rng.normal(0.0, scale, (dk, dk)),
            b=rng.normal(0.0, 0.1, (dk, dk)),
            P=rng.uniform(p_range[0], p_range[1], (dk, dk)),
            a=rng.normal(0.0, scale, (dk, dk)),
            b_a=rng.normal(0.0, 0.1, (dk, dk)),
        )

    def validate(self, dk: int | None = None) -> PLGAParams:
        """Check every array's shape, dtype and finiteness.

        Parameters
        ----------
        dk : int, optional
            Expected head dimension; defaults to ``W.shape[0]``.

        Returns
        -------
        PLGAParams
            The parameters with every array as float64 (``self`` if already so).

        Raises
        ------
        TypeError, ValueError
            On a wrong type, dtype, shape, a non-finite entry, or a
            non-positive epsilon; the message names the field.
        """
        if dk is None:
            if np.ndim(self.W) != 2:
                raise InputValueError(f"params.W must have shape (dk, dk); got {np.shape(self.W)}")
            dk = int(np.shape(self.W)[0])
        if np.shape(self.W) != (dk, dk):
            raise InputValueError(
                f"params.W must have shape (dk, dk) = ({dk}, {dk}) to match the inputs' dk; "
                f"got {np.shape(self.W)}"
            )
        if not isinstance(self.reslayers, list | tuple):
            raise InputTypeError(
                f"params.reslayers must be a list; got {type(self.reslayers).__name__}"
            )
        units = []
        for i, unit in enumerate(self.reslayers):
            if not isinstance(unit, ResUnit):
                raise InputTypeError(f"params.reslayers[{i}] must be a ResUnit")
            dense = []
            check_list(unit.dense, f"params.reslayers[{i}].dense", "SwiGLUBlock")
            for j, blk in enumerate(unit.dense):
                if not isinstance(blk, SwiGLUBlock):
                    raise InputTypeError(f"params.reslayers[{i}].dense[{j}] must be a SwiGLUBlock")
                dense.append(blk.validate(dk, dk, f"params.reslayers[{i}].dense[{j}]"))
            units.append(
                ResUnit(
                    dense=dense,
                    ln_gamma=as_float_array(
                        unit.ln_gamma, f"params.reslayers[{i}].ln_gamma", shape=(dk,)
                    ),
                    ln_beta=as_float_array(
                        unit.ln_beta, f"params.reslayers[{i}].ln_beta", shape=(dk,)
                    ),
                )
            )
        for name in ("ln_eps", "metric_eps"):
            val = getattr(self, name)
            if not isinstance(val, float | int) or isinstance(val, bool):
                raise InputTypeError(f"params.{name} must be a float; got {type(val).__name__}")
            if not (np.isfinite(val) and val > 0):
                raise InputValueError(f"params.{name} must be finite and > 0; got {val}")
        mats = {
            n: as_float_array(getattr(self, n), f"params.{n}", shape=(dk, dk))
            for n in ("W", "b", "P", "a", "b_a")
        }
        return PLGAParams(
            ln0_gamma=as_float_array(self.ln0_gamma, "params.ln0_gamma", shape=(dk,)),
            ln0_beta=as_float_array(self.ln0_beta, "params.ln0_beta", shape=(dk,)),
            reslayers=units,
            ln_eps=float(self.ln_eps),
            metric_eps=float(self.metric_eps),
            **mats,
        )


def _learner_arrays(p: PLGAParams) -> list[np.ndarray]:
    out = [p.ln0_gamma, p.ln0_beta]
    for u in p.reslayers:
        out += [getattr(b, n) for b in u.dense for n in SWIGLU_FIELDS]
        out += [u.ln_gamma, u.ln_beta]
    return [np.asarray(x) for x in out]


def learners_equal(heads: list[PLGAParams] | tuple[PLGAParams, ...]) -> bool:
    """True when every head's metric learner (``ln0_*``, ``reslayers``) equals head 0's.

    This is the shared-learner form of ``pldr_model_v510``: the row LayerNorm
    and the residual units are one set of weights per layer.

    Parameters
    ----------
    heads : list of PLGAParams
        The heads of one layer.

    Returns
    -------
    bool
        Same structure and equal arrays in every head.
    """
    if not heads:
        return False
    first = _learner_arrays(heads[0])
    for h in heads[1:]:
        other = _learner_arrays(h)
        if len(other) != len(first):
            return False
        for x, y in zip(first, other, strict=True):
            if x is not y and (x.shape != y.shape or not np.array_equal(x, y)):
                return False
    return True
