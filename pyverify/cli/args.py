"""Argument types the sub-commands share."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["int_at_least", "seed_arg"]


def int_at_least(low: int, why: str = "") -> Callable[[str], int]:
    """An ``argparse`` type: an integer >= ``low`` (``why`` is added to the error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer; got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}{why}; got {value}")
        return value

    return parse


seed_arg = int_at_least(0, " (a NumPy seed)")
