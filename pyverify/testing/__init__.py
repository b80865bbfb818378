"""What the property tests share (needs the test extras: Hypothesis).

* :mod:`~pyverify.testing.impls` -- the implementations under test (plugins of
  :mod:`pyverify.conformance`, or the one `PYVERIFY_IMPL` names), the
  lists the tests are parametrised over, derived error bounds;
* :mod:`~pyverify.testing.strategies` -- Hypothesis strategies for PLGA inputs;
* :mod:`~pyverify.testing.bounds` -- the proved error bounds of the stages (``lean/Pldr/Float``);
* :mod:`~pyverify.testing.stage_bounds` -- the decoder stages' proved bounds (LayerNorm,
  SwiGLU, the decoder step) evaluated on the operands;
* :mod:`~pyverify.testing.fp` -- an implementation's arithmetic and the exact comparisons;
* :mod:`~pyverify.testing.exact` -- exact rational matrices for symbolic checks;
* :mod:`~pyverify.testing.bad_input` -- the bad-input tables' one test (the unit tests' too);
"""
