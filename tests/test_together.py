"""``tests/together.py``: every command runs, the first streams, the others' output is
held and printed whole, and any failure fails the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("together.py")


def _run(*commands: list[str]) -> subprocess.CompletedProcess[str]:
    argv: list[str] = []
    for i, cmd in enumerate(commands):
        argv += (["---"] if i else []) + cmd
    return subprocess.run(
        [sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=60
    )


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_both_commands_run_and_the_held_output_comes_whole_after_the_first():
    # the second command prints while the first is still running; its lines must not
    # appear before the first command's last line, and must stay together
    held = "import time; print('b1', flush=True); time.sleep(0.2); print('b2', flush=True)"
    first = "import time; time.sleep(1.0); print('a-end', flush=True)"
    out = _run(_py(first), _py(held))
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines.index("a-end") < lines.index("b1") == lines.index("b2") - 1
    assert sum(line.startswith("together: exit 0 after") for line in lines) == 2


@pytest.mark.parametrize("which", [0, 1])
def test_a_failing_command_fails_the_run_after_both_end(which: int):
    ok, bad = _py("print('ok')"), _py("import sys; print('bad'); sys.exit(3)")
    out = _run(*([bad, ok] if which == 0 else [ok, bad]))
    assert out.returncode == 3
    assert "ok" in out.stdout.splitlines() and "bad" in out.stdout.splitlines()


def test_an_empty_command_is_a_one_line_error():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "---", "true"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode != 0
    assert "empty command" in out.stderr and "Traceback" not in out.stderr
