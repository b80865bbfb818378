"""The decoder step's tightness: the composed proved bound over the measured error.

Issue 35 asks for proved / measured of a whole decoder step beside the stages'. This
measures it on the decoders ``property_tests/test_fp_decoder_step.py`` holds to
``fp_decoder_step`` (what they cover and what not is said there): fixed, seeded small
one-layer decoders, a pass of 1-5 tokens through the kernels in float32 against mpmath,
with zero keys (:func:`~pyverify.testing.decoder_bounds.zero_key_decoder`, the bound of
:func:`~pyverify.testing.decoder_bounds.decoder_bound`) and with keys and a metric ``G``
supplied (:func:`~pyverify.testing.decoder_bounds.pass_bound`: the score path composed).
Per case the tightness is the bound over the error at the logit where the bound comes
closest (``1 / mp_excess``), as the cross-check's per stage. Seeded, so the cases are the
same on every machine; the figures are measured ones (``measurements.json``).
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from pyverify.errors import PowerLawOverflowError
from pyverify.reference import Decoder, DecoderParams
from pyverify.testing.decoder_bounds import decoder_bound, pass_bound, zero_key_decoder
from pyverify.testing.fp import mp_excess, pinned_sdpa
from pyverify.testing.impls import kernels
from pyverify.testing.stage_bounds import OutsideModel, stage_arith

__all__ = ["CASES", "decoder_pass", "decoder_step_tightness", "pinned_decoder"]

#: Decoders measured (d_model 4 and 16, one and two heads, 1-5 tokens, seeds 0..CASES-1).
CASES = 12


def _case(i: int, keys: bool = False) -> tuple[Decoder, np.ndarray, list | None]:
    """Seeded case ``i``: a zero-key decoder, or (``keys``) one with keys and a metric ``G``."""
    heads = 1 + (i // 2) % 2
    d_model = (4, 16)[i % 2]
    params = DecoderParams.random(vocab=16, d_model=d_model, num_heads=heads, num_layers=1,
                                  dff=12, a_dff=6, num_reslayer=0, num_dense=1, seed=i,
                                  shared_learner=True)  # fmt: skip
    rng = np.random.default_rng(i)
    toks = rng.integers(0, 16, size=1 + i % 5)
    if not keys:
        return zero_key_decoder(Decoder(params)), toks, None
    dk = d_model // heads
    G = [np.eye(dk) + rng.uniform(-1, 1, (heads, dk, dk)) / dk]  # decoder_g's operators
    return Decoder(params), toks, G


def decoder_pass(
    impl: Any, ref: Decoder, toks: Any, prompt: int | None = None, G: Any = None
) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray | None]:
    """``(exact logits, their composed bound, impl's pass, impl's cached decode)``.

    The pass runs ``impl.decoder(ref).forward`` with SDPA pinned to the backend the
    attention bound models; with ``prompt`` also ``decode(toks[:prompt], toks[prompt:])``
    (else None). Without ``G`` the decoder has zero keys (bound:
    :func:`~pyverify.testing.decoder_bounds.decoder_bound`); with ``G`` (per layer
    ``(H, dk, dk)``) both run with it supplied (bound:
    :func:`~pyverify.testing.decoder_bounds.pass_bound`). Raises
    :class:`~pyverify.testing.stage_bounds.OutsideModel` (a premise of a stage's theorem
    fails) or :class:`~pyverify.errors.PowerLawOverflowError` (the unused metric learner
    overflowed): cases the bound does not cover.
    """
    sa = stage_arith(impl)
    if G is None:
        exact, bound = decoder_bound(ref.params, toks, sa)
    else:
        exact, bound = pass_bound(impl, ref, toks, G)
    kw = {} if G is None else {"G": G}
    with pinned_decoder(impl, ref):
        model = impl.decoder(ref)
        got = model.forward(toks, **kw)
        cached = None if prompt is None else model.decode(toks[:prompt], toks[prompt:], **kw)
    return exact, bound, got, cached


def pinned_decoder(impl: Any, ref: Decoder) -> Any:
    """A context running ``impl``'s decoder with SDPA on the backend its bound models."""
    dk = ref.params.d_model // len(ref.params.layers[0].mha.heads)
    return pinned_sdpa(impl, stage_arith(impl).path, dk, dk)


def decoder_step_tightness(cases: int = CASES) -> list[dict[str, Any]]:
    """Two summary rows per float32 kernel subject (``stage`` "decoder step"; docstring above).

    Decoders with zero keys, and with keys and a metric ``G`` supplied. A row has the
    cross-check summary's tightness keys (``tightness_worst``: the loosest case's proved /
    measured, ``tightness_median``, ``tightness_cases``: cases with a non-zero error),
    ``cases`` and ``proved_cases`` (cases the theorem resolves), and ``violations``: cases
    whose error exceeds the bound (0 unless a kernel is wrong).
    """
    rows = []
    for impl in kernels("float32"):
        if impl.device != "cpu":
            continue  # the bound's premises are the CPU kernels' (stage_bounds)
        for keys, what in ((False, "zero keys"), (True, "keys, G given")):
            ratios: list[float] = []
            proved = violations = 0
            for i in range(cases):
                ref, toks, G = _case(i, keys)
                try:
                    exact, bound, got, _ = decoder_pass(impl, ref, toks, G=G)
                except (OutsideModel, PowerLawOverflowError):
                    continue
                proved += 1
                excess = mp_excess(got, exact, bound)
                violations += excess > 1.0
                if excess > 0:
                    ratios.append(1.0 / excess)
            rows.append({
                "dtype": impl.dtype, "path": f"{impl.name} decoder, {what}",
                "stage": "decoder step", "cases": cases, "proved_cases": proved,
                "violations": violations, "tightness_cases": len(ratios),
                "tightness_worst": max(ratios) if ratios else None,
                "tightness_median": statistics.median(ratios) if ratios else None,
            })  # fmt: skip
    return rows
