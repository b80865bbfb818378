from pathlib import Path

import pytest

from pyverify.lean.patch import MARKER, PatchError, is_patched, patch_file, patch_text

ORIG = (
    "var a=1;var __dlsym_catchup_js=(h,symbolIndex)=>{var symDict=x;"
    "var symName=Object.keys(symDict)[symbolIndex];return symName};"
    "var __dlsym_js=(h,symbol)=>{var lib=y;var newSymIndex;"
    "newSymIndex=Object.keys(lib.exports).indexOf(symbol);return newSymIndex};"
    "var PThread={initMainThread(){var pthreadPoolSize=4;while(pthreadPoolSize--){}}};"
)


def test_patch_text_replaces_both_lookups_once():
    out = patch_text(ORIG)
    assert out.startswith(MARKER)
    assert "Object.keys(lib.exports).indexOf" not in out
    assert "Object.keys(symDict)[symbolIndex]" not in out
    assert "__pvIndex(lib.exports,symbol)" in out and "__pvKeyAt(symDict,symbolIndex)" in out


def test_patched_lookups_behave_like_the_originals(tmp_path: Path):
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed for this test (it ships with npm)")
    js = patch_text(ORIG) + (
        "var o={a:1,b:2,c:3};"
        "console.log([__pvIndex(o,'b'),__pvIndex(o,'zz'),__pvKeyAt(o,2),"
        "Object.keys(o).indexOf('b'),Object.keys(o).indexOf('zz'),Object.keys(o)[2]].join(','));"
    )
    (tmp_path / "t.js").write_text(js)
    out = subprocess.run([node, str(tmp_path / "t.js")], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1,-1,c,1,-1,c"


def test_patch_sizes_the_worker_pool(tmp_path: Path):
    import shutil
    import subprocess

    from pyverify.lean.patch import POOL_SIZE

    out = patch_text(ORIG)
    assert "var pthreadPoolSize=4;" not in out and "var pthreadPoolSize=__pvPool();" in out
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed for this test (it ships with npm)")
    (tmp_path / "t.js").write_text(out + "console.log(__pvPool());")
    env = {"PATH": "/usr/bin:/bin"}
    got = []
    for pool in (None, "0", "2", "-1", "x"):
        e = env if pool is None else {**env, "PYVERIFY_LEAN_POOL": pool}
        run = subprocess.run(
            [node, str(tmp_path / "t.js")], capture_output=True, text=True, check=True, env=e
        )
        got.append(int(run.stdout.strip()))
    # unset or unreadable values give the default; 0 and 2 are taken as they are
    assert got == [POOL_SIZE, 0, 2, POOL_SIZE, POOL_SIZE]


def test_patch_refuses_unexpected_text():
    with pytest.raises(PatchError, match="expected one occurrence"):
        patch_text(ORIG + ORIG)
    with pytest.raises(PatchError):
        patch_text("nothing to patch")


def test_patch_file_checks_checksum(tmp_path: Path):
    src = tmp_path / "lean.js"
    src.write_text(ORIG)
    with pytest.raises(PatchError, match="refusing to patch"):
        patch_file(src, tmp_path / "out.js")
    assert not (tmp_path / "out.js").exists()
    assert not is_patched(src)
