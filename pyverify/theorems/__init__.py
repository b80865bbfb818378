"""The theorem IDs of ``plga-spec.md`` and of the suite's own measurements: the one list.

Each ID names a Lean declaration (its docstring starts with ``[ID]``), the
property tests that check it (``@pytest.mark.theorem("ID")``) and a report row.
:mod:`~pyverify.theorems.pytest_plugin` is the pytest plugin of that marker: it records
each test's result under its IDs (the ID x implementation matrix of ``pyverify trace``).
"""

from __future__ import annotations

SUMMARIES: dict[str, str] = {
    "sdpa_special_case": "G = I gives exactly the SDPA scores, attention rows and outputs.",
    "cache_equivalence": "An invariant G makes cached layers and stacks equal recomputing ones.",
    "collapse_absorption": "A constant G* is absorbed into the affine query projection.",
    "rope_group": "rot is a homomorphism into SO(2); likewise the block-diagonal R_n.",
    "rope_commutant_char": "The RoPE commutant is block diagonal, blocks in span{I, J}: dim dk.",
    "rope_relative_position": "G commutes with all R_n iff scores depend only on n - m.",
    "metric_positivity": "iSwiGLU >= 0, A_LM > 0 and A_P > 0 entrywise.",
    "dag_floor": "tr(exp(A_LM o A_LM)) - d >= d eps^2 > 0: no exact acyclicity.",
    "prefix_consistency": "Causal SDPA and constant-G PLGA are prefix consistent; Gram-G PLGA not.",
    "softmax_shift": "Softmax is invariant under adding one constant to a row.",
    "incremental_decoding": "Decoding with a growing KV- and G-cache equals the full forward pass.",
    "softmax_simplex": "Masked softmax rows lie on the simplex; equal iff scores are shifted.",
    "rope_twirl": "Averaging R_n M R_n^T keeps the commutant part, damps the rest by mean w^n.",
    "density_psd": "D = Q^T Q is symmetric positive semidefinite; rank one for one row.",
    "layernorm_invariance": "LayerNorm ignores a constant shift (with eps = 0 also a scaling).",
    "rank_one_generator": "A generator with identical rows is rank one; entrywise maps keep that.",
    "hadamard_power_group": "A^(o(s+t)P) = A^(o sP) o A^(o tP) and A^(o 0) = 1 for positive A.",
    "score_perturbation": "|q (G - G*) k^T| is bounded; a top-1 margin > 2 eta keeps the argmax.",
    # floating-point error bounds (lean/Pldr/Float): the tolerances are theorems
    "fp_summation": "A floating-point sum in any order is within gamma_{n-1} sum |f|.",
    "fp_dot_product": "A dot product (rounded or fused products, any order): gamma_n |a|.|b|.",
    "fp_matmul": "Every entry of a floating-point matrix product is within gamma_n (|A| |B|).",
    "fp_mixed_precision": "Rounded inputs, wide accumulation, rounded output: a product of (1+u).",
    "fp_softmax": "Computed softmax weights (shift, exp of error u_exp, sum, quotient): bounded.",
    "fp_head_scores": "Computed scores Q G K^T / sqrt(dk) are bounded, the metric error an input.",
    "fp_head_output": "Computed attention outputs (fused or normalise-first) are bounded.",
    "fp_elementwise": "An entrywise stage on a perturbed input: (1 + r) L d + r |f| + eta.",
    "fp_ieee_rounding": "IEEE round-to-nearest-even: u|x| + eta; exact sums need no eta.",
    "fp_flush_to_zero": "Flush-to-zero sums in any order: gamma_{n-1} sum|f| + (n-1) 2^emin terms.",
    "fp_layernorm": "A computed LayerNorm row on a perturbed input is within the proved bound.",
    "fp_swiglu": "A computed SwiGLU block (matmuls, sigmoid via exp, product) is bounded.",
    "fp_power_law": "A^P on a base off by rho a: ((1 + u_pow)(1 - rho)^-|P| - 1) A^P + eta.",
    "fp_decoder_step": "Stage bounds compose along a decoder step into a bound on its logits.",
    "fp_cached_decode": "A cached decode and the uncached pass differ by at most B_c + B_u.",
    # Not in the upstream spec (issue 30): a bound of the claims ledger's measurement, not of a
    # PLGA stage (see SUITE_IDS).
    "order_parameter_rms_bound": "The pairwise order parameter's RMS form is at most 2.",
}

#: The theorem IDs, in the spec's order (the keys of :data:`SUMMARIES`).
THEOREM_IDS: tuple[str, ...] = tuple(SUMMARIES)

#: IDs about the suite's own measurement code, not about a PLGA implementation: their
#: property tests run on pyverify's code, so ``pyverify check`` does not offer them.
SUITE_IDS: tuple[str, ...] = ("order_parameter_rms_bound",)

#: IDs whose property tests hold the shipped implementations' own stages (their LayerNorm,
#: feed-forward and decoder pass) to bounds that model how those compute (which kernel,
#: which order, which precision): an implementation handed to ``pyverify check`` exposes
#: no such stage and declares no such arithmetic, so the check does not offer them.
SHIPPED_ONLY_IDS: tuple[str, ...] = (
    "fp_layernorm", "fp_swiglu", "fp_decoder_step", "fp_cached_decode",
)  # fmt: skip

#: The IDs ``pyverify check`` checks on an implementation, in the spec's order.
CHECK_IDS: tuple[str, ...] = tuple(
    i for i in THEOREM_IDS if i not in SUITE_IDS and i not in SHIPPED_ONLY_IDS
)


def check_theorem_id(theorem_id: str) -> str:
    """Return ``theorem_id`` if it is a known ID.

    Raises
    ------
    ValueError
        If the ID is not one of :data:`THEOREM_IDS`.
    """
    if theorem_id not in THEOREM_IDS:
        raise ValueError(f"unknown theorem ID {theorem_id!r}; known: {', '.join(THEOREM_IDS)}")
    return theorem_id
