"""Bring your own implementation: the theorem suite on any PLGA code.

* :mod:`~pyverify.conformance.protocol` -- the public protocol (capability groups
  ``head``, ``rope``, ``batched``, ``decoder``; :class:`HeadResult`);
* :mod:`~pyverify.conformance.subject` -- the one adapter the property tests call;
* :mod:`~pyverify.conformance.loading` -- ``module:factory`` to checked subjects;
* :mod:`~pyverify.conformance.shipped` -- the reference and the kernels as plugins;
* :mod:`~pyverify.conformance.run`, :mod:`~pyverify.conformance.sweep`,
  :mod:`~pyverify.conformance.verdict`, :mod:`~pyverify.conformance.collector` --
  ``pyverify check``: the suite, the cross-check sweep, the per-ID verdict and its files.

See ``docs/conformance.md``.
"""

from __future__ import annotations

from pyverify.conformance.protocol import CAPABILITIES, OPTIONAL, HeadResult, Implementation
from pyverify.conformance.subject import outside_domain

__all__ = ["CAPABILITIES", "OPTIONAL", "HeadResult", "Implementation", "outside_domain"]
