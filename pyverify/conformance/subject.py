"""The one adapter every property test calls: an implementation of the protocol, checked.

:class:`Subject` wraps any object that follows :mod:`pyverify.conformance.protocol`
(the shipped reference and kernels included) at one device and dtype. A call to a method
of an undeclared capability group, or to an optional method the implementation lacks,
ends the test as *skipped* with a reason that starts ``not applicable:`` and names the
group or method (Hypothesis re-raises skips at once, so no example is wasted on it).

Every result is checked at this boundary before a test sees it, and converted to NumPy
float64: it must be a real floating-point array (NumPy or torch; not complex, integer,
boolean or object), of the shape the protocol declares for the call, with finite
entries (scores ``E`` may hold ``-inf`` where masked). A result that is not raises
:class:`ProtocolViolation`, one line naming the subject, the method, the field and the
problem, so the test that called it fails with that line and nothing else.

Round-off of the I/O dtype and of the compute dtype (``u_io``, ``u_compute``) are the
inputs of every tolerance the tests derive (:func:`pyverify.testing.impls.attention_bound`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, NoReturn

import numpy as np
import torch

from pyverify.conformance.protocol import (
    CAPABILITIES,
    MODEL_METHODS,
    HeadResult,
    group_of,
)
from pyverify.precision import TORCH_DTYPES, UNIT_ROUNDOFF

__all__ = [
    "NA_PREFIX",
    "ProtocolViolation",
    "Subject",
    "SubjectModel",
    "not_applicable",
    "outside_domain",
]

#: Prefix of the skip reason of a test the implementation cannot run.
NA_PREFIX = "not applicable:"

_HEAD_FIELDS = tuple(f.name for f in fields(HeadResult))


class ProtocolViolation(AssertionError):  # noqa: N818 (an assertion about the protocol)
    """A result breaks the protocol: not a real floating array, a wrong shape, NaN or inf.

    Raised inside the test that made the call, so that test fails with this one line.
    """


def not_applicable(what: str) -> NoReturn:
    """End the running test as not applicable (a pytest skip naming ``what``)."""
    import pytest

    pytest.skip(f"{NA_PREFIX} {what}")


def outside_domain(what: str) -> NoReturn:
    """Declare the current input outside the implementation's domain.

    For inputs an implementation cannot represent at all (a RoPE that is a table of
    non-negative positions, a model whose metric learner is shared by a layer's heads):
    inside a Hypothesis test the example is rejected and another one drawn (a test whose
    every example is rejected is reported not applicable); elsewhere the test is not
    applicable, naming ``what``.
    """
    from hypothesis.control import currently_in_test_context

    if currently_in_test_context():
        from hypothesis import reject

        reject()
    not_applicable(f"outside the implementation's domain: {what}")


def _real_array(x: Any, where: str) -> np.ndarray:
    """``x`` (a torch tensor or array-like) as float64 NumPy, if it is real floating point."""
    if isinstance(x, torch.Tensor):
        if x.is_complex() or not x.is_floating_point():
            raise ProtocolViolation(f"{where} has dtype {x.dtype}; the protocol needs real floats")
        return x.detach().to("cpu", torch.float64).numpy()
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged lists and the like
        raise ProtocolViolation(f"{where} is not an array ({type(x).__name__}: {exc})") from None
    if a.dtype.kind != "f":
        raise ProtocolViolation(f"{where} has dtype {a.dtype}; the protocol needs real floats")
    return a.astype(np.float64, copy=False)


def checked(
    x: Any, where: str, shape: tuple[int, ...] | None, *, masked_inf: bool = False
) -> np.ndarray:
    """``x`` as float64 NumPy after the boundary checks (see the module docstring).

    Parameters
    ----------
    x : array_like or torch.Tensor
        A result of the implementation.
    where : str
        What ``x`` is, ``"<subject>: <method>(...).<field>"``: the start of the error.
    shape : tuple of int or None
        The declared shape (None: not checked).
    masked_inf : bool
        Allow ``-inf`` (scores at masked places).

    Raises
    ------
    ProtocolViolation
        One line: ``where`` and the problem.
    """
    if x is None:
        raise ProtocolViolation(f"{where} is None; the protocol needs an array")
    a = _real_array(x, where)
    if shape is not None and a.shape != tuple(shape):
        raise ProtocolViolation(
            f"{where} has shape {a.shape}; the protocol declares {tuple(shape)}"
        )
    bad = ~np.isfinite(a)
    if masked_inf:
        bad &= ~np.isneginf(a)
    if bad.any():
        n_nan = int(np.isnan(a).sum())
        raise ProtocolViolation(
            f"{where} has {int(bad.sum())} non-finite entries ({n_nan} NaN) of {a.size}; "
            "results must be finite (an overflow raises pyverify.errors.PowerLawOverflowError)"
        )
    return a


@dataclass(frozen=True)
class Subject:
    """One implementation at one device and dtype, as the property tests see it.

    Attributes
    ----------
    name, device, dtype : str
        Identity (test ids ``name-device-dtype``, the trace matrix, reports).
    target : object
        The implementation (follows :mod:`pyverify.conformance.protocol`).
    capabilities : frozenset of str
        Declared capability groups.
    compute : str
        The dtype of the arithmetic (round-off ``u_compute``).
    """

    name: str
    device: str
    dtype: str
    target: Any = field(compare=False, repr=False, default=None)
    capabilities: frozenset[str] = field(default=frozenset(CAPABILITIES), repr=False)
    compute: str = field(default="", repr=False)

    def __str__(self) -> str:
        return f"{self.name}-{self.device}-{self.dtype}"

    def __repr__(self) -> str:
        return f"Subject({str(self)!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How Hypothesis prints it in a falsifying example: the name, no addresses."""
        printer.text(repr(self))

    # ------------------------------------------------------------------ round-off
    @property
    def u_io(self) -> float:
        """Unit round-off of the input/output dtype."""
        return UNIT_ROUNDOFF[self.dtype]

    @property
    def u_compute(self) -> float:
        """Unit round-off of the arithmetic (declared, else float64 for float64, else float32)."""
        comp = self.compute or ("float64" if self.dtype == "float64" else "float32")
        return UNIT_ROUNDOFF[comp]

    def round(self, x: Any) -> np.ndarray:
        """``x`` rounded to the implementation's dtype (returned as float64)."""
        t = torch.as_tensor(np.asarray(x, dtype=np.float64)).to(TORCH_DTYPES[self.dtype])
        return t.to(torch.float64).numpy()

    def hold(self, x: Any) -> Any:
        """``x`` as held in the compute dtype (float64: as given)."""
        x64 = np.asarray(x, dtype=np.float64)
        if self.u_compute != UNIT_ROUNDOFF["float64"]:
            x64 = x64.astype(np.float32).astype(np.float64)
        return float(x64) if x64.ndim == 0 else x64

    # ------------------------------------------------------------------ dispatch
    def offers(self, method: str) -> bool:
        """Whether the implementation declares ``method``'s group and has the method."""
        return group_of(method) in self.capabilities and callable(
            getattr(self.target, method, None)
        )

    def _fn(self, method: str) -> Any:
        group = group_of(method)
        if group not in self.capabilities:
            not_applicable(f"capability '{group}' not offered by {self.name} (needs {method})")
        fn = getattr(self.target, method, None)
        if not callable(fn):
            # A required method is checked when the implementation is loaded.
            not_applicable(f"optional method {group}.{method} not offered by {self.name}")
        return fn

    def _out(self, method: str, x: Any, shape: tuple[int, ...] | None) -> np.ndarray:
        return checked(x, f"{self}: {method}(...)", shape)

    def _head(
        self, method: str, res: Any, s_q: int, s_k: int, dv: int | None, dk: int
    ) -> HeadResult:
        """A :class:`HeadResult` of checked float64 arrays from an object or mapping.

        ``dv`` None: ``out`` may be missing or empty (deductive-only results).
        """
        if isinstance(res, Mapping):
            vals = {n: res.get(n) for n in _HEAD_FIELDS}
        elif hasattr(res, "out") or hasattr(res, "G"):
            vals = {n: getattr(res, n, None) for n in _HEAD_FIELDS}
        else:
            raise ProtocolViolation(
                f"{self}: {method} returned {type(res).__name__}; the protocol needs a "
                "HeadResult, a mapping or an object with its fields"
            )
        shapes = {"out": (s_q, dv), "weights": (s_q, s_k), "E": (s_q, s_k)}
        got: dict[str, Any] = {}
        for n, x in vals.items():
            if n == "out" and dv is None:
                got[n] = None if x is None else _real_array(x, f"{self}: {method}(...).out")
                continue
            if x is None and n != "out":
                got[n] = None  # not computed (or not exposed): the tests skip what is absent
                continue
            where = f"{self}: {method}(...).{n}"
            got[n] = checked(x, where, shapes.get(n, (dk, dk)), masked_inf=n == "E")
        return HeadResult(**got)

    # ------------------------------------------------------------------ head
    def plga(self, q, k, v, params, *, G=None, A=None, causal=True) -> HeadResult:
        """One head (uncached, ``G=`` cached or ``A=`` given)."""
        res = self._fn("plga")(q, k, v, params, G=G, A=A, causal=causal)
        (s_q, dk), s_k, dv = np.shape(q), np.shape(k)[0], np.shape(v)[1]
        return self._head("plga", res, s_q, s_k, dv, dk)

    def scores(self, q, k, G) -> np.ndarray:
        """``Q G K^T / sqrt(dk)``."""
        shape = (np.shape(q)[0], np.shape(k)[0])
        return self._out("scores", self._fn("scores")(q, k, G), shape)

    def softmax(self, E, *, causal=False) -> np.ndarray:
        """Row-wise (causally masked) softmax."""
        return self._out("softmax", self._fn("softmax")(E, causal=causal), np.shape(E))

    def sdpa(self, q, k, v, *, causal=True) -> np.ndarray:
        """The implementation's plain SDPA (optional)."""
        shape = (np.shape(q)[0], np.shape(v)[1])
        return self._out("sdpa", self._fn("sdpa")(q, k, v, causal=causal), shape)

    def collapsed(self, q, k, v, G, *, causal=True, **extra: Any) -> np.ndarray:
        """SDPA on ``Q G`` (optional; ``extra``: the implementation's own keywords)."""
        res = self._fn("collapsed")(q, k, v, G, causal=causal, **extra)
        return self._out("collapsed", res, (np.shape(q)[0], np.shape(v)[1]))

    def density(self, q) -> np.ndarray:
        """``Q^T Q`` (optional)."""
        dk = np.shape(q)[1]
        return self._out("density", self._fn("density")(q), (dk, dk))

    def layer_norm_rows(self, X, gamma, beta, eps) -> np.ndarray:
        """The row LayerNorm of step 2 (optional)."""
        res = self._fn("layer_norm_rows")(X, gamma, beta, eps)
        return self._out("layer_norm_rows", res, np.shape(X))

    def deductive(self, q, params) -> HeadResult:
        """Steps 1-6 on ``q``: the deductive outputs of ``plga(q, q, q, params)``."""
        return self.plga(q, q, q, params)

    def energy(self, A, params) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps 4-6 from a given ``A``: ``(A_LM, A_P, G)`` of ``plga(..., A=A)``."""
        dk = np.asarray(A).shape[-1]
        q = np.ones((1, dk))
        r = self.plga(q, q, q, params, A=A)
        return r.A_LM, r.A_P, r.G

    # ------------------------------------------------------------------ rope
    def rope(self, x, *, offset: int = 0) -> np.ndarray:
        """Rows of ``x`` rotated at positions ``offset ..``."""
        return self._out("rope", self._fn("rope")(x, offset=offset), np.shape(x))

    def rotation_matrix(self, n, dk: int) -> np.ndarray:
        """Block-diagonal ``R_n``."""
        return self._out("rotation_matrix", self._fn("rotation_matrix")(n, dk), (dk, dk))

    def rot2(self, angle: float) -> np.ndarray:
        """The 2 x 2 rotation (default: ``rotation_matrix(angle, 2)``, theta_0 = 1)."""
        if self.offers("rot2"):
            return self._out("rot2", self._fn("rot2")(angle), (2, 2))
        return self.rotation_matrix(angle, 2)

    # ------------------------------------------------------------------ batched
    def plga_batched(self, q, k, v, heads, *, G=None) -> list[list[HeadResult]]:
        """``(B, H, S, dk)`` inputs, shared learner: ``[b][h]`` results."""
        res = self._fn("plga_batched")(q, k, v, heads, G=G)
        B, H, s_q, dk = np.shape(q)
        s_k, dv = np.shape(k)[2], np.shape(v)[3]
        if isinstance(res, (list, tuple)):
            if len(res) != B or any(len(row) != H for row in res):
                raise ProtocolViolation(
                    f"{self}: plga_batched returned nested lists that are not [{B}][{H}]"
                )
            return [[self._head("plga_batched", r, s_q, s_k, dv, dk) for r in row] for row in res]
        if isinstance(res, Mapping):
            st = {n: res.get(n) for n in _HEAD_FIELDS}
        else:
            st = {n: getattr(res, n, None) for n in _HEAD_FIELDS}

        def pick(n: str, b: int, h: int) -> Any:
            x = st[n]
            if x is None:
                return None
            x = _real_array(x, f"{self}: plga_batched(...).{n}")
            if x.ndim < 2:
                raise ProtocolViolation(f"{self}: plga_batched(...).{n} has shape {x.shape}")
            try:
                return np.broadcast_to(x, (B, H, *x.shape[-2:]))[b, h]
            except ValueError:
                raise ProtocolViolation(
                    f"{self}: plga_batched(...).{n} has shape {x.shape}; the protocol "
                    f"declares ({B}, {H}, ...) (G, A..: also ({H}, ...))"
                ) from None

        return [
            [self._head("plga_batched", {n: pick(n, b, h) for n in _HEAD_FIELDS},
                        s_q, s_k, dv, dk) for h in range(H)]
            for b in range(B)
        ]  # fmt: skip

    # ------------------------------------------------------------------ decoder
    def decoder(self, ref) -> SubjectModel:
        """The implementation's decoder built from ``ref``'s parameters."""
        return SubjectModel(self, self._fn("decoder")(ref), ref)


class SubjectModel:
    """A decoder of the implementation, results checked and as NumPy float64."""

    def __init__(self, subject: Subject, model: Any, ref: Any = None) -> None:
        self.subject = subject
        self.model = model
        params = getattr(ref, "params", None)
        self.vocab = getattr(params, "vocab", None)
        self.layers = [] if params is None else [len(layer.mha.heads) for layer in params.layers]
        self.dk = None if params is None else params.layers[0].mha.dk

    def _fn(self, method: str) -> Any:
        fn = getattr(self.model, method, None)
        if not callable(fn):
            if method in MODEL_METHODS[0]:
                raise ProtocolViolation(f"{self.subject}: decoder(...) has no method {method}")
            not_applicable(f"optional method decoder().{method} not offered by {self.subject.name}")
        return fn

    def _logits(self, method: str, x: Any, rows: int) -> np.ndarray:
        return checked(x, f"{self.subject}: decoder().{method}(...)", (rows, self.vocab))

    def forward(self, tokens, G=None) -> np.ndarray:
        """Logits ``(S, vocab)`` (constant-G model when ``G`` is given)."""
        return self._logits("forward", self._fn("forward")(tokens, G=G), len(tokens))

    def collapsed(self, tokens, G) -> np.ndarray:
        """The collapsed model's logits (default: the G-cached forward).

        Generalised SDPA with a constant G is the collapse's definition; an implementation
        with a separate fast path offers ``collapsed`` and that is checked instead.
        """
        if not callable(getattr(self.model, "collapsed", None)):
            return self.forward(tokens, G=G)
        return self._logits("collapsed", self._fn("collapsed")(tokens, G), len(tokens))

    def deductive(self, tokens) -> list[list[HeadResult]]:
        """``[layer][head]`` deductive outputs of an uncached forward."""
        res = self._fn("deductive")(tokens)
        if [len(layer) for layer in res] != self.layers:
            raise ProtocolViolation(
                f"{self.subject}: decoder().deductive returned {[len(x) for x in res]} heads "
                f"per layer; the model has {self.layers}"
            )
        S = len(tokens)
        return [
            [self.subject._head("decoder().deductive", h, S, S, None, self.dk) for h in layer]
            for layer in res
        ]

    def decode(self, prompt, rest, *, G=None, use_g_cache=True) -> np.ndarray:
        """Prompt pass, then one cached step per token of ``rest``."""
        res = self._fn("decode")(prompt, rest, G=G, use_g_cache=use_g_cache)
        return self._logits("decode", res, len(rest))
