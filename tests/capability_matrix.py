"""Run pytest once per torch CPU capability this machine supports.

torch picks its CPU kernels by capability (``ATEN_CPU_CAPABILITY``: ``default``,
``avx2``, ``avx512`` on x86), and some results differ between them: CPU SDPA
turns NaN scores into zero rows under one dispatch and into NaN rows under
another. A test that holds on one dispatch only passes on some machines, so CI
runs the dispatch-sensitive tests under every capability the CPU has.

Before pytest runs under a capability, the matrix probes what torch executes there
(:mod:`pyverify.dispatch`: a matmul and SDPA per dtype, in a subprocess with the
capability forced). A dtype torch refuses there is a fact of torch on this CPU, not a
failure of this project: the matrix prints torch's message and leaves that dtype's tests
out of that capability's run (``-p pyverify.testing.refusals``, which deselects them and
counts them in pytest's summary). Seen on an Intel Xeon with AMX: under ``default`` and
``avx2`` torch's bfloat16 SDPA raises "pack_vnni2 is only supported when avx512 is
supported" from a sequence length of 64; under ``avx512`` it runs.

Usage: ``python tests/capability_matrix.py [--skip-current] [pytest args ...]``;
exits non-zero if any capability fails, or if torch does not take the capability it
was given. ``--skip-current`` leaves out the capability torch takes in this
environment (the best one, unless ``ATEN_CPU_CAPABILITY`` says otherwise): ``tox``'s
``suite`` runs the whole test suite under it right after, so running it here too
would only repeat those tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pyverify.dispatch import REFUSALS_ENV

ORDER = ("default", "avx2", "avx512")
PROBE = "import torch; print(torch.backends.cpu.get_cpu_capability().lower())"
PLUGIN = ["-p", "pyverify.testing.refusals"]


def _env(value: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", REFUSALS_ENV)}
    if value is not None:
        env["ATEN_CPU_CAPABILITY"] = value
    return env


def _capability(value: str | None) -> str:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=_env(value), capture_output=True, text=True
    )
    return out.stdout.strip()


def probe(value: str) -> tuple[str, dict[str, str]]:
    """``(capability torch took, {dtype: torch's message})`` under ``value``, in a subprocess."""
    out = subprocess.run(
        [sys.executable, "-m", "pyverify.dispatch"], env=_env(value), capture_output=True, text=True
    )
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"probe under ATEN_CPU_CAPABILITY={value} failed: {tail[0]}")
    found = json.loads(out.stdout)
    return found["capability"], found["refusals"]


def supported() -> list[str]:
    """The capabilities up to the highest one torch finds on this CPU."""
    best = _capability(None)
    return list(ORDER[: ORDER.index(best) + 1]) if best in ORDER else ["default"]


def main(pytest_args: list[str]) -> int:
    caps = supported()
    skip = None
    if pytest_args[:1] == ["--skip-current"]:
        pytest_args = pytest_args[1:]
        skip = _capability(os.environ.get("ATEN_CPU_CAPABILITY"))
    run = [c for c in caps if c != skip]
    note = f" ({skip}: left to the main run, which uses it)" if skip in caps else ""
    print(f"capability matrix: {', '.join(run) or 'nothing'}{note}", flush=True)
    failed = []
    left_out: list[str] = []
    for cap in run:
        taken, refused = probe(cap)
        if taken != cap:
            print(f"ATEN_CPU_CAPABILITY={cap}: torch took {taken!r} instead", flush=True)
            failed.append(cap)
            continue
        print(f"--- ATEN_CPU_CAPABILITY={cap}", flush=True)
        env = _env(cap)
        if refused:
            env[REFUSALS_ENV] = json.dumps(refused, sort_keys=True)
        for dtype, message in sorted(refused.items()):
            print(
                f"torch refuses {dtype} under {cap} ({message}): its tests run, those it stops are "
                "skipped",
                flush=True,
            )
            left_out.append(f"{dtype} under {cap}")
        args = [*PLUGIN, *pytest_args] if refused else pytest_args
        rc = subprocess.run([sys.executable, "-m", "pytest", *args], env=env).returncode
        if rc != 0:
            failed.append(cap)
    refused_note = f" (torch refuses: {', '.join(left_out)}; what it stopped is skipped)"
    skipped = refused_note if left_out else ""
    verdict = "failed under " + ", ".join(failed) if failed else "passed"
    print(f"capability matrix: {verdict}{skipped}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
