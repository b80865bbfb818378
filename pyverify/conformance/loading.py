"""Loading ``module:factory`` into checked :class:`~pyverify.conformance.subject.Subject` s.

Every problem with the user's implementation is a :class:`~pyverify.errors.UserError`
of one line naming the module and, where it applies, the attribute or method: the
module does not import, the factory is missing or raises, a declaration is missing or
wrong, a declared capability lacks one of its required methods.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from pyverify.conformance.protocol import CAPABILITIES, DTYPES, RESERVED_NAMES
from pyverify.conformance.subject import Subject
from pyverify.errors import InputValueError

__all__ = ["ENV_DEVICES", "ENV_DTYPES", "ENV_IMPL", "load", "parse_spec", "subjects_from_env"]

#: The environment variable naming the implementation for ``pytest property_tests``.
ENV_IMPL = "PYVERIFY_IMPL"
#: Comma-separated devices / dtypes to restrict it to (``pyverify check`` sets them).
ENV_DEVICES = "PYVERIFY_IMPL_DEVICES"
ENV_DTYPES = "PYVERIFY_IMPL_DTYPES"


class ImplementationError(InputValueError):
    """The implementation named by the user cannot be loaded or breaks the protocol."""


def parse_spec(spec: str) -> tuple[str, str]:
    """``"module:factory"`` -> ``(module, factory)``."""
    mod, sep, attr = str(spec).strip().partition(":")
    if not sep or not mod or not attr:
        raise ImplementationError(f"--impl must look like 'module:factory'; got {spec!r}")
    return mod, attr


def _call(factory: Any, where: str, **kw: str) -> Any:
    try:
        return factory(**kw)
    except Exception as exc:  # the user's code: any failure is theirs, shown in one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
        raise ImplementationError(f"{where}({args}) raised {type(exc).__name__}: {first}") from exc


def _strings(obj: Any, attr: str, where: str) -> list[str]:
    val = getattr(obj, attr, None)
    if isinstance(val, str) or not isinstance(val, Iterable):
        raise ImplementationError(f"{where}: the implementation must declare {attr} (a list)")
    return [str(v) for v in val]


def _check(obj: Any, where: str) -> tuple[str, list[str], list[str], list[str], str]:
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name.strip() or any(c in name for c in " /[]"):
        raise ImplementationError(f"{where}: the implementation must declare name (a word)")
    caps = _strings(obj, "capabilities", where)
    for cap in caps:
        if cap not in CAPABILITIES:
            raise ImplementationError(
                f"{where}: unknown capability {cap!r} (use {', '.join(CAPABILITIES)})"
            )
        for method in CAPABILITIES[cap]:
            if not callable(getattr(obj, method, None)):
                raise ImplementationError(
                    f"{where}: declares capability {cap!r} but has no method {method}"
                )
    devices = _strings(obj, "devices", where)
    dtypes = _strings(obj, "dtypes", where)
    for dt in dtypes:
        if dt not in DTYPES:
            raise ImplementationError(f"{where}: unknown dtype {dt!r} (use {', '.join(DTYPES)})")
    compute = str(getattr(obj, "compute_dtype", "") or "")
    if compute and compute not in DTYPES:
        raise ImplementationError(f"{where}: unknown compute_dtype {compute!r}")
    if not caps or not devices or not dtypes:
        raise ImplementationError(f"{where}: capabilities, devices and dtypes may not be empty")
    return name, caps, devices, dtypes, compute


def _accepts_keywords(factory: Any) -> bool:
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return True
    params = sig.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return True
    return {"device", "dtype"} <= set(sig.parameters)


def load(
    spec: str,
    devices: Sequence[str] | None = None,
    dtypes: Sequence[str] | None = None,
    *,
    allow_reserved: bool = False,
) -> list[Subject]:
    """The implementation ``spec`` at every declared device x dtype (filtered).

    Parameters
    ----------
    spec : str
        ``"module:factory"``; the module is imported (the working directory is on the
        import path, as for ``python -m``).
    devices, dtypes : sequence of str, optional
        Restrict to these (each must be declared); default all declared.
    allow_reserved : bool
        Allow the names of the shipped implementations (their own plugins).

    Returns
    -------
    list of Subject
        One per (device, dtype), devices outer.

    Raises
    ------
    ImplementationError
        A one-line message naming the module and attribute or method at fault.
    """
    mod_name, attr = parse_spec(spec)
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(mod_name)
    except Exception as exc:
        raise ImplementationError(
            f"cannot import module {mod_name!r}: {type(exc).__name__}: {exc}".splitlines()[0]
        ) from exc
    factory = getattr(module, attr, None)
    where = f"{mod_name}:{attr}"
    if not callable(factory):
        raise ImplementationError(f"module {mod_name!r} has no callable {attr!r}")
    first = _call(factory, where)
    name, caps, decl_dev, decl_dt, _ = _check(first, where)
    if name in RESERVED_NAMES and not allow_reserved:
        raise ImplementationError(f"{where}: name {name!r} is reserved (a shipped implementation)")
    want_dev = _restrict(decl_dev, devices, "device", where)
    want_dt = _restrict(decl_dt, dtypes, "dtype", where)
    keywords = _accepts_keywords(factory)
    if not keywords and (len(decl_dev) > 1 or len(decl_dt) > 1):
        raise ImplementationError(
            f"{where}: declares several devices or dtypes but takes no device=/dtype= keywords"
        )
    out = []
    for dev in want_dev:
        for dt in want_dt:
            obj = _call(factory, where, device=dev, dtype=dt) if keywords else first
            compute = _check(obj, where)[4]  # the compute dtype may depend on the dtype
            out.append(Subject(name, dev, dt, obj, frozenset(caps), compute))
    return out


def _restrict(
    declared: list[str], wanted: Sequence[str] | None, what: str, where: str
) -> list[str]:
    if not wanted:
        return declared
    missing = [w for w in wanted if w not in declared]
    if missing:
        raise ImplementationError(
            f"{where}: {what} {missing[0]!r} not declared (declared: {', '.join(declared)})"
        )
    return [w for w in declared if w in wanted]


def _env_list(var: str) -> list[str] | None:
    raw = os.environ.get(var, "").strip()
    return [x.strip() for x in raw.split(",") if x.strip()] or None


def subjects_from_env() -> list[Subject] | None:
    """The subjects named by ``PYVERIFY_IMPL`` (None when it is unset)."""
    spec = os.environ.get(ENV_IMPL, "").strip()
    if not spec:
        return None
    return load(spec, _env_list(ENV_DEVICES), _env_list(ENV_DTYPES))
