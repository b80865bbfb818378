"""Pytest plugin: leave out the tests of a dtype torch refuses on this CPU, and say so.

Loaded with ``-p pyverify.testing.refusals`` by the capability matrix, which probes each
forced capability first (:mod:`pyverify.dispatch`) and passes what torch refused in
``PYVERIFY_TORCH_REFUSES``. A test is of a dtype when its ``impl`` parameter has that
``dtype``, or when one of its parameters is that ``torch.dtype`` or its name. Those tests
are deselected (not run, not passed), and the terminal summary names the dtype, torch's
message and how many tests were left out. Without the variable the plugin does nothing.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

from pyverify.dispatch import REFUSALS_ENV, capability, refusals
from pyverify.precision import canonical_dtype

__all__ = [
    "item_dtypes",
    "pytest_collection_modifyitems",
    "pytest_terminal_summary",
    "pytest_testnodedown",
]

_LEFT_OUT: dict[str, int] = {}
_KEY = "pyverify_refusals_left_out"


def _dtype_name(value: Any) -> str | None:
    if isinstance(value, torch.dtype):
        return canonical_dtype(str(value))
    if isinstance(value, str):
        return canonical_dtype(value)
    return None


def item_dtypes(item: pytest.Item) -> set[str]:
    """Canonical names of the dtypes a collected test is parametrised with."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return set()
    out: set[str] = set()
    for value in callspec.params.values():
        impl_dtype = getattr(value, "dtype", None) if hasattr(value, "name") else None
        for v in (value, impl_dtype):
            name = _dtype_name(v)
            if name is not None:
                out.add(name)
    return out


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests of every refused dtype (only when the matrix passed a probe)."""
    if not os.environ.get(REFUSALS_ENV, "").strip():
        return
    refused = refusals()
    keep, drop = [], []
    for item in items:
        hit = item_dtypes(item) & refused.keys()
        (drop if hit else keep).append(item)
        for d in hit:
            _LEFT_OUT[d] = _LEFT_OUT.get(d, 0) + 1
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    worker_out = getattr(config, "workeroutput", None)  # an xdist worker: tell the controller
    if worker_out is not None:
        worker_out[_KEY] = dict(_LEFT_OUT)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """Under xdist, in the controller: each worker collects every test; keep one's counts."""
    counts = getattr(node, "workeroutput", {}).get(_KEY, {})
    for dtype, n in counts.items():
        _LEFT_OUT[dtype] = max(_LEFT_OUT.get(dtype, 0), n)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per refused dtype: torch's message and the tests left out."""
    if not os.environ.get(REFUSALS_ENV, "").strip():
        return
    for dtype, message in sorted(refusals().items()):
        n = _LEFT_OUT.get(dtype, 0)
        terminalreporter.write_line(
            f"torch refuses {dtype} under ATEN_CPU_CAPABILITY={capability()} ({message}): "
            f"{n} test(s) of {dtype} left out"
        )
