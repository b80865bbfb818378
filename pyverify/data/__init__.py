"""Vendored data files (package data) and their sha256, checked on every load.

See ``README.md`` in this folder for provenance and licences: the three
released ``G_LM`` operators (Apache-2.0, ``burcgokden/PLDR-LLM-with-KVG-cache``)
and the Python 3.11 documentation corpus (PSF License Version 2), and the BPE
tokenizer trained on that corpus's training split.
"""

from __future__ import annotations

from pathlib import Path

from pyverify.errors import InputValueError
from pyverify.paths import sha256_file

__all__ = ["CORPUS_FILE", "TOKENIZER_FILE", "VENDORED", "DataChecksumError", "vendored_dir",
           "vendored_file"]  # fmt: skip

CORPUS_FILE = "python311-docs.txt.xz"
"""File name of the training corpus."""

TOKENIZER_FILE = "python311-docs-bpe1024.json"
"""File name of the byte-level BPE tokenizer trained on the corpus's training split
(``pyverify.collapse.bpe``; how it was made: ``README.md``)."""

VENDORED: dict[str, str] = {
    "pldr_v51_110m_1_G_LM.npz": "724f354c0554c6acfb1454da89c9aa592b8e81e8bf96953d8c64370fb5b84cef",
    "identity_G_LM.npz": "f52f69617783e174a8e4d56c3b0171a8a1db70622cc7da01434b8383d98dae60",
    "random_normal_G_LM.npz": "160ffcbbf2df917388fcef3a21140822fa6bf4da4a177baa1a301b6be1bd4708",
    CORPUS_FILE: "94f0bde2cc74b909c28847b2145157ed7c16fc6e43dd1c089ec7522d6d66f98b",
    TOKENIZER_FILE: "cfe9c068e9eaaad4a150463fb5e89dd2f4fca1c6718622b10a455a154615659c",
}
"""File name -> expected sha256 of every vendored data file."""


class DataChecksumError(InputValueError):
    """A vendored data file's sha256 differs from the recorded one."""


def vendored_dir() -> Path:
    """The folder holding the vendored files (this package's folder)."""
    return Path(__file__).resolve().parent


def vendored_file(name: str) -> Path:
    """Path of the vendored file ``name`` (a key of :data:`VENDORED`), after checking its sha256.

    Raises
    ------
    FileNotFoundError
        If ``name`` is unknown or the file is missing (a broken install).
    DataChecksumError
        If the file's sha256 differs from :data:`VENDORED`.
    """
    if name not in VENDORED:
        raise FileNotFoundError(f"no vendored data file {name!r} (known: {', '.join(VENDORED)})")
    path = vendored_dir() / name
    if not path.is_file():
        raise FileNotFoundError(f"vendored data file missing: {path} (reinstall pyverify)")
    digest = sha256_file(path)
    if digest != VENDORED[name]:
        raise DataChecksumError(
            f"{path}: sha256 {digest} differs from the recorded {VENDORED[name]} (corrupt file)"
        )
    return path
