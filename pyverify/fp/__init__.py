"""The floating-point error bounds proved in Lean (``lean/Pldr/Float``), for the code.

* :mod:`~pyverify.fp.formulas` -- one function per theorem: its right-hand side;
* :mod:`~pyverify.fp.models` -- what each implementation computes (its roundings, its
  order), the scores and the metric pipeline's stage-by-stage bounds built from the
  theorems;
* :mod:`~pyverify.fp.attention` -- softmax rows and attention outputs, per SDPA backend
  (torch's fused CPU kernel or its MATH backend), and the pin that makes torch run it;
* :mod:`~pyverify.fp.exps` -- the accuracy of each exponential: certified where a sweep
  exists (:mod:`~pyverify.fp.expcert`, ``exp_certificate.json``), declared elsewhere;
* :mod:`~pyverify.fp.underflow` -- the subnormal probe per device and dtype; the bounds
  are refused (one line) on a device that flushes them.
"""
