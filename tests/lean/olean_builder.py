"""Write synthetic ``.olean`` images (4- or 8-byte pointers) for the reader's unit tests.

The layout follows Lean's runtime (object header ``rc:i32, cs_sz:u16,
other:u8, tag:u8``; constructor pointer fields, then scalars; arrays tag 246;
strings tag 249; big numbers tag 250) and the header of ``.olean`` version 2.
"""

from __future__ import annotations

import struct

LEAN_VERSION = b"4.28.0-pre"
GITHASH = b"38f3c0c45b8df6da2652faff6dcaa15afb5a6981"


class OleanWriter:
    """Lay out objects one after another; every ``add_*`` returns the object's address."""

    def __init__(self, pointer_size: int, base: int) -> None:
        self.p = pointer_size
        self.base = base
        self.start = 80 + 2 * pointer_size
        self.body = bytearray()
        self._names: dict[str, int] = {}

    def _word(self, value: int) -> bytes:
        return struct.pack("<I" if self.p == 4 else "<Q", value)

    def _emit(self, raw: bytes) -> int:
        addr = self.base + self.start + len(self.body)
        self.body += raw
        while len(self.body) % 8:
            self.body += b"\0"
        return addr

    @staticmethod
    def box(n: int) -> int:
        """A boxed scalar."""
        return 2 * n + 1

    def ctor(self, tag: int, fields: list[int], scalars: bytes = b"") -> int:
        """A constructor object."""
        size = 8 + self.p * len(fields) + len(scalars)
        head = struct.pack("<iHBB", 0, size, len(fields), tag)
        return self._emit(head + b"".join(self._word(f) for f in fields) + scalars)

    def string(self, text: str) -> int:
        """A string object."""
        raw = text.encode() + b"\0"
        head = struct.pack("<iHBB", 0, 1, 0, 249)
        return self._emit(head + self._word(len(raw)) * 2 + self._word(len(text)) + raw)

    def array(self, items: list[int]) -> int:
        """An array object."""
        head = struct.pack("<iHBB", 0, 1, 0, 246)
        body = self._word(len(items)) * 2 + b"".join(self._word(i) for i in items)
        return self._emit(head + body)

    def mpz(self, value: int) -> int:
        """A big number in Lean's own (non-GMP) layout: sign, digit count, digit pointer."""
        digits = []
        while value:
            digits.append(value & 0xFFFFFFFF)
            value >>= 32
        head_size = 8 + 3 * self.p
        addr = self.base + self.start + len(self.body)
        raw = struct.pack("<iHBB", 0, head_size, 0, 250)
        raw += self._word(0) + self._word(len(digits)) + self._word(addr + head_size)
        raw += struct.pack(f"<{len(digits)}I", *digits)
        return self._emit(raw)

    def name(self, dotted: str) -> int:
        """A ``Name`` (numeric components become ``Name.num``)."""
        if dotted in self._names:
            return self._names[dotted]
        prefix = self.box(0)
        so_far = []
        for part in dotted.split("."):
            so_far.append(part)
            key = ".".join(so_far)
            if key not in self._names:
                if part.isdigit():
                    n = int(part)
                    num = self.box(n) if n < 2**30 else self.mpz(n)
                    self._names[key] = self.ctor(2, [prefix, num], b"\0" * 8)
                else:
                    self._names[key] = self.ctor(1, [prefix, self.string(part)], b"\0" * 8)
            prefix = self._names[key]
        return prefix

    def lean_list(self, items: list[int]) -> int:
        """A ``List`` (``nil`` = box 0, ``cons`` tag 1)."""
        out = self.box(0)
        for item in reversed(items):
            out = self.ctor(1, [item, out])
        return out

    # ------------------------------------------------------------------ Lean terms
    def sort0(self) -> int:
        """``Sort 0`` (``Level.zero`` carries its cached data, so it is an object)."""
        return self.ctor(3, [self.ctor(0, [], b"\0" * 8)], b"\0" * 8)

    def const(self, name: str) -> int:
        """``Expr.const name []``."""
        return self.ctor(4, [self.name(name), self.box(0)], b"\0" * 8)

    def app(self, f: int, a: int) -> int:
        """``Expr.app f a``."""
        return self.ctor(5, [f, a], b"\0" * 8)

    def constant(self, kind: int, name: str, typ: int, value: int | None = None) -> int:
        """A ``ConstantInfo`` of tag ``kind`` (0 axiom, 1 definition, 2 theorem)."""
        cval = self.ctor(0, [self.name(name), self.box(0), typ])
        if kind == 0:
            val = self.ctor(0, [cval], b"\0")
        elif kind == 1:
            val = self.ctor(0, [cval, value or 1, self.box(0), self.box(0)], b"\1")
        else:
            val = self.ctor(0, [cval, value or 1, self.box(0)])
        return self.ctor(kind, [val])

    def module_data(
        self, imports: list[str], constants: list[tuple[str, int]], is_module: bool = True
    ) -> int:
        """The ``ModuleData`` root."""
        imps = [self.ctor(0, [self.name(m)], b"\0\1\0\0") for m in imports]
        return self.ctor(
            0,
            [
                self.array(imps),
                self.array([self.name(n) for n, _ in constants]),
                self.array([c for _, c in constants]),
                self.array([]),
                self.array([]),
            ],
            b"\1" if is_module else b"\0",
        )

    def image(self, root: int) -> bytes:
        """The whole file."""
        header = b"olean" + bytes([2, 0]) + LEAN_VERSION.ljust(33, b"\0") + GITHASH
        return header + self._word(self.base) + self._word(root) + bytes(self.body)
