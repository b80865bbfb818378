"""Run lanes of commands at the same time: the first lane at normal priority, the others niced.

The embedded WebAssembly Lean keeps under two cores busy on a two-core machine: each
``lean`` process does its file I/O through its main thread while its worker waits, and
the module graph has stretches where only one module can compile. A niced CPU-bound
lane beside it (the dispatch matrix) takes the idle cycles and little else; chaining
the test suite after the Lean build in the first lane lets it start the moment the
build ends, while the niced lane finishes in what the tests leave idle.

Usage: ``python tests/together.py CMD1 [&& CMD2 ...] --- CMD3 [&& ...] [--- ...]``.
Each lane runs its commands one after the other and stops at the first failure (as
the shell's ``&&``). The first lane's output streams; each other lane's output is
held and printed, whole, when it ends, so the log stays readable. Exits with the first
non-zero status, after every lane has ended; one line per command says how it ended
and when (seconds since the start).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO

SEPARATOR = "---"
THEN = "&&"
NICE = 10

Lane = list[list[str]]


def split(argv: list[str]) -> list[Lane]:
    """The lanes between the separators, each a list of commands; an empty one is an error."""
    lanes: list[Lane] = [[[]]]
    for arg in argv:
        if arg == SEPARATOR:
            lanes.append([[]])
        elif arg == THEN:
            lanes[-1].append([])
        else:
            lanes[-1][-1].append(arg)
    if any(not cmd for lane in lanes for cmd in lane):
        raise SystemExit(f"together: an empty command (around '{SEPARATOR}' or '{THEN}')")
    return lanes


def _niced() -> None:
    os.nice(NICE)


Ended = list[tuple[list[str], int, float]]


def _run_lane(lane: Lane, start: float, ended: Ended, skipped: Lane, out: IO[bytes] | None) -> None:
    for cmd in lane:
        rc = subprocess.run(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT if out is not None else None,
            preexec_fn=None if out is None else _niced,
        ).returncode
        ended.append((cmd, rc, time.monotonic() - start))
        if rc != 0:
            skipped.extend(lane[lane.index(cmd) + 1 :])
            return


def main(argv: list[str]) -> int:
    lanes = split(argv)
    start = time.monotonic()
    skipped: Lane = []
    background = []
    for lane in lanes[1:]:
        log = tempfile.TemporaryFile(mode="w+b")
        ended: Ended = []
        thread = threading.Thread(target=_run_lane, args=(lane, start, ended, skipped, log))
        thread.start()
        background.append((lane, thread, log, ended))
        shown = f" {THEN} ".join(" ".join(c) for c in lane)
        print(f"together: started (nice {NICE}, output held): {shown}", flush=True)
    all_ended: Ended = []
    _run_lane(lanes[0], start, all_ended, skipped, None)
    for lane, thread, log, ended in background:
        thread.join()
        log.seek(0)
        shown = f" {THEN} ".join(" ".join(c) for c in lane)
        print(f"together: output of {shown}", flush=True)
        sys.stdout.buffer.write(log.read())
        sys.stdout.flush()
        log.close()
        all_ended += ended
    for cmd, rc, seconds in all_ended:
        print(f"together: exit {rc} after {seconds:.1f} s: {' '.join(cmd)}", flush=True)
    for cmd in skipped:
        print(f"together: not run (the command before it failed): {' '.join(cmd)}", flush=True)
    return next((rc for _, rc, _ in all_ended if rc != 0), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
