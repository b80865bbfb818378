"""The ``pyverify`` command line: the parser and ``main``; each sub-command in its module.

:mod:`~pyverify.cli.lean` (``lean``, ``trace``), :mod:`~pyverify.cli.checks`
(``crosscheck``, ``check``), :mod:`~pyverify.cli.study` (``collapse``,
``claims``), :mod:`~pyverify.cli.reports` (``diagnose``, ``report``, ``bench``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pyverify.cli.checks import register_check, register_crosscheck
from pyverify.cli.lean import register_lean
from pyverify.cli.reports import register_bench, register_diagnose, register_report
from pyverify.cli.study import register_claims, register_collapse
from pyverify.errors import UserError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pyverify``."""
    parser = argparse.ArgumentParser(
        prog="pyverify",
        description="Lean 4 proofs about Power Law Graph Attention, tied to executable code.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    register_lean(sub)
    register_crosscheck(sub)
    register_diagnose(sub)
    register_report(sub)
    register_collapse(sub)
    register_check(sub)
    register_claims(sub)
    register_bench(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pyverify``; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("pyverify: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if not isinstance(exc, UserError):
            raise  # a bug in pyverify: show its traceback
        print(f"pyverify{_rank_tag()}: error: {exc}", file=sys.stderr)
        return 2


def _rank_tag() -> str:
    """`` [rank r/W]`` under a launcher of several processes (torchrun), else nothing.

    Every rank reports its own error; the tag says which printed it, since one that
    only some ranks meet (a missing CUDA device) must not be hidden behind rank 0.
    """
    world, rank = os.environ.get("WORLD_SIZE", "1"), os.environ.get("RANK", "0")
    return f" [rank {rank}/{world}]" if world.isdigit() and int(world) > 1 else ""
