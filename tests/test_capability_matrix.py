"""The capability matrix runs pytest once per capability, and `--skip-current` leaves out
only the one torch takes in the calling environment."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch


def _load() -> ModuleType:
    path = Path(__file__).with_name("capability_matrix.py")
    spec = importlib.util.spec_from_file_location("capability_matrix", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pytest_fails_under(monkeypatch: pytest.MonkeyPatch, mod: ModuleType, cap: str) -> None:
    """The matrix's pytest runs (faked) fail under capability ``cap`` alone."""
    monkeypatch.setattr(
        mod.subprocess,
        "run",
        lambda cmd, env: subprocess.CompletedProcess(
            cmd, 1 if env["ATEN_CPU_CAPABILITY"] == cap else 0
        ),
    )


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
    monkeypatch.setattr(mod, "probe", lambda value: (value, {}))
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
    monkeypatch.setattr(mod, "probe", lambda value: (value, {}))
    _pytest_fails_under(monkeypatch, mod, "default")
    assert mod.main([]) == 1


def test_a_capability_torch_does_not_take_fails_the_matrix(monkeypatch: pytest.MonkeyPatch):
    mod = _load()
    monkeypatch.setattr(mod, "_capability", lambda value: "default" if value else "avx2")
    monkeypatch.setattr(mod, "probe", lambda value: ("default", {}))
    monkeypatch.setattr(mod.subprocess, "run", lambda cmd, env: subprocess.CompletedProcess(cmd, 0))
    assert mod.main([]) == 1


def test_a_refused_dtype_is_named_and_left_out_not_failed(monkeypatch, capsys):
    """Simulated: torch refuses bfloat16 under default and avx2 (as on an AMX Xeon)."""
    mod = _load()
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    monkeypatch.delenv(mod.REFUSALS_ENV, raising=False)
    monkeypatch.setattr(mod, "_capability", lambda value: value or "avx512")
    message = "scaled_dot_product_attention (2, 3, 64, 16): RuntimeError: simulated refusal"
    refuses = {"default": {"bfloat16": message}, "avx2": {"bfloat16": message}, "avx512": {}}
    monkeypatch.setattr(mod, "probe", lambda value: (value, refuses[value]))
    runs: list[tuple[str, list[str], str | None]] = []

    def fake_run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        runs.append((env["ATEN_CPU_CAPABILITY"], cmd[3:], env.get(mod.REFUSALS_ENV)))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(mod.subprocess, "run", fake_run)
    assert mod.main(["-q"]) == 0
    by_cap = {cap: (args, refused) for cap, args, refused in runs}
    assert set(by_cap) == {"default", "avx2", "avx512"}
    for cap in ("default", "avx2"):
        args, refused = by_cap[cap]
        assert args == ["-p", "pyverify.testing.refusals", "-q"]
        assert json.loads(refused) == {"bfloat16": message}
    assert by_cap["avx512"] == (["-q"], None)  # nothing refused: the plain run
    out = capsys.readouterr().out
    assert f"torch refuses bfloat16 under default ({message})" in out
    assert (
        "passed (torch refuses: bfloat16 under default, bfloat16 under avx2; what it stopped is "
        "skipped)" in out
    )


def test_a_failure_beside_a_refusal_still_fails_the_matrix(monkeypatch):
    mod = _load()
    monkeypatch.setattr(mod, "_capability", lambda value: value or "avx2")
    monkeypatch.setattr(mod, "probe", lambda value: (value, {"bfloat16": "simulated"}))
    _pytest_fails_under(monkeypatch, mod, "avx2")
    assert mod.main([]) == 1


_DTYPE_TESTS = """
import pytest
import torch

def torch_op(dtype):
    if dtype == "bf16":
        raise RuntimeError("pack: simulated refusal")  # as torch would, deep in a kernel

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_by_torch_dtype(dtype):
    torch_op("bf16" if dtype is torch.bfloat16 else "f32")

@pytest.mark.parametrize("name", ["float16", "bf16"])
def test_by_name(name):
    try:
        torch_op(name)
    except RuntimeError as exc:
        raise ValueError("wrapped by the code under test") from exc

class Impl:
    name, device, dtype = "kernels", "cpu", "bfloat16"

@pytest.mark.parametrize("impl", [Impl()])
def test_by_impl(impl):
    torch_op("bf16")

@pytest.mark.parametrize("dtype", [torch.bfloat16])
def test_refused_dtype_that_never_reaches_the_kernel(dtype):
    pass

@pytest.mark.parametrize("dtype", [torch.bfloat16])
def test_refused_dtype_failing_on_its_own(dtype):
    assert False, "this project's own failure"

@pytest.mark.parametrize("dtype", [torch.float32])
def test_other_dtype_with_the_same_text(dtype):
    raise RuntimeError("simulated refusal")

def test_plain():
    pass
"""


def test_refusals_plugin_skips_only_what_torch_stopped(tmp_path):
    """The plugin end to end in a real pytest under xdist, as the matrix runs it (the counts
    come back from the workers), torch's refusal simulated through the env: the refused
    dtype's tests all run; those whose exception (or its cause) carries torch's text are
    skipped; a bfloat16 test that passes passes, and one failing for its own reason, or a
    float32 test raising the same text, still fails."""
    (tmp_path / "test_dtypes.py").write_text(_DTYPE_TESTS)
    refused = {"bf16": "RuntimeError: simulated refusal"}
    env = {**os.environ, "PYVERIFY_TORCH_REFUSES": json.dumps(refused)}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "pyverify.testing.refusals",
         "-p", "no:cacheprovider", "-q", "-n", "2", "-rs", str(tmp_path)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 1, out.stdout + out.stderr
    assert "2 failed, 4 passed, 3 skipped" in out.stdout, out.stdout
    assert "test_refused_dtype_failing_on_its_own" in out.stdout
    assert "test_other_dtype_with_the_same_text" in out.stdout
    assert "(RuntimeError: simulated refusal): 3 test(s) of bfloat16 stopped by it" in out.stdout


def test_the_probe_reports_torchs_refusal_with_its_words(monkeypatch):
    from pyverify import dispatch

    real = torch.nn.functional.scaled_dot_product_attention

    def refusing(q, *args, **kwargs):
        if q.dtype == torch.bfloat16 and q.shape[-2] >= 64:
            raise RuntimeError("pack_vnni2 is only supported when avx512 is supported")
        return real(q, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", refusing)
    assert dispatch.probe_dtype("float32") is None
    assert dispatch.probe_dtype("bf16") == (
        "scaled_dot_product_attention (2, 3, 64, 16): RuntimeError: "
        "pack_vnni2 is only supported when avx512 is supported"
    )
