"""``pyverify diagnose``: figures of G-caches, live models and checkpoints.

* :mod:`~pyverify.diagnose.run` -- the command's runs on ``G_LM`` files and live models;
* :mod:`~pyverify.diagnose.gcache` -- figures of a G-cache, head by head;
* :mod:`~pyverify.diagnose.model` -- order parameter, ``eps_G`` and the logits' gap;
* :mod:`~pyverify.diagnose.checkpoint` -- a ``pldr_model_v510`` checkpoint's figures;
* :mod:`~pyverify.diagnose.perturbation` -- the score-perturbation budget of a trained ``G_LM``.
"""

from pyverify.diagnose.run import *  # noqa: F403 (the command's public names)
from pyverify.diagnose.run import __all__ as __all__
