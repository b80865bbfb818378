"""The one adapter every property test calls: an implementation of the protocol, checked.

:class:`Subject` wraps any object that follows :mod:`pyverify.conformance.protocol`
(the shipped reference and kernels included) at one device and dtype. It converts every
result to NumPy float64, and a call to a method of an undeclared capability group, or to
an optional method the implementation lacks, ends the test as *skipped* with a reason
that starts ``not applicable:`` and names the group or method (Hypothesis re-raises
skips at once, so no example is wasted on it).

Round-off of the I/O dtype and of the compute dtype (``u_io``, ``u_compute``) are the
inputs of every tolerance the tests derive (:func:`pyverify.testing.impls.attention_bound`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

__all__ = ["NA_PREFIX", "Subject", "SubjectModel", "as_np", "not_applicable", "outside_domain"]

#: Prefix of the skip reason of a test the implementation cannot run.
NA_PREFIX = "not applicable:"


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


def as_np(x: Any) -> Any:
    """``x`` (tensor, array-like or None) as a float64 NumPy array on the CPU."""
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def _head(res: Any) -> HeadResult:
    """A :class:`HeadResult` of NumPy arrays from an object or mapping with its fields."""
    names = ("out", "A", "A_LM", "A_P", "G", "weights", "E")
    if isinstance(res, dict):
        vals = {n: res.get(n) for n in names}
    else:
        vals = {n: getattr(res, n, None) for n in names}
    return HeadResult(**{n: as_np(v) for n, v in vals.items()})


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

    # ------------------------------------------------------------------ head
    def plga(self, q, k, v, params, *, G=None, A=None, causal=True) -> HeadResult:
        """One head (uncached, ``G=`` cached or ``A=`` given)."""
        return _head(self._fn("plga")(q, k, v, params, G=G, A=A, causal=causal))

    def scores(self, q, k, G) -> np.ndarray:
        """``Q G K^T / sqrt(dk)``."""
        return as_np(self._fn("scores")(q, k, G))

    def softmax(self, E, *, causal=False) -> np.ndarray:
        """Row-wise (causally masked) softmax."""
        return as_np(self._fn("softmax")(E, causal=causal))

    def sdpa(self, q, k, v, *, causal=True) -> np.ndarray:
        """The implementation's plain SDPA (optional)."""
        return as_np(self._fn("sdpa")(q, k, v, causal=causal))

    def collapsed(self, q, k, v, G, *, causal=True, **extra: Any) -> np.ndarray:
        """SDPA on ``Q G`` (optional; ``extra``: the implementation's own keywords)."""
        return as_np(self._fn("collapsed")(q, k, v, G, causal=causal, **extra))

    def density(self, q) -> np.ndarray:
        """``Q^T Q`` (optional)."""
        return as_np(self._fn("density")(q))

    def layer_norm_rows(self, X, gamma, beta, eps) -> np.ndarray:
        """The row LayerNorm of step 2 (optional)."""
        return as_np(self._fn("layer_norm_rows")(X, gamma, beta, eps))

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
        return as_np(self._fn("rope")(x, offset=offset))

    def rotation_matrix(self, n, dk: int) -> np.ndarray:
        """Block-diagonal ``R_n``."""
        return as_np(self._fn("rotation_matrix")(n, dk))

    def rot2(self, angle: float) -> np.ndarray:
        """The 2 x 2 rotation (default: ``rotation_matrix(angle, 2)``, theta_0 = 1)."""
        if self.offers("rot2"):
            return as_np(self._fn("rot2")(angle))
        return self.rotation_matrix(angle, 2)

    # ------------------------------------------------------------------ batched
    def plga_batched(self, q, k, v, heads, *, G=None) -> list[list[HeadResult]]:
        """``(B, H, S, dk)`` inputs, shared learner: ``[b][h]`` results."""
        res = self._fn("plga_batched")(q, k, v, heads, G=G)
        if isinstance(res, (list, tuple)):
            return [[_head(r) for r in row] for row in res]
        st = _head(res)
        B, H = st.out.shape[:2]

        def pick(x, b, h):
            if x is None:
                return None
            return np.broadcast_to(x, (B, H, *x.shape[-2:]))[b, h]

        return [
            [HeadResult(*(pick(getattr(st, f), b, h) for f in HeadResult.__dataclass_fields__))
             for h in range(H)]
            for b in range(B)
        ]  # fmt: skip

    # ------------------------------------------------------------------ decoder
    def decoder(self, ref) -> SubjectModel:
        """The implementation's decoder built from ``ref``'s parameters."""
        return SubjectModel(self, self._fn("decoder")(ref))


class SubjectModel:
    """A decoder of the implementation, results as NumPy float64."""

    def __init__(self, subject: Subject, model: Any) -> None:
        self.subject = subject
        self.model = model

    def _fn(self, method: str) -> Any:
        fn = getattr(self.model, method, None)
        if not callable(fn):
            if method in MODEL_METHODS[0]:
                raise TypeError(f"{self.subject.name}: decoder(...) has no method {method}")
            not_applicable(f"optional method decoder().{method} not offered by {self.subject.name}")
        return fn

    def forward(self, tokens, G=None) -> np.ndarray:
        """Logits ``(S, vocab)`` (constant-G model when ``G`` is given)."""
        return as_np(self._fn("forward")(tokens, G=G))

    def collapsed(self, tokens, G) -> np.ndarray:
        """The collapsed model's logits (default: the G-cached forward).

        Generalised SDPA with a constant G is the collapse's definition; an implementation
        with a separate fast path offers ``collapsed`` and that is checked instead.
        """
        if not callable(getattr(self.model, "collapsed", None)):
            return self.forward(tokens, G=G)
        return as_np(self._fn("collapsed")(tokens, G))

    def deductive(self, tokens) -> list[list[HeadResult]]:
        """``[layer][head]`` deductive outputs of an uncached forward."""
        return [[_head(h) for h in layer] for layer in self._fn("deductive")(tokens)]

    def decode(self, prompt, rest, *, G=None, use_g_cache=True) -> np.ndarray:
        """Prompt pass, then one cached step per token of ``rest``."""
        return as_np(self._fn("decode")(prompt, rest, G=G, use_g_cache=use_g_cache))


def declared(obj: Any) -> frozenset[str]:
    """The capability groups ``obj`` declares (unknown names are the loader's to reject)."""
    return frozenset(str(c) for c in getattr(obj, "capabilities", ()))
