"""The ``.olean`` reader on synthetic images, with 4-byte (wasm) and 8-byte (x86-64) pointers."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from olean_builder import OleanWriter

from pyverify.lean.constants import load_module, read_module_data
from pyverify.lean.kernel_audit import Environment, audit_module, display_name
from pyverify.lean.olean import Region, parse_header
from pyverify.lean.toolchain import ToolchainError

BASES = {4: 0x9D500000, 8: 0x7F3A12340000}


def _module(p: int, base: int | None = None) -> tuple[bytes, OleanWriter]:
    w = OleanWriter(p, base or BASES[p])
    prop = w.sort0()
    consts = [
        ("Demo.cheat", w.constant(0, "Demo.cheat", prop)),
        ("Demo.lemma", w.constant(2, "Demo.lemma", w.const("Demo.cheat"), w.const("Demo.cheat"))),
        (
            "Demo.thm",
            w.constant(2, "Demo.thm", prop, w.app(w.const("Demo.lemma"), w.const("propext"))),
        ),
        ("Demo.twice", w.constant(1, "Demo.twice", prop, w.const("Nat.add"))),
    ]
    root = w.module_data(["Init"], consts)
    return w.image(root), w


@pytest.mark.parametrize("p", [4, 8])
def test_header_finds_pointer_size_base_and_root(p):
    data, _ = _module(p)
    h = parse_header(data, "demo.olean")
    assert (h.pointer_size, h.base, h.version) == (p, BASES[p], 2)
    assert h.lean_version == "4.28.0-pre" and h.githash.startswith("38f3c0c4")
    assert h.base + h.data_start <= h.root < h.base + len(data)


def test_header_rejects_other_files():
    with pytest.raises(ToolchainError, match=r"not a Lean \.olean file"):
        parse_header(b"\x7fELF" + bytes(200), "x.so")
    data, _ = _module(4)
    broken = data[:0x54] + b"\xff\xff\xff\x7f" + data[0x58:]  # a root outside the file
    with pytest.raises(ToolchainError, match="cannot place the root"):
        parse_header(broken, "broken.olean")


@pytest.mark.parametrize("p", [4, 8])
def test_names_strings_arrays_and_numbers(p):
    w = OleanWriter(p, BASES[p])
    big = 2**40 + 12345
    n1 = w.name("Lean.Grind.CommRing.mul_comm")
    n2 = w.name(f"initFn._@.Init.Data.Random.{big}._hyg.2")
    arr = w.array([n1, n2, w.box(7)])
    root = w.module_data([], [])
    region = Region()
    region.add(w.image(root), "names.olean")
    assert region.name(n1) == "Lean.Grind.CommRing.mul_comm"
    assert region.name(n2) == f"initFn._@.Init.Data.Random.{big}._hyg.2"
    assert region.array(arr)[2] == w.box(7) and region.nat(w.box(7)) == 7
    assert region.name(w.box(0)) == ""  # Name.anonymous
    with pytest.raises(ToolchainError, match="not an array"):
        region.array(n1)


@pytest.mark.parametrize("p", [4, 8])
def test_module_data_constants_and_references(p):
    data, _ = _module(p)
    region = Region()
    region.add(data, "Demo.olean")
    view = read_module_data(region, "Demo")
    assert view.imports == ["Init"]
    kinds = {c.name: c.kind for c in view.constants()}
    assert kinds == {
        "Demo.cheat": "axiom",
        "Demo.lemma": "theorem",
        "Demo.thm": "theorem",
        "Demo.twice": "definition",
    }
    assert view.constant("Demo.thm").references() == {"Demo.lemma", "propext"}
    assert view.constant("Demo.cheat").references() == set()


def test_address_outside_the_loaded_parts_is_an_error():
    data, _ = _module(4)
    region = Region()
    region.add(data, "Demo.olean")
    with pytest.raises(ToolchainError, match="outside the loaded"):
        region.kind(0x10)


def test_overlapping_parts_are_refused():
    data, _ = _module(4)
    region = Region()
    region.add(data, "a.olean")
    with pytest.raises(ToolchainError, match="overlaps"):
        region.add(data, "b.olean")


@pytest.mark.parametrize("p", [4, 8])
def test_audit_names_module_theorem_and_axiom(tmp_path: Path, p):
    """A theorem that reaches a local axiom through a lemma fails, naming all three."""
    data, _ = _module(p)
    (tmp_path / "Demo.olean").write_bytes(data)
    lib = tmp_path / "lib"
    init_w = OleanWriter(p, BASES[p] + 0x100000)
    prop = init_w.sort0()
    init = init_w.image(
        init_w.module_data(
            [],
            [
                ("propext", init_w.constant(0, "propext", prop)),
                ("Nat.add", init_w.constant(1, "Nat.add", prop, init_w.sort0())),
            ],
        )
    )
    lib.mkdir()
    (lib / "Init.olean").write_bytes(init)
    env = Environment(tmp_path, [lib], {"Demo"})
    audit = audit_module(env, "Demo", "Demo.lean")
    text = "\n".join(f.format() for f in audit.findings)
    assert "Demo.olean.private not found" in text  # only the public part was given
    assert "declares the axiom `Demo.cheat`" in text
    assert "theorem `Demo.thm` depends on the axiom `Demo.cheat` (through `Demo.lemma`)" in text
    thm = audit.theorems["Demo.thm"]
    assert thm.axioms == ["Demo.cheat", "propext"] and thm.exact


def test_load_module_needs_the_public_part(tmp_path: Path):
    with pytest.raises(ToolchainError, match="is module Demo built"):
        load_module(tmp_path / "Demo", "Demo")


def test_display_name_strips_private_prefix():
    assert display_name("_private.Pldr.Algebra.Sum.0.Pldr.finSum_one") == "Pldr.finSum_one"
    assert display_name("Pldr.finSum_one") == "Pldr.finSum_one"


def test_a_file_outside_the_module_system_needs_no_private_part(tmp_path: Path):
    w = OleanWriter(8, BASES[8])
    prop = w.sort0()
    root = w.module_data([], [("Demo.t", w.constant(2, "Demo.t", prop, prop))], is_module=False)
    (tmp_path / "Demo.olean").write_bytes(w.image(root))
    audit = audit_module(Environment(tmp_path, [], {"Demo"}), "Demo", "Demo.lean")
    assert audit.findings == [] and audit.theorems["Demo.t"].axioms == []


def test_a_header_only_private_part_reuses_the_earlier_root():
    """Lean writes a private part with no objects when a module has nothing private."""
    data, _ = _module(4)
    first = parse_header(data)
    empty = data[:80] + struct.pack("<II", BASES[4] + 0x100000, first.root)
    region = Region()
    region.add(data, "Demo.olean")
    region.add(empty, "Demo.olean.private")
    assert region.root() == first.root
    assert read_module_data(region, "Demo").imports == ["Init"]
    with pytest.raises(ToolchainError, match="cannot place the root"):
        parse_header(empty, "alone.olean.private")  # on its own it has no root
    other = Region()
    other.add(data, "a.olean")
    with pytest.raises(ToolchainError, match="outside the loaded"):
        other.add(data[:80] + struct.pack("<II", BASES[4] + 0x100000, 0x1000), "b")
