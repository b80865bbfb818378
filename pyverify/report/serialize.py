"""Deterministic JSON: sorted keys, fixed float precision, no NaN."""

from __future__ import annotations

import json
import math
from typing import Any

from pyverify.output import json_number

__all__ = ["SIG_DIGITS", "dumps", "round_floats", "round_sig"]

#: Significant digits kept for floats in ``verification.json``.
SIG_DIGITS = 6


def round_sig(x: float, sig: int = SIG_DIGITS) -> float | str | None:
    """Round ``x`` to ``sig`` significant digits (``nan`` -> None, ``inf`` -> "inf").

    Parameters
    ----------
    x : float
        The number.
    sig : int, default 6
        Significant digits.

    Returns
    -------
    float, str or None
        The rounded float; non-finite values become JSON-safe markers.
    """
    if not math.isfinite(x):
        return json_number(x)
    if x == 0:
        return 0.0
    return float(f"{x:.{sig - 1}e}")


def round_floats(obj: Any, sig: int = SIG_DIGITS) -> Any:
    """Recursively round every float in dicts, lists and tuples (tuples become lists).

    Parameters
    ----------
    obj : Any
        JSON-like data (dict keys are converted to ``str``).
    sig : int, default 6
        Significant digits.

    Returns
    -------
    Any
        A rounded copy.
    """
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, float):
        return round_sig(obj, sig)
    if isinstance(obj, int):
        return obj
    if isinstance(obj, dict):
        return {str(k): round_floats(v, sig) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [round_floats(v, sig) for v in obj]
    # numpy scalars and the like
    if hasattr(obj, "item"):
        return round_floats(obj.item(), sig)
    raise TypeError(f"cannot serialise {type(obj).__name__} deterministically")


def dumps(obj: Any) -> str:
    """Serialise to canonical JSON text (sorted keys, 2-space indent, trailing newline).

    Raises
    ------
    ValueError
        If a float is NaN or infinite (use :func:`round_floats` first).
    """
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
