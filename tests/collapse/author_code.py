"""The paper author's code (``PYVERIFY_AUTHOR_SRC``), for the tests that compare with it.

Nothing is copied: their ``pldr_model_v510`` is imported from a checkout of
``burcgokden/PLDR-LLM-with-KVG-cache`` through ``examples/author_v510.py`` (which also
makes torchtune's RoPE module importable); their trainer module
``pldr_run_model_v510`` imports ``keras`` at the top and uses it only in methods these
tests do not call, so a stand-in module is registered when keras is absent.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

from pyverify.paths import repo_root

ENV = "PYVERIFY_AUTHOR_SRC"


def author_modules():
    """``(pldr_model_v510, pldr_run_model_v510)`` from the checkout; skip when it is unset."""
    root = os.environ.get(ENV, "").strip()
    if not root:
        pytest.skip(f"{ENV} is not set: no checkout of the author's code to compare with")
    top = str(repo_root(Path(__file__).parent))
    if top not in sys.path:
        sys.path.insert(0, top)
    from examples.author_v510 import _author_modules

    model = _author_modules()
    src = str(Path(root) / "src")
    if src not in sys.path:
        sys.path.append(src)  # their trainer imports src/common.py
    try:
        import keras  # noqa: F401
    except ImportError:
        sys.modules["keras"] = types.ModuleType("keras")
    import pldr_run_model_v510 as run

    return model, run


def author_model(model_mod, cfg, max_seq_len: int = 256):
    """Their ``PLDR_Model`` of the sizes of ``cfg`` (a :class:`ModelConfig`)."""
    return model_mod.PLDR_Model(
        num_layers=cfg.num_layers, d_model=cfg.d_model, num_heads=cfg.num_heads, dff=cfg.dff,
        input_vocab_size=cfg.vocab, A_dff=cfg.a_dff, num_reslayerA=cfg.num_reslayer,
        num_denseA=cfg.num_dense, max_seq_len=max_seq_len,
    )  # fmt: skip
