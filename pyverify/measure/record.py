"""A record: every measurement of one model on given inputs; and the end-of-run measurements.

A record has one schema for a study step and for a checkpoint.

:func:`measure_record` returns (JSON-ready; ``L`` layers, ``H`` heads, per
layer x head averaged over the main probe set unless said; see the modules
named for the definitions):

* ``val_loss`` (only with ``inputs.val``): teacher-forced validation loss;
* ``order_parameter[S][T]`` ``(L, H)`` for every probe set ``S`` and ``T`` in
  A, A_LM, A_P, G (:mod:`~pyverify.measure.order`); ``eps_G[S]`` ``(L, H)``;
* ``pairwise_order[T]``: ``rms``, ``signed_mean``, ``numerator``,
  ``signed_mean_denominator``, each ``(n_pair_prompts, L)``;
* ``commutant_residual_G`` ``(L, H)``: of the probe-mean G;
  ``commutant_residual_rho`` ``(L, H)``: of the probe-mean density operator;
  ``twirl_rho``: ``commutant_fraction``, ``commutant_fraction_unrotated``,
  ``offcommutant_suppression``, each ``(L, H)`` (:mod:`~pyverify.measure.twirl`);
* ``identical_rows_residual_A``, ``row_energy_A`` ``(L, H)``;
  ``cross_head_residual_A`` ``(L,)``; ``sigma2_over_sigma1_{A,A_LM}``,
  ``numerical_rank_{A,A_LM}``, ``floor_fraction_A_LM``, ``jacobian_top_sv``
  ``(L, H)`` (:mod:`~pyverify.measure.structure`);
* ``mean_abs_P`` (mean ``|P|``) and ``norm_a`` (``||a||_F``) ``(L, H)``;
* ``answers`` (only with ``inputs.answers``, the recall task): per inference mode
  the accuracy and loss on ``val``'s answers, and the exposure gaps
  (:func:`~pyverify.measure.answers.answer_scores`).

:func:`measure_final` returns ``val_loss``, ``causal_val_loss`` and
``prompt_A_val_loss`` (:mod:`~pyverify.measure.loss`), ``fidelity``
(:mod:`~pyverify.measure.decoding`), ``online_contract`` and ``cache_contract``
(:mod:`~pyverify.measure.contracts`), and ``answers`` as a record does.
"""

from __future__ import annotations

from typing import Any

import torch

from pyverify.measure.answers import answer_scores
from pyverify.measure.contracts import cache_contract, mean_operator, online_contract
from pyverify.measure.decoding import fidelity
from pyverify.measure.inputs import Answers, FinalInputs, MeasureInputs
from pyverify.measure.loss import causal_val_loss, prompt_val_loss, val_loss
from pyverify.measure.order import eps_g, fro, order_param, pairwise_order, sample_continuations
from pyverify.measure.structure import (
    cross_head_residual,
    floor_fraction,
    identical_rows_residual,
    jacobian_top_sv,
    rank_profile,
    row_energy,
)
from pyverify.measure.tensors import deductive_stack
from pyverify.measure.twirl import commutant_residual, density_twirl
from pyverify.trainable.decoder import DEDUCTIVE, PLDRDecoder

__all__ = ["measure_final", "measure_record"]


def _first(seqs: tuple[torch.Tensor, ...], n: int) -> tuple[torch.Tensor, ...]:
    out, left = [], n
    for g in seqs:
        if left <= 0:
            break
        out.append(g[:left])
        left -= g.shape[0]
    return tuple(out)


@torch.no_grad()
def measure_record(model64: PLDRDecoder, inputs: MeasureInputs) -> dict[str, Any]:
    """Every measurement of ``model64`` (float64, eval) on ``inputs`` (module docstring)."""
    out: dict[str, Any] = {}
    if inputs.val:
        out["val_loss"] = val_loss(model64, inputs.val)
    out["order_parameter"], out["eps_G"] = {}, {}
    names = list(inputs.probes)
    X: dict[str, torch.Tensor] = {}
    for name in names:
        extra = ("rho", "rho0") if name == names[-1] else ()
        X = deductive_stack(model64, inputs.probes[name], DEDUCTIVE + extra)
        out["order_parameter"][name] = {t: order_param(X[t]).tolist() for t in DEDUCTIVE}
        out["eps_G"][name] = eps_g(X["G"]).tolist()
    # X now holds the main set's tensors
    A = X["A"]
    pairs = tuple(
        sample_continuations(model64, inputs.pair_prompts, inputs.n_cont, inputs.seed, b)
        for b in (0, 1)
    )
    out["pairwise_order"] = pairwise_order(model64, pairs)  # type: ignore[arg-type]
    out["commutant_residual_G"] = commutant_residual(X["G"].mean(dim=0)).tolist()
    out["identical_rows_residual_A"] = identical_rows_residual(A).tolist()
    out["cross_head_residual_A"] = cross_head_residual(A).tolist()
    for t in ("A", "A_LM"):
        ratio, rank = rank_profile(X[t], inputs.rank_rtol)
        out[f"sigma2_over_sigma1_{t}"] = ratio.tolist()
        out[f"numerical_rank_{t}"] = rank.tolist()
    out["floor_fraction_A_LM"] = floor_fraction(X["A_LM"]).tolist()
    out["jacobian_top_sv"] = jacobian_top_sv(model64, _first(inputs.main, inputs.jac_probes))
    out["mean_abs_P"] = [d.mha1.P.abs().mean(dim=(1, 2)).tolist() for d in model64.layers]
    out["norm_a"] = [fro(d.mha1.a).tolist() for d in model64.layers]
    out["row_energy_A"] = row_energy(A).tolist()
    out["commutant_residual_rho"] = commutant_residual(X["rho"].mean(dim=0)).tolist()
    out["twirl_rho"] = density_twirl(X["rho"], X["rho0"])
    if inputs.answers is not None:
        out["answers"] = _answers(model64, inputs.val, inputs.answers)
    return out


def _answers(model64: PLDRDecoder, val: tuple[torch.Tensor, ...], ans: Answers) -> dict:
    """The answers' accuracy and loss in every inference mode (one group of whole sequences)."""
    (seqs,) = val
    return answer_scores(model64, seqs, ans.positions, ans.prompt_len)


@torch.no_grad()
def measure_final(
    model64: PLDRDecoder, inputs: FinalInputs, init64: PLDRDecoder | None = None
) -> dict[str, Any]:
    """The end-of-run measurements (module docstring); ``init64``: the step-0 model (N1)."""
    mean_G = mean_operator(model64, inputs.calibration)
    out = {
        "val_loss": val_loss(model64, inputs.val),
        "causal_val_loss": causal_val_loss(model64, inputs.val),
        "prompt_A_val_loss": prompt_val_loss(model64, inputs.val, inputs.a_prefix),
        "fidelity": fidelity(model64, inputs.prompts, inputs.n_new, mean_G),
        "online_contract": online_contract(
            model64, inputs.online, inputs.online_prefix, inputs.seed
        ),
        "cache_contract": cache_contract(model64, inputs.calibration, inputs.assessment, init64),
    }
    if inputs.answers is not None:
        out["answers"] = _answers(model64, inputs.val, inputs.answers)
    return out
