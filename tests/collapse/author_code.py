"""The paper author's code (``PYVERIFY_AUTHOR_SRC``), for the tests that compare with it.

Nothing is copied: :mod:`pyverify.collapse.author` imports their ``pldr_model_v510`` and
``pldr_run_model_v510`` from a checkout of ``burcgokden/PLDR-LLM-with-KVG-cache`` (its
docstring says what it supplies from outside); these tests skip with a message when the
variable is unset.
"""

from __future__ import annotations

import os

import pytest

from pyverify.collapse.author import ENV, author_src
from pyverify.collapse.author import author_model as _author_model
from pyverify.collapse.author import author_modules as _author_modules


def author_modules():
    """``(pldr_model_v510, pldr_run_model_v510)`` from the checkout; skip when it is unset."""
    if not os.environ.get(ENV, "").strip():
        pytest.skip(f"{ENV} is not set: no checkout of the author's code to compare with")
    return _author_modules(author_src("tests"), "tests")


def author_model(model_mod, cfg, max_seq_len: int = 256):
    """Their ``PLDR_Model`` of the sizes of ``cfg`` (a :class:`ModelConfig`), float32."""
    return _author_model(model_mod, cfg, max_seq_len=max_seq_len)
