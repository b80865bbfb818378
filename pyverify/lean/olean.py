"""Reading compiled Lean ``.olean`` files: header, compacted objects, names.

An ``.olean`` file is a header followed by a *compacted region*: Lean objects
laid out as in memory, every pointer an absolute address computed for the
base address recorded in the header (the file is meant to be mapped there).
A module built with the module system is written as up to three files in one
address space (``X.olean``, ``X.olean.server``, ``X.olean.private`` at
increasing bases); later parts point into earlier ones, so a
:class:`Region` holds all of them and resolves addresses across them.

Layouts (Lean 4.28, runtime ``lean.h``/``object.h``, ``compact.cpp``):

* header: ``olean`` (5 bytes), a version byte, a flags byte, the Lean version
  (33 bytes, NUL padded), the 40-character git hash, then the base address and
  the root object's address, each one pointer wide (4 bytes in the 32-bit
  WebAssembly build, 8 on x86-64); objects follow, pointer aligned.
* object header (8 bytes): ``rc:int32, cs_sz:uint16, other:uint8, tag:uint8``.
  A constructor has ``tag`` = constructor index and ``other`` pointer fields
  right after the header. An array (tag 246) has ``size, capacity`` then its
  pointers; a string (tag 249) has ``size, capacity, length`` then UTF-8 bytes
  with a NUL. An odd pointer is a boxed scalar ``n`` stored as ``2n + 1``.

Only what is needed to read module data is decoded; everything is lazy (an
object is read when asked for) and names are memoised by address.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from pyverify.lean.toolchain import ToolchainError

MAGIC = b"olean"
HEADER_FIXED = 5 + 1 + 1 + 33 + 40  # magic, version, flags, Lean version, githash

TAG_ARRAY = 246
TAG_SCALAR_ARRAY = 248
TAG_STRING = 249
TAG_MPZ = 250
TAG_THUNK = 251
MAX_CTOR_TAG = 244


@dataclass(frozen=True)
class OleanHeader:
    """The fixed part of an ``.olean`` file."""

    version: int
    flags: int
    lean_version: str
    githash: str
    pointer_size: int
    base: int
    root: int

    @property
    def data_start(self) -> int:
        """File offset of the first object (right after base and root)."""
        return HEADER_FIXED + 2 * self.pointer_size


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("ascii", errors="replace")


def parse_header(
    data: bytes,
    what: str = "buffer",
    pointer_size: int | None = None,
    external_root: bool = False,
) -> OleanHeader:
    """Decode the header of an ``.olean`` image.

    Parameters
    ----------
    data
        The whole file.
    what
        The file name, for error messages.
    pointer_size
        4 or 8; by default found from the file (the one under which the root
        address lies inside the file, past the header, pointer aligned).
    external_root
        Accept a root below the file's base: a later part of a module (such as
        an ``.olean.private`` with nothing private) may reuse an earlier part's
        module data. Needs ``pointer_size``.

    Raises
    ------
    ToolchainError
        When ``data`` is not an ``.olean`` file this reader understands.
    """
    if len(data) < HEADER_FIXED or data[:5] != MAGIC:
        raise ToolchainError(f"{what} is not a Lean .olean file (no `olean` header)")
    version, flags = data[5], data[6]
    lean_version = _text(data[7:40])
    githash = _text(data[40:80])
    candidates = (pointer_size,) if pointer_size else (4, 8)
    for size in candidates:
        if size not in (4, 8):
            raise ToolchainError(f"pointer size must be 4 or 8, not {size}")
        start = HEADER_FIXED + 2 * size
        if len(data) < start:
            continue
        base, root = struct.unpack_from("<II" if size == 4 else "<QQ", data, HEADER_FIXED)
        inside = base + start <= root < base + len(data)
        outside = external_root and pointer_size is not None and root < base
        if base % size == 0 and root % size == 0 and (inside or outside):
            return OleanHeader(version, flags, lean_version, githash, size, base, root)
    raise ToolchainError(
        f"{what}: cannot place the root object of this .olean (version {version}, "
        f"Lean {lean_version}); the file is damaged or of an unsupported format"
    )


@dataclass
class _Part:
    path: str
    data: bytes
    header: OleanHeader

    @property
    def start(self) -> int:
        return self.header.base

    @property
    def end(self) -> int:
        return self.header.base + len(self.data)


class Region:
    """One or more ``.olean`` images sharing an address space; objects read by address."""

    def __init__(self) -> None:
        self.parts: list[_Part] = []
        self.pointer_size = 0
        self._names: dict[int, str] = {}
        self._last: _Part | None = None
        self._pair = "<II"

    # ------------------------------------------------------------------ loading
    def add(self, data: bytes, what: str) -> OleanHeader:
        """Add one image; all images of a region must share a pointer size."""
        later = bool(self.parts)
        header = parse_header(data, what, self.pointer_size or None, external_root=later)
        part = _Part(what, data, header)
        for other in self.parts:
            if part.start < other.end and other.start < part.end:
                raise ToolchainError(f"{what} overlaps {other.path} in memory: not one module")
        self.pointer_size = header.pointer_size
        self._pair = "<II" if header.pointer_size == 4 else "<QQ"
        self.parts.append(part)
        if header.root < header.base:
            self._locate(header.root)  # a reused root must lie in an earlier part
        return header

    def add_file(self, path: Path) -> OleanHeader:
        """Read ``path`` and add it."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ToolchainError(f"cannot read {path}: {exc.strerror or exc}") from exc
        return self.add(data, str(path))

    # ------------------------------------------------------------------ raw access
    def _locate(self, addr: int) -> tuple[bytes, int]:
        part = self._last
        if part is not None and part.start <= addr < part.end:
            return part.data, addr - part.start
        for part in self.parts:
            if part.start <= addr < part.end:
                self._last = part
                return part.data, addr - part.start
        raise ToolchainError(f"address {addr:#x} lies outside the loaded .olean files")

    def word(self, data: bytes, off: int) -> int:
        """One pointer-sized little-endian word."""
        fmt = "<I" if self.pointer_size == 4 else "<Q"
        return struct.unpack_from(fmt, data, off)[0]

    def kind(self, ptr: int) -> tuple[int, int]:
        """``(tag, number of pointer fields)`` of the object at ``ptr`` (not a scalar)."""
        data, off = self._locate(ptr)
        return data[off + 7], data[off + 6]

    def tag(self, ptr: int) -> int:
        """Constructor index: of the object, or of a boxed nullary constructor."""
        if ptr & 1:
            return ptr >> 1
        return self.kind(ptr)[0]

    def fields(self, ptr: int) -> tuple[int, ...]:
        """The pointer fields of a constructor object."""
        data, off = self._locate(ptr)
        tag, num = data[off + 7], data[off + 6]
        if tag > MAX_CTOR_TAG:
            raise ToolchainError(f"object at {ptr:#x} has tag {tag}, not a constructor")
        fmt = f"<{num}I" if self.pointer_size == 4 else f"<{num}Q"
        return struct.unpack_from(fmt, data, off + 8)

    def scalar_u8(self, ptr: int, index: int) -> int:
        """Byte ``index`` of the scalar area of a constructor (after its pointers)."""
        data, off = self._locate(ptr)
        return data[off + 8 + data[off + 6] * self.pointer_size + index]

    def array(self, ptr: int) -> tuple[int, ...]:
        """The elements of an ``Array`` object."""
        data, off = self._locate(ptr)
        if data[off + 7] != TAG_ARRAY:
            raise ToolchainError(f"object at {ptr:#x} has tag {data[off + 7]}, not an array")
        p = self.pointer_size
        size = self.word(data, off + 8)
        fmt = f"<{size}I" if p == 4 else f"<{size}Q"
        return struct.unpack_from(fmt, data, off + 8 + 2 * p)

    def string(self, ptr: int) -> str:
        """The text of a ``String`` object."""
        data, off = self._locate(ptr)
        if data[off + 7] != TAG_STRING:
            raise ToolchainError(f"object at {ptr:#x} has tag {data[off + 7]}, not a string")
        p = self.pointer_size
        size = self.word(data, off + 8)  # bytes, with the NUL
        start = off + 8 + 3 * p
        return data[start : start + size - 1].decode("utf-8", errors="replace")

    def nat(self, ptr: int) -> int:
        """A ``Nat``: a boxed scalar, or a big number (Lean's own ``mpz`` layout).

        The big-number object is ``sign:bool`` (padded to a pointer), the digit
        count (pointer wide) and a pointer to that many 32-bit digits, least
        significant first (``flags`` 0 in the header: Lean built without GMP).
        """
        if ptr & 1:
            return ptr >> 1
        data, off = self._locate(ptr)
        if data[off + 7] != TAG_MPZ:
            raise ToolchainError(f"object at {ptr:#x} has tag {data[off + 7]}, not a number")
        p = self.pointer_size
        negative = data[off + 8] != 0
        count = self.word(data, off + 8 + p)
        digits_data, digits_off = self._locate(self.word(data, off + 8 + 2 * p))
        value = 0
        for i, digit in enumerate(struct.unpack_from(f"<{count}I", digits_data, digits_off)):
            value |= digit << (32 * i)
        return -value if negative else value

    def list(self, ptr: int) -> list[int]:
        """The elements of a ``List`` (``nil`` is box 0, ``cons`` has tag 1)."""
        out: list[int] = []
        while not ptr & 1:
            head, ptr = self.fields(ptr)[:2]
            out.append(head)
        return out

    def name(self, ptr: int) -> str:
        """A ``Name`` as dotted text (``Name.num`` parts printed as numbers)."""
        if ptr & 1:
            return ""
        cached = self._names.get(ptr)
        if cached is not None:
            return cached
        data, off = self._locate(ptr)
        tag = data[off + 7]
        if tag not in (1, 2):
            raise ToolchainError(f"object at {ptr:#x} has tag {tag}, not a Name")
        prefix_ptr, part_ptr = struct.unpack_from(self._pair, data, off + 8)
        if tag == 1:
            sdata, soff = self._locate(part_ptr)
            size = self.word(sdata, soff + 8)
            start = soff + 8 + 3 * self.pointer_size
            part = sdata[start : start + size - 1].decode("utf-8", errors="replace")
        else:
            part = str(self.nat(part_ptr))
        prefix = self.name(prefix_ptr) if not prefix_ptr & 1 else ""
        text = f"{prefix}.{part}" if prefix else part
        self._names[ptr] = text
        return text

    def root(self, index: int = -1) -> int:
        """The root object of the ``index``-th loaded image (default: the last)."""
        return self.parts[index].header.root
