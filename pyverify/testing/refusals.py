"""Pytest plugin: a test that fails only because torch refuses its dtype here is skipped, and said.

Loaded with ``-p pyverify.testing.refusals`` by the capability matrix, which probes each
forced capability first (:mod:`pyverify.dispatch`) and passes what torch refused in
``PYVERIFY_TORCH_REFUSES`` (dtype -> ``"op (shape): ExceptionType: torch's text"``).
Every test still runs. A test of a refused dtype (its ``impl`` parameter has that
``dtype``, or one of its parameters is that ``torch.dtype`` or its name) that fails
with an exception carrying torch's own text is reported as skipped, with that text; any
other outcome stands, so a bfloat16 test that never reaches the refused kernel (short
sequences, scores only) still passes or fails on this project's code. The terminal
summary names each dtype, torch's message and how many tests torch stopped. Without the
variable the plugin does nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from pyverify.dispatch import REFUSALS_ENV, capability, refusals
from pyverify.precision import canonical_dtype

__all__ = [
    "item_dtypes",
    "pytest_runtest_logreport",
    "pytest_runtest_makereport",
    "pytest_terminal_summary",
]

_STOPPED: dict[str, int] = {}
_PREFIX = "torch refuses "


def item_dtypes(item: pytest.Item) -> set[str]:
    """Canonical names of the dtypes a collected test is parametrised with."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return set()
    out: set[str] = set()
    for value in callspec.params.values():
        impl_dtype = getattr(value, "dtype", None) if hasattr(value, "name") else None
        for v in (value, impl_dtype):
            name = canonical_dtype(v) if isinstance(v, str | torch.dtype) else None
            if name is not None:
                out.add(name)
    return out


def _texts(exc: BaseException | None, seen: set[int] | None = None) -> Iterator[str]:
    """The messages of ``exc``, its causes and contexts, and an exception group's members."""
    seen = set() if seen is None else seen
    if exc is None or id(exc) in seen:
        return
    seen.add(id(exc))
    yield str(exc)
    for sub in getattr(exc, "exceptions", ()):
        yield from _texts(sub, seen)
    yield from _texts(exc.__cause__, seen)
    yield from _texts(exc.__context__, seen)


def _torch_text(message: str) -> str:
    """The words of torch in a probe message (after the operation and the exception type)."""
    return message.split(": ", 2)[-1]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failure of a refused dtype whose exception carries torch's refusal becomes a skip."""
    outcome = yield
    rep = outcome.get_result()
    if not (rep.failed and call.excinfo is not None and os.environ.get(REFUSALS_ENV, "").strip()):
        return
    texts = list(_texts(call.excinfo.value))
    for dtype, message in sorted(refusals().items()):
        if dtype in item_dtypes(item) and any(_torch_text(message) in t for t in texts):
            rep.outcome = "skipped"
            rep.longrepr = (
                str(item.path),
                item.location[1] or 0,
                f"{_PREFIX}{dtype} under ATEN_CPU_CAPABILITY={capability()}: {message}",
            )
            return


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count the tests torch stopped (in the controller under xdist: reports reach it)."""
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if reason.startswith(_PREFIX):
            dtype = reason[len(_PREFIX) :].split(" ", 1)[0]
            _STOPPED[dtype] = _STOPPED.get(dtype, 0) + 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per refused dtype: torch's message and how many tests it stopped."""
    if not os.environ.get(REFUSALS_ENV, "").strip():
        return
    for dtype, message in sorted(refusals().items()):
        n = _STOPPED.get(dtype, 0)
        terminalreporter.write_line(
            f"torch refuses {dtype} under ATEN_CPU_CAPABILITY={capability()} ({message}): "
            f"{n} test(s) of {dtype} stopped by it, skipped; the dtype's other tests ran"
        )
