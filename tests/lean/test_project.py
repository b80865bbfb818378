from pathlib import Path

import pytest

from pyverify.lean.project import (
    ProjectError,
    critical_path_order,
    load_package,
    module_keys,
    parse_imports,
    strip_comments,
    topo_order,
)


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_strip_comments_keeps_positions_and_blanks_comments_strings():
    src = 'a -- sorry\n/- x /- nested -/ axiom -/ b "sorry" c\n/-- doc\nsorry -/ d'
    out = strip_comments(src)
    assert len(out) == len(src)
    assert out.count("\n") == src.count("\n")
    assert "sorry" not in out and "axiom" not in out
    assert out.split() == ["a", "b", "c", "d"]


def test_parse_imports_reads_header_only():
    src = (
        "module\n\npublic import Pldr.A\nimport Pldr.B -- c\n-- import Pldr.X\n\n"
        "public section\nimport Pldr.Late\n"
    )
    assert parse_imports(src) == ["Pldr.A", "Pldr.B"]


def test_topo_order_and_cycle(tmp_path: Path):
    write(tmp_path, "Pldr.lean", "module\npublic import Pldr.B\npublic import Pldr.A\n")
    write(tmp_path, "Pldr/A.lean", "module\n")
    write(tmp_path, "Pldr/B.lean", "module\npublic import Pldr.A\n")
    mods = load_package(tmp_path)
    assert topo_order(mods) == ["Pldr.A", "Pldr.B", "Pldr"]
    write(tmp_path, "Pldr/A.lean", "module\npublic import Pldr.B\n")
    with pytest.raises(ProjectError, match="import cycle"):
        load_package(tmp_path)


def test_critical_path_order_starts_the_long_chain_first(tmp_path: Path):
    # Pldr.Z is first by name, but Pldr.A heads the chain A -> B -> C -> Pldr: with two
    # jobs, starting Z first would leave the chain's three steps for the end.
    write(tmp_path, "Pldr.lean", "module\npublic import Pldr.C\npublic import Pldr.Z\n")
    write(tmp_path, "Pldr/A.lean", "module\n")
    write(tmp_path, "Pldr/B.lean", "module\npublic import Pldr.A\n")
    write(tmp_path, "Pldr/C.lean", "module\npublic import Pldr.B\n")
    write(tmp_path, "Pldr/Z.lean", "module\n" + "-- a long comment line\n" * 200)
    mods = load_package(tmp_path)
    order = critical_path_order(mods)
    assert order == ["Pldr.A", "Pldr.B", "Pldr.Z", "Pldr.C", "Pldr"]
    assert sorted(order) == sorted(topo_order(mods))


def test_missing_root(tmp_path: Path):
    with pytest.raises(ProjectError, match="root module"):
        load_package(tmp_path)


def test_keys_change_with_dependencies_only(tmp_path: Path):
    write(tmp_path, "Pldr.lean", "module\npublic import Pldr.B\n")
    write(tmp_path, "Pldr/A.lean", "module\n")
    write(tmp_path, "Pldr/B.lean", "module\npublic import Pldr.A\n")
    write(tmp_path, "Pldr/C.lean", "module\n")
    k1 = module_keys(load_package(tmp_path), "lean-x")
    write(tmp_path, "Pldr/A.lean", "module\n-- edited\n")
    k2 = module_keys(load_package(tmp_path), "lean-x")
    assert k1["Pldr.A"] != k2["Pldr.A"]
    assert k1["Pldr.B"] != k2["Pldr.B"]  # B imports A
    assert k1["Pldr"] != k2["Pldr"]  # transitively
    assert k1["Pldr.C"] == k2["Pldr.C"]  # unrelated
    k3 = module_keys(load_package(tmp_path), "lean-y")
    assert k3["Pldr.C"] != k2["Pldr.C"]  # another toolchain never reuses objects


def test_non_utf8_source_names_the_file(tmp_path: Path):
    write(tmp_path, "Pldr.lean", "module\n")
    (tmp_path / "Pldr").mkdir()
    (tmp_path / "Pldr" / "Bad.lean").write_bytes(b"theorem t : True := trivial -- \xff\xfe\n")
    with pytest.raises(ProjectError, match=r"Pldr/Bad\.lean is not UTF-8 text"):
        load_package(tmp_path)
