"""``pyverify crosscheck`` (kernels against the reference) and ``check`` (any implementation)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyverify.output import check_output_dir, check_output_file, progress, write_json

if TYPE_CHECKING:
    pass


def _cmd_crosscheck(args: argparse.Namespace) -> int:
    """Run ``pyverify crosscheck``."""
    from pyverify.crosscheck import format_crosscheck, parse_shard, run_crosscheck

    if args.json:
        check_output_file(args.json, "crosscheck --json")
    result = run_crosscheck(
        devices=args.device,
        dtypes=args.dtype,
        quick=args.quick,
        shard=parse_shard(args.shard),
        progress=None if args.no_progress else progress,
    )
    print(format_crosscheck(result))
    if args.json:
        write_json(Path(args.json), result.to_dict())
    return 0 if result.ok else 1


def register_crosscheck(sub: Any) -> None:
    """Add the ``crosscheck`` sub-command to an ``argparse`` sub-parsers object.

    ``pyverify crosscheck [--device D ...] [--dtype T ...] [--quick] [--shard k/n]
    [--json FILE]``; exit status 0 when every comparison passed, 1 otherwise.
    """
    p = sub.add_parser(
        "crosscheck",
        help="kernels vs float64 reference vs mpmath, every stage, dtype and device",
    )
    p.add_argument(
        "--device",
        action="append",
        default=None,
        help="torch device (repeatable; default: every available one)",
    )
    p.add_argument(
        "--dtype",
        action="append",
        default=None,
        help="float64, float32, bfloat16, float16 (repeatable; default: all)",
    )
    p.add_argument("--quick", action="store_true", help="the quick sweep (about a minute)")
    p.add_argument("--shard", default="1/1", help="run shard k of n (k/n), for CI matrices")
    p.add_argument("--json", default=None, help="also write the rows as JSON to this file")
    p.add_argument("--no-progress", action="store_true", help="no per-case lines on stderr")
    p.set_defaults(func=_cmd_crosscheck)


def _cmd_check(args: argparse.Namespace) -> int:
    """Run ``pyverify check``: the theorem suite on one implementation."""
    from pyverify.conformance.run import parse_ids, run_check
    from pyverify.conformance.verdict import format_table, verdict, write_junit, write_reports

    ids = parse_ids(args.ids)
    folder = check_output_dir(args.output, "check -o/--output")
    junit = check_output_file(args.junit_xml, "check --junit-xml") if args.junit_xml else None
    run = run_check(
        args.impl,
        ids=ids,
        devices=args.device,
        dtypes=args.dtype,
        quick=args.quick,
        progress=None if args.no_progress else progress,
    )
    v = verdict(run)
    print(format_table(v))
    for path in write_reports(run, v, folder):
        print(f"wrote {path}")
    if junit is not None:
        write_junit(v, junit)
        print(f"wrote {junit}")
    if v["suite"] != "ran":
        print(run.log_tail, file=sys.stderr)
    return 0 if v["ok"] else 1


_CHECK_EPILOG = """\
exit status:
  0  no theorem ID failed (each passed, is not applicable or was not run) and the sweep
     passed
  1  a theorem ID failed (a smallest failing example is shown), the sweep failed, or the
     property suite did not run cleanly
  2  a user error, in one line: the module does not import, the factory is missing or
     raises, a declaration is missing or wrong, a declared group lacks a required method,
     an unknown or empty --ids, an undeclared --dtype/--device, an unwritable -o/--junit-xml

Writes DIR/<name>.md, DIR/<name>.json (deterministic), DIR/<name>.measured.json and the
--junit-xml FILE, nothing else (the property suite runs in a temporary folder).
Protocol and verdict rule: docs/conformance.md; the mathematics: docs/plga-spec.md.
"""


def register_check(sub: Any) -> None:
    """Add ``pyverify check --impl module:factory [--ids ...] [--dtype T] [--device D] ...``.

    Exit 0 when no ID failed, 1 on a failure, 2 on a user error (the implementation cannot
    be loaded or breaks the protocol).
    """
    p = sub.add_parser(
        "check",
        help="run the theorem suite on your PLGA implementation",
        description="Run the property tests of every theorem ID, and a cross-check sweep "
        "against the float64 reference, on your implementation; one verdict per ID.",
        epilog=_CHECK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--impl",
        required=True,
        metavar="MODULE:FACTORY",
        help="the implementation (imported from the working directory or PYTHONPATH)",
    )
    p.add_argument(
        "--ids",
        action="append",
        metavar="ID,...",
        help="only these theorem IDs, comma-separated (repeatable; default: every "
        "ID, and then the sweep runs too)",
    )
    p.add_argument(
        "--dtype",
        action="append",
        help="only this declared dtype (repeatable; default: every declared one)",
    )
    p.add_argument(
        "--device",
        action="append",
        help="only this declared device (repeatable; default: every declared one)",
    )
    p.add_argument(
        "--quick", action="store_true", help="5 examples a test (default 30) and the short sweep"
    )
    p.add_argument(
        "-o",
        "--output",
        default="reports/conformance",
        metavar="DIR",
        help="report folder (default: reports/conformance under the working directory)",
    )
    p.add_argument(
        "--junit-xml",
        metavar="FILE",
        default=None,
        help="also write the verdict as JUnit XML (one test case per ID)",
    )
    p.add_argument("--no-progress", action="store_true",
                   help="no progress lines on stderr (default: one per test and sweep case, "
                   "with an ETA)")  # fmt: skip
    p.set_defaults(func=_cmd_check)
