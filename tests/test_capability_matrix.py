"""The capability matrix runs pytest once per capability, and `--skip-current` leaves out
only the one torch takes in the calling environment."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _load() -> ModuleType:
    path = Path(__file__).with_name("capability_matrix.py")
    spec = importlib.util.spec_from_file_location("capability_matrix", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    ("current", "args", "expected"),
    [
        (None, ["-q"], ["default", "avx2", "avx512"]),
        (None, ["--skip-current", "-q"], ["default", "avx2"]),
        ("avx2", ["--skip-current", "-q"], ["default", "avx512"]),
    ],
)
def test_matrix_runs_each_capability_but_the_current_one_when_asked(
    monkeypatch: pytest.MonkeyPatch, current: str | None, args: list[str], expected: list[str]
):
    mod = _load()
    if current is None:
        monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    else:
        monkeypatch.setenv("ATEN_CPU_CAPABILITY", current)
    # a CPU with avx512: torch takes what it is given, and avx512 when given nothing
    monkeypatch.setattr(mod, "_capability", lambda value: value or "avx512")
    runs: list[tuple[str, list[str]]] = []

    def fake_run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        assert cmd[:3] == [sys.executable, "-m", "pytest"]
        runs.append((env["ATEN_CPU_CAPABILITY"], cmd[3:]))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(mod.subprocess, "run", fake_run)
    assert mod.main(args) == 0
    assert [cap for cap, _ in runs] == expected
    assert all(rest == ["-q"] for _, rest in runs)  # the flag is not passed on to pytest


def test_a_failing_capability_fails_the_matrix(monkeypatch: pytest.MonkeyPatch):
    mod = _load()
    monkeypatch.setattr(mod, "_capability", lambda value: value or "avx2")
    monkeypatch.setattr(
        mod.subprocess,
        "run",
        lambda cmd, env: subprocess.CompletedProcess(
            cmd, 1 if env["ATEN_CPU_CAPABILITY"] == "default" else 0
        ),
    )
    assert mod.main([]) == 1


def test_a_capability_torch_does_not_take_fails_the_matrix(monkeypatch: pytest.MonkeyPatch):
    mod = _load()
    monkeypatch.setattr(mod, "_capability", lambda value: "default" if value else "avx2")
    monkeypatch.setattr(mod.subprocess, "run", lambda cmd, env: subprocess.CompletedProcess(cmd, 0))
    assert mod.main([]) == 1
