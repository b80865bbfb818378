"""One measurement path for a study's runs and for any ``pldr_model_v510`` checkpoint.

Every number is computed on a float64 copy of the study's model class
(:class:`pyverify.trainable.decoder.PLDRDecoder`, the author's layout), on fixed
inputs, so it is deterministic for a fixed thread count. ``pyverify collapse``
records :func:`measure_record` at every measurement step and
:func:`measure_final` at the end of each run; ``pyverify diagnose --checkpoint``
loads a checkpoint with :func:`load_model` and calls the same two functions on
the user's prompts (or a study's saved inputs).

Modules: :mod:`~pyverify.measure.inputs` (token sets, the inputs of a record and
of the final measurements), :mod:`~pyverify.measure.tensors` (float64 models,
deductive tensors), :mod:`~pyverify.measure.order` (order parameters),
:mod:`~pyverify.measure.structure` (rank, rows, Jacobian),
:mod:`~pyverify.measure.twirl` (RoPE commutant of G and of the density
operator), :mod:`~pyverify.measure.loss` (validation losses),
:mod:`~pyverify.measure.decoding` (cache fidelity, decoding speed),
:mod:`~pyverify.measure.contracts` (online contract, N1 cache contract),
:mod:`~pyverify.measure.record` (the record and the final measurements).
"""

from pyverify.measure.inputs import (
    FinalInputs,
    MeasureInputs,
    check_ids,
    read_inputs,
    token_set,
)
from pyverify.measure.record import measure_final, measure_record
from pyverify.measure.tensors import as_float64, deductive_stack, load_model

__all__ = [
    "FinalInputs",
    "MeasureInputs",
    "as_float64",
    "check_ids",
    "deductive_stack",
    "load_model",
    "measure_final",
    "measure_record",
    "read_inputs",
    "token_set",
]
