"""Run commands at the same time: the first at normal priority, the others niced.

The embedded WebAssembly Lean keeps under two cores busy on a two-core machine: each
``lean`` process does its file I/O through its main thread while its worker waits, and
the module graph has stretches where only one module can compile. A niced CPU-bound
command beside it (the dispatch matrix) takes the idle cycles and little else.

Usage: ``python tests/together.py CMD1 ... --- CMD2 ... [--- CMD3 ...]``. The first
command's output streams; each other command's output is held and printed, whole, when
it ends, so the log stays readable. Exits with the first non-zero status, after every
command has ended; one line per command says how it ended and how long it took.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

SEPARATOR = "---"
NICE = 10


def split(argv: list[str]) -> list[list[str]]:
    """The commands between the separators; an empty command is an error."""
    commands: list[list[str]] = [[]]
    for arg in argv:
        if arg == SEPARATOR:
            commands.append([])
        else:
            commands[-1].append(arg)
    if any(not c for c in commands):
        raise SystemExit(f"together: an empty command (between '{SEPARATOR}' separators)")
    return commands


def _niced() -> None:
    os.nice(NICE)


def main(argv: list[str]) -> int:
    commands = split(argv)
    start = time.monotonic()
    background = []
    for cmd in commands[1:]:
        log = tempfile.TemporaryFile(mode="w+b")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_niced)
        background.append((cmd, proc, log))
        print(f"together: started (nice {NICE}, output held): {' '.join(cmd)}", flush=True)
    first = subprocess.run(commands[0]).returncode
    ended = [(commands[0], first, time.monotonic() - start)]
    for cmd, proc, log in background:
        rc = proc.wait()
        ended.append((cmd, rc, time.monotonic() - start))
        log.seek(0)
        print(f"together: output of {' '.join(cmd)}", flush=True)
        sys.stdout.buffer.write(log.read())
        sys.stdout.flush()
        log.close()
    for cmd, rc, seconds in ended:
        print(f"together: exit {rc} after {seconds:.1f} s: {' '.join(cmd)}", flush=True)
    return next((rc for _, rc, _ in ended if rc != 0), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
