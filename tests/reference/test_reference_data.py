"""Loading the released G_LM operators; errors for missing/malformed files; provenance."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from pyverify.reference import (
    DATA_DIR_ENV,
    KNOWN_FILES,
    DataFileFormatError,
    DataFileMissingError,
    data_dir,
    load_g_lm,
    provenance,
)

#: The vendored copy of the released operators (always present: the tests must run).
SHARED = Path(__file__).resolve().parents[2] / "pyverify" / "data"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


@pytest.mark.parametrize("name", list(KNOWN_FILES))
def test_load_real_files(name):
    G = load_g_lm(name, expected_shape=(5, 14, 64, 64))
    assert G.shape == (5, 14, 64, 64) and G.dtype == np.float64
    assert np.all(np.isfinite(G))
    raw = np.load(SHARED / KNOWN_FILES[name])["G_LM"]
    np.testing.assert_array_equal(G, raw.astype(np.float64))  # float32 -> float64 exact
    if name == "identity":
        np.testing.assert_array_equal(G, np.broadcast_to(np.eye(64), G.shape))
    if name == "trained":
        assert not np.allclose(G, np.eye(64))


def test_default_dir_is_the_vendored_copy_and_by_file_name():
    assert data_dir() == SHARED
    a = load_g_lm(KNOWN_FILES["identity"])
    b = load_g_lm(SHARED / KNOWN_FILES["identity"])
    np.testing.assert_array_equal(a, b)


def test_provenance_of_real_file():
    prov = provenance("trained")
    assert prov.file == "pldr_v51_110m_1_G_LM.npz"
    path = SHARED / prov.file
    assert prov.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert prov.source is not None
    assert "predefined_G_LM_cache_list_PLDRv51_110M_1_5layer_14head_64x64_paper.pkl" in prov.source


def _write_good(folder: Path, name="good.npz", shape=(2, 3, 4, 4)):
    np.savez(folder / name, G_LM=np.random.default_rng(0).normal(size=shape).astype(np.float32))
    return folder / name


def test_env_var_and_argument(tmp_path, monkeypatch):
    _write_good(tmp_path, KNOWN_FILES["trained"])
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert data_dir() == tmp_path.resolve()
    assert load_g_lm().shape == (2, 3, 4, 4)
    monkeypatch.delenv(DATA_DIR_ENV)
    assert load_g_lm("trained", data_dir=tmp_path).shape == (2, 3, 4, 4)
    prov = provenance("trained", data_dir=tmp_path)
    assert prov.source is None  # no README there


def test_missing_folder_and_file(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "nope"))
    with pytest.raises(DataFileMissingError, match=DATA_DIR_ENV):
        load_g_lm()
    with pytest.raises(FileNotFoundError, match="data folder not found"):
        data_dir(tmp_path / "nope")
    monkeypatch.delenv(DATA_DIR_ENV)
    with pytest.raises(DataFileMissingError, match="data file not found"):
        load_g_lm("trained", data_dir=tmp_path)
    with pytest.raises(DataFileMissingError, match=r"missing\.npz"):
        load_g_lm(tmp_path / "missing.npz")


def test_provenance_reads_readme_row(tmp_path):
    _write_good(tmp_path, "x.npz")
    (tmp_path / "README.md").write_text(
        "| file | source | what |\n| --- | --- | --- |\n| `x.npz` | `x.pkl` | a test file |\n"
    )
    assert provenance(tmp_path / "x.npz").source == "| `x.npz` | `x.pkl` | a test file |"


@pytest.mark.parametrize(
    ("writer", "msg"),
    [
        (lambda p: p.write_text("not a zip"), "cannot read"),
        (
            lambda p: np.save(p.with_suffix(".npy"), np.ones(3)) or p.with_suffix(".npy").rename(p),
            "not an .npz",
        ),
        (lambda p: np.savez(p, other=np.ones((1, 1, 2, 2))), "no array 'G_LM'"),
        (lambda p: np.savez(p, G_LM=np.ones((14, 64, 64))), r"shape \(layers, heads, dk, dk\)"),
        (lambda p: np.savez(p, G_LM=np.ones((1, 1, 2, 3))), r"shape \(layers, heads, dk, dk\)"),
        (lambda p: np.savez(p, G_LM=np.full((1, 1, 2, 2), np.nan)), "non-finite"),
        (lambda p: np.savez(p, G_LM=np.ones((1, 1, 2, 2), dtype=int)), "real floating"),
        (lambda p: np.savez(p, G_LM=np.array([None, 1], dtype=object)), "cannot read G_LM"),
    ],
)
def test_malformed_files(tmp_path, writer, msg):
    path = tmp_path / "bad.npz"
    writer(path)
    with pytest.raises(DataFileFormatError, match=msg):
        load_g_lm(path)


def test_expected_shape_mismatch(tmp_path):
    path = _write_good(tmp_path)
    with pytest.raises(DataFileFormatError, match=r"\(5, 14, 64, 64\)"):
        load_g_lm(path, expected_shape=(5, 14, 64, 64))


def test_vendored_data_loads_without_shared(monkeypatch, tmp_path):
    """A fresh clone has no ../shared: the vendored copies load, sha256-checked."""
    from pyverify.data import VENDORED, vendored_dir
    from pyverify.paths import sha256_file

    monkeypatch.chdir(tmp_path)  # no ../shared/data reachable from here
    assert data_dir() == vendored_dir()
    for name, digest in VENDORED.items():
        assert sha256_file(vendored_dir() / name) == digest
    G = load_g_lm("trained", expected_shape=(5, 14, 64, 64))
    assert np.all(np.isfinite(G))
    assert provenance("trained").source is not None  # README row beside the file


def test_vendored_checksum_mismatch_is_refused(monkeypatch, tmp_path):
    import pyverify.data as pdata

    bad = dict(pdata.VENDORED, **{KNOWN_FILES["identity"]: "0" * 64})
    monkeypatch.setattr(pdata, "VENDORED", bad)
    with pytest.raises(DataFileFormatError, match="sha256"):
        load_g_lm("identity")
