"""Property tests: Hypothesis profiles, the ``implementation`` marker, the pyverify plugin.

Profiles (chosen by the environment variable ``HYPOTHESIS_PROFILE``, default ``ci``):

``ci``
    derandomised (the same examples on every run and machine), fixed example counts,
    no deadline (CI machines are shared: timing is no property), no example database;
    ``print_blob`` so a failure prints the blob that reproduces it; no targeting phase
    (no test calls ``hypothesis.target``). Draws made inside a test are labelled
    (``data.draw(..., label="q")``), so a failure names each drawn value.
``dev``
    ten times the examples, random, with the local example database: deeper local runs.
``mutation``
    the ``ci`` examples without the shrink phase: a mutant is killed by the first failing
    example, and shrinking it would only cost time (``tox -e mutation``).
``quick``
    the ``ci`` profile with 5 examples a test (``pyverify check --quick``).

An implementation of :mod:`pyverify.conformance.protocol` named by
``PYVERIFY_IMPL=module:factory`` replaces the shipped ones: ``ALL`` and ``FLOAT`` of
:mod:`pyverify.testing.impls` hold its subjects, and every test attributed to another
implementation (the reference- or kernel-only tests, the exact checks) is deselected.
``PYVERIFY_IDS=id,id`` keeps only the tests of those theorem IDs.
"""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import HealthCheck, Phase, settings

from pyverify.errors import UserError
from pyverify.fp.underflow import BoundRefused

try:
    from pyverify.testing.impls import SUBJECTS
except UserError as exc:  # PYVERIFY_IMPL names an implementation that does not load
    raise pytest.UsageError(f"PYVERIFY_IMPL: {exc}") from None

pytest_plugins = ["pyverify.theorems.pytest_plugin"]

# xdist runs one process per core: one torch thread each, no oversubscription.
torch.set_num_threads(1)

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=30,
    print_blob=True,
    database=None,
    suppress_health_check=_SUPPRESS,
    # No test calls hypothesis.target(): targeting is off (Phase.target would do nothing).
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
)
settings.register_profile(
    "mutation",
    settings.get_profile("ci"),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
settings.register_profile("quick", settings.get_profile("ci"), max_examples=5)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=300,
    print_blob=True,
    suppress_health_check=_SUPPRESS,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """A test whose proved bound is refused on this device is skipped with the one line.

    :class:`~pyverify.fp.underflow.BoundRefused`: the device flushes subnormal numbers
    (the probe every bound runs), or runs kernels the bounds do not model (CUDA SDPA).
    Such a test has neither passed nor failed.
    """
    outcome = yield
    rep = outcome.get_result()
    exc = call.excinfo.value if (rep.failed and call.excinfo is not None) else None
    while exc is not None and not isinstance(exc, BoundRefused):
        exc = exc.__cause__ or exc.__context__
    if exc is not None:
        rep.outcome = "skipped"
        rep.longrepr = (str(item.path), item.location[1] or 0, f"refused: {exc}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "implementation(name, device='cpu', dtype='exact'): the implementation a test "
        "with no `impl` parameter is attributed to (exact rational or symbolic checks)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep only the ``PYVERIFY_IMPL`` implementation's tests and the ``PYVERIFY_IDS`` IDs."""
    from pyverify.theorems.pytest_plugin import attribution  # registered above: no re-import

    names = {s.name for s in SUBJECTS} if SUBJECTS is not None else None
    ids = {x.strip() for x in os.environ.get("PYVERIFY_IDS", "").split(",") if x.strip()}
    keep, drop = [], []
    for item in items:
        att = attribution(item)
        ok = names is None or att["implementation"] in names
        ok = ok and (not ids or bool(ids & set(att["theorems"])))
        (keep if ok else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
