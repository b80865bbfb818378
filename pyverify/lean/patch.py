"""Memoise the two ``dlsym`` key look-ups of the WebAssembly ``lean.js``; size its worker pool.

Stock ``lean.js`` calls ``Object.keys`` on an export object of about 200,000
entries for every symbol it resolves, which costs ~140 s per ``lean`` call.
The patch replaces the two exact texts with look-ups in a per-object cache
(a ``WeakMap`` keyed by the export object).  Export objects are fixed once a
module is instantiated; an index past the cached key list (which would reveal
a grown object) refreshes the cache.  A name miss does not: unknown symbols
are looked up often and legitimately answer -1.

Emscripten's start-up also spawns a pool of 4 worker threads, each of which
parses the 89 MB ``lean.js`` and links the module (~8 s of CPU each) although
a per-module build with ``lean --threads=1`` needs at most one. The patch makes
the pool size :data:`POOL_SIZE` (``PYVERIFY_LEAN_POOL`` overrides it, for
measuring); a thread asked for beyond the pool is still created on demand.

The patch is applied only when the original file's SHA-256 is the pinned one:
a different ``lean.js`` is never patched blindly.
"""

from __future__ import annotations

from pathlib import Path

from pyverify.paths import sha256_file

ORIGINAL_SHA256 = "0baaafd5d088d288ec44ff57d5ced4146e95ff6ba975c19787fcfcd26f89f87d"

_INDEX_OF = "newSymIndex=Object.keys(lib.exports).indexOf(symbol);"
_KEY_AT = "var symName=Object.keys(symDict)[symbolIndex];"
_POOL = "var pthreadPoolSize=4;"

#: Worker threads started with every ``lean`` call (measured best: see ``docs``).
POOL_SIZE = 1
#: ``lean --threads`` that goes with the pool.
LEAN_THREADS = 1

MARKER = "/*pyverify-lean-patch v2*/"
_PRELUDE = (
    MARKER + "var __pvCache=new WeakMap();"
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
    """The ``lean.js`` at hand is not the file the patch was written for."""


def patch_text(text: str) -> str:
    """Return ``text`` with both look-ups memoised and the worker pool sized.

    Raises
    ------
    PatchError
        If any of the three exact texts does not occur exactly once.
    """
    for needle in (_INDEX_OF, _KEY_AT, _POOL):
        count = text.count(needle)
        if count != 1:
            raise PatchError(f"expected one occurrence of {needle!r} in lean.js, found {count}")
    text = text.replace(_INDEX_OF, "newSymIndex=__pvIndex(lib.exports,symbol);")
    text = text.replace(_KEY_AT, "var symName=__pvKeyAt(symDict,symbolIndex);")
    text = text.replace(_POOL, "var pthreadPoolSize=__pvPool();")
    return _PRELUDE + text


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
    digest = sha256_file(original)
    if digest != ORIGINAL_SHA256:
        raise PatchError(
            f"{original} has sha256 {digest}, not the pinned {ORIGINAL_SHA256}; refusing to patch"
        )
    text = patch_text(original.read_text(encoding="utf-8"))
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
