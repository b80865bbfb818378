"""The floating-point error bounds proved in Lean (``lean/Pldr/Float``), for the code.

* :mod:`~pyverify.fp.formulas` -- one function per theorem: its right-hand side;
* :mod:`~pyverify.fp.models` -- what each implementation computes (its roundings, its
  exponential, its order), and the stage-by-stage bounds built from the theorems.
"""
