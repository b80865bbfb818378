import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from pyverify.lean.patch import (
    _REPLACEMENTS,
    MARKER,
    POOL_SIZE,
    SLICE_MS,
    PatchError,
    is_patched,
    patch_file,
    patch_text,
    patch_wasm_bytes,
    trim_exports,
)

_LOCATE, _DLSYM, _KEYAT, _POOLTXT, _RECEIVE, _POOLREADY, _GOT, _MERGE = (
    old for old, _ in _REPLACEMENTS
)

# The shapes of the real lean.js around each patched text (the texts themselves are
# the exact originals), small enough to run under node.
EXPORTS = (
    "var _malloc,_unused_fn,_lean_main,wasmTable,_data_unused;"
    "var keep=()=>_malloc;"
    "function assignWasmExports(wasmExports){"
    '_malloc=Module["_malloc"]=wasmExports["malloc"];'
    '_unused_fn=Module["_unused_fn"]=wasmExports["unused_fn"];'
    '_lean_main=Module["_lean_main"]=wasmExports["lean_main"];'
    'wasmTable=wasmExports["__indirect_function_table"];'
    '_data_unused=Module["_data_unused"]=wasmExports["data_unused"].value}'
    "var after=_lean_main;"
)
ORIG = (
    "var Module={};var a=1;var findWasmBinary=()=>"
    + _LOCATE
    + ";var locateFile=f=>f;var __dlsym_catchup_js=(h,symbolIndex)=>{var symDict=x;"
    + _KEYAT
    + "return symName};var __dlsym_js=(h,symbol)=>{var lib=y;var newSymIndex;"
    + _DLSYM
    + "return newSymIndex};var PThread={initMainThread(){"
    + _POOLTXT
    + "while(pthreadPoolSize--){}}};"
    # the main thread's start-up: instantiate, link (receiveInstance), then preRun
    + "var ENVIRONMENT_IS_PTHREAD=false;var wasmModule;var wasmExports;var order=[];"
    + "PThread.loadWasmModuleToAllWorkers=()=>{order.push('load:'+wasmModule);return 'ready'};"
    + _RECEIVE
    + "order.push('link');wasmModule=module;return wasmExports}"
    + "function preRunHook(){"
    + _POOLREADY
    + "order.push('await:'+pthreadPoolReady)}"
    + "var addFunction=(f)=>{table.push(f);return table.length};"
    + "var updateGOT=(exports,replace)=>{for(var symName in exports){"
    + "if(isInternalSym(symName)){continue}var value=exports[symName];"
    + "var existingEntry=GOT[symName]&&GOT[symName].value!=-1;if(replace||!existingEntry){"
    + 'var newValue;if(typeof value=="function"){newValue=addFunction(value)}'
    + 'else if(typeof value.value=="number"){newValue=value}else{continue}'
    + _GOT
    + "var isSymbolDefined=s=>{var e=wasmImports[s];if(!e||e.stub){return false}return true};"
    + _MERGE
    + EXPORTS
)


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed for this test (it ships with npm)")
    return node


def _run_js(tmp_path: Path, js: str, env: dict[str, str] | None = None) -> str:
    (tmp_path / "t.js").write_text(js)
    out = subprocess.run(
        [_node(), str(tmp_path / "t.js")], capture_output=True, text=True, check=True, env=env
    )
    return out.stdout.strip()


def test_patch_text_replaces_each_text_once():
    out = patch_text(ORIG)
    assert out.startswith(MARKER)
    for old, new in _REPLACEMENTS:
        assert old not in out and out.count(new) == 1


def test_patched_lookups_behave_like_the_originals(tmp_path: Path):
    js = patch_text(ORIG) + (
        "var o={a:1,b:2,c:3};"
        "console.log([__pvIndex(o,'b'),__pvIndex(o,'zz'),__pvKeyAt(o,2),"
        "Object.keys(o).indexOf('b'),Object.keys(o).indexOf('zz'),Object.keys(o)[2]].join(','));"
    )
    assert _run_js(tmp_path, js) == "1,-1,c,1,-1,c"


def test_patch_sizes_the_worker_pool(tmp_path: Path):
    out = patch_text(ORIG) + "console.log(__pvPool());"
    env = {"PATH": "/usr/bin:/bin"}
    got = []
    for pool in (None, "0", "2", "-1", "x"):
        e = env if pool is None else {**env, "PYVERIFY_LEAN_POOL": pool}
        got.append(int(_run_js(tmp_path, out, e)))
    # unset or unreadable values give the default; 0 and 2 are taken as they are
    assert got == [POOL_SIZE, 0, 2, POOL_SIZE, POOL_SIZE]


# Runs one linker step on the same exports under the original and the patched text.
_LINK_PROBE = (
    "var table=[];var GOT={imported:{value:-1}};var wasmImports={main:{stub:true}};"
    "var isInternalSym=s=>s=='memory';"
    "var f=n=>{var g=()=>n;g.id=n;return g};"
    "var exports={memory:{},imported:f('imported'),other:f('other'),datum:{value:7},"
    "main:f('main'),__main_argc_argv:f('alias')};"
    "mergeLibSymbols(exports,'main');updateGOT(exports);"
    "console.log(JSON.stringify({table:table.map(g=>g.id),got:Object.keys(GOT).sort(),"
    "imported:GOT.imported.value,imports:Object.keys(wasmImports).sort(),"
    "main:wasmImports.main.id,alias:wasmImports.__main_argc_argv.id}));"
)


def test_linker_steps_keep_table_slots_and_imported_entries(tmp_path: Path):
    """The table (function indices every thread must agree on) and the symbols are as
    before; only GOT entries nobody imported are no longer created."""
    import json

    before = json.loads(_run_js(tmp_path, ORIG.replace(EXPORTS, "") + _LINK_PROBE))
    after = json.loads(_run_js(tmp_path, patch_text(ORIG).replace(EXPORTS, "") + _LINK_PROBE))
    assert after["table"] == before["table"] == ["imported", "other", "main", "alias"]
    assert after["imported"] == before["imported"] == 1
    assert after["imports"] == before["imports"]
    assert (after["main"], after["alias"]) == (before["main"], before["alias"]) == ("main", "main")
    assert before["got"] == sorted(["imported", "other", "datum", "main", "__main_argc_argv"])
    assert after["got"] == ["imported"]


def test_the_worker_is_sent_the_module_before_the_main_thread_links_it(tmp_path: Path):
    probe = "receiveInstance({exports:{}},'M');preRunHook();console.log(order.join(','));"
    assert _run_js(tmp_path, ORIG.replace(EXPORTS, "") + probe) == "link,load:M,await:ready"
    patched = patch_text(ORIG).replace(EXPORTS, "")
    # sent once, with the module, before the link; preRun waits for that same load
    assert _run_js(tmp_path, patched + probe) == "load:M,link,await:ready"


def test_trim_exports_keeps_what_the_file_uses(tmp_path: Path):
    out = trim_exports(EXPORTS)
    assert out.startswith("var _malloc,_lean_main,wasmTable;")
    assert "_unused_fn" not in out and "_data_unused" not in out
    probe = (
        "var Module={};" + out + "assignWasmExports({malloc:1,unused_fn:2,lean_main:3,"
        "__indirect_function_table:4,data_unused:{value:5}});"
        "console.log([keep(),_lean_main,wasmTable,Module._malloc].join(','));"
    )
    assert _run_js(tmp_path, probe) == "1,3,4,1"


def test_patch_refuses_unexpected_text():
    with pytest.raises(PatchError, match="expected one occurrence"):
        patch_text(ORIG + ORIG)
    with pytest.raises(PatchError):
        patch_text("nothing to patch")
    with pytest.raises(PatchError, match="declares names it does not assign"):
        trim_exports(EXPORTS.replace("wasmTable,", "wasmTable,_stranger,"))
    with pytest.raises(PatchError, match="expected shape"):
        trim_exports("var x,y;function assignWasmExports(wasmExports){x=1}")


def test_patch_file_checks_checksum(tmp_path: Path):
    src = tmp_path / "lean.js"
    src.write_text(ORIG)
    with pytest.raises(PatchError, match="refusing to patch"):
        patch_file(src, tmp_path / "out.js")
    assert not (tmp_path / "out.js").exists()
    assert not is_patched(src)


def _f64(x: float) -> bytes:
    return b"\x44" + struct.pack("<d", x)


def test_wasm_patch_sets_the_main_thread_slice_where_musl_selects_it():
    select = _f64(1.0) + _f64(100.0) + b"\x20\x87\x01\x1b"  # local.get 135; select
    other = _f64(1.0) + _f64(100.0) + b"\x21\x02\x1b"  # local.set: not the pattern
    data = b"\x00" * 7 + select + other + b"\x01" * 3 + select
    out = patch_wasm_bytes(data)
    want = _f64(SLICE_MS) + _f64(100.0) + b"\x20\x87\x01\x1b"
    assert out == b"\x00" * 7 + want + other + b"\x01" * 3 + want
    assert len(out) == len(data) and SLICE_MS < 1.0
    with pytest.raises(PatchError, match=r"twice in lean\.wasm, found 1"):
        patch_wasm_bytes(select + other)
    with pytest.raises(PatchError, match="found 3"):
        patch_wasm_bytes(select * 3)


def test_patched_js_loads_the_patched_wasm(tmp_path: Path):
    assert _run_js(tmp_path, patch_text(ORIG) + "console.log(findWasmBinary());") == (
        "lean.patched.wasm"
    )
