"""Facts of the host the code runs on that several packages read: its load averages."""

from __future__ import annotations

import os

__all__ = ["load_average", "load_averages"]


def load_averages() -> list[float] | None:
    """The 1-, 5- and 15-minute load averages (None where the platform has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def load_average() -> float | None:
    """The 1-minute load average (None where the platform has none)."""
    avgs = load_averages()
    return None if avgs is None else avgs[0]
