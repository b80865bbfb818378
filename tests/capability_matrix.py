"""Run pytest once per torch CPU capability this machine supports.

torch picks its CPU kernels by capability (``ATEN_CPU_CAPABILITY``: ``default``,
``avx2``, ``avx512`` on x86), and some results differ between them: CPU SDPA
turns NaN scores into zero rows under one dispatch and into NaN rows under
another. A test that holds on one dispatch only passes on some machines, so CI
runs the dispatch-sensitive tests under every capability the CPU has.

Usage: ``python tests/capability_matrix.py [--skip-current] [pytest args ...]``;
exits non-zero if any capability fails, or if torch does not take the capability it
was given. ``--skip-current`` leaves out the capability torch takes in this
environment (the best one, unless ``ATEN_CPU_CAPABILITY`` says otherwise): ``tox``'s
``suite`` runs the whole test suite under it right after, so running it here too
would only repeat those tests.
"""

from __future__ import annotations

import os
import subprocess
import sys

ORDER = ("default", "avx2", "avx512")
PROBE = "import torch; print(torch.backends.cpu.get_cpu_capability().lower())"


def _capability(value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if value is not None:
        env["ATEN_CPU_CAPABILITY"] = value
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
    return out.stdout.strip()


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
    for cap in run:
        taken = _capability(cap)
        if taken != cap:
            print(f"ATEN_CPU_CAPABILITY={cap}: torch took {taken!r} instead", flush=True)
            failed.append(cap)
            continue
        print(f"--- ATEN_CPU_CAPABILITY={cap}", flush=True)
        env = {**os.environ, "ATEN_CPU_CAPABILITY": cap}
        rc = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], env=env).returncode
        if rc != 0:
            failed.append(cap)
    print(f"capability matrix: {'failed under ' + ', '.join(failed) if failed else 'passed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
