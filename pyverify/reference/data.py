"""Loading the released trained ``G_LM`` operators (``.npz``) and their provenance.

The files are vendored as package data in :mod:`pyverify.data` (provenance,
licence notice and sha256 in that folder's ``README.md``). The folder is found
in this order:

1. the ``data_dir`` argument;
2. the environment variable ``PYVERIFY_DATA_DIR``;
3. the vendored copy ``pyverify/data/`` (every file there is checked against
   its recorded sha256 when loaded).

A missing folder or file raises :class:`DataFileMissingError` (a
``FileNotFoundError``) listing where it looked; a file that is not an
``.npz`` with one finite real array ``G_LM`` of shape ``(layers, heads, dk, dk)``
raises :class:`DataFileFormatError` (a ``ValueError``).
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from pyverify.data import VENDORED, DataChecksumError, vendored_dir, vendored_file
from pyverify.errors import InputTypeError, InputValueError, MissingInputError
from pyverify.paths import sha256_file

__all__ = [
    "DATA_DIR_ENV",
    "KNOWN_FILES",
    "DataFileFormatError",
    "DataFileMissingError",
    "Provenance",
    "data_dir",
    "data_file",
    "load_g_lm",
    "provenance",
]

DATA_DIR_ENV = "PYVERIFY_DATA_DIR"
"""Environment variable naming the data folder."""

KNOWN_FILES: dict[str, str] = {
    "trained": "pldr_v51_110m_1_G_LM.npz",
    "identity": "identity_G_LM.npz",
    "random_normal": "random_normal_G_LM.npz",
}
"""Short names of the three released files."""


class DataFileMissingError(MissingInputError):
    """The data folder or a data file does not exist."""


class DataFileFormatError(InputValueError):
    """A data file is not an ``.npz`` holding a valid ``G_LM`` array."""


def _candidates() -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        out.append((f"${DATA_DIR_ENV}", Path(env)))
        return out
    out.append(("vendored package data", vendored_dir()))
    return out


def _check_vendored(path: Path) -> None:
    """Check the sha256 of ``path`` if it is one of the vendored files."""
    if path.resolve().parent == vendored_dir() and path.name in VENDORED:
        try:
            vendored_file(path.name)
        except DataChecksumError as exc:
            raise DataFileFormatError(str(exc)) from exc


def data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """Resolve the folder holding the ``G_LM`` files.

    Parameters
    ----------
    path : str or path-like, optional
        Explicit folder; otherwise ``$PYVERIFY_DATA_DIR``, then the vendored
        copy in ``pyverify/data/``.

    Returns
    -------
    pathlib.Path
        An existing folder.

    Raises
    ------
    DataFileMissingError
        If no candidate folder exists (the message lists them).
    """
    tried = [("argument", Path(path))] if path is not None else _candidates()
    for _, cand in tried:
        if cand.is_dir():
            return cand.resolve()
    where = "; ".join(f"{why}: {p}" for why, p in tried)
    raise DataFileMissingError(
        f"G_LM data folder not found (looked at {where}). Pass data_dir=... or set "
        f"{DATA_DIR_ENV} to the folder holding {', '.join(KNOWN_FILES.values())}."
    )


def data_file(
    name: str | os.PathLike[str], data_dir_: str | os.PathLike[str] | None = None
) -> Path:
    """Resolve a data file by short name, file name or path.

    Parameters
    ----------
    name : str or path-like
        ``"trained"``, ``"identity"``, ``"random_normal"``, a file name inside the
        data folder, or a path to a file (absolute, or containing a separator).
    data_dir_ : str or path-like, optional
        Data folder (see :func:`data_dir`).

    Returns
    -------
    pathlib.Path
        An existing file.

    Raises
    ------
    DataFileMissingError
        If the file does not exist.
    """
    if not isinstance(name, str | os.PathLike):
        raise InputTypeError(f"name must be a str or path; got {type(name).__name__}")
    sname = os.fspath(name)
    p = Path(sname)
    if p.is_absolute() or os.sep in sname or (os.altsep and os.altsep in sname):
        path = p
    else:
        path = data_dir(data_dir_) / KNOWN_FILES.get(sname, sname)
    if not path.is_file():
        raise DataFileMissingError(
            f"G_LM data file not found: {path} (known short names: {', '.join(KNOWN_FILES)})"
        )
    return path


def load_g_lm(
    name: str | os.PathLike[str] = "trained",
    *,
    data_dir: str | os.PathLike[str] | None = None,
    expected_shape: tuple[int, int, int, int] | None = None,
) -> NDArray[np.float64]:
    """Load a ``G_LM`` array ``(layers, heads, dk, dk)`` as float64.

    Parameters
    ----------
    name : str or path-like, default "trained"
        Short name (``"trained"``, ``"identity"``, ``"random_normal"``), file
        name in the data folder, or a path.
    data_dir : str or path-like, optional
        Data folder (see :func:`data_dir`).
    expected_shape : tuple of 4 int, optional
        Also require this exact shape (the released files are ``(5, 14, 64, 64)``).

    Returns
    -------
    numpy.ndarray, shape (layers, heads, dk, dk)
        The operators, converted exactly from float32 to float64.

    Raises
    ------
    DataFileMissingError
        If the folder or file is absent.
    DataFileFormatError
        If the file is not an ``.npz`` with a finite real 4-D ``G_LM`` whose
        last two axes are equal (or not of ``expected_shape``), or is a
        vendored file whose sha256 differs from the recorded one.
    """
    path = data_file(name, data_dir)
    _check_vendored(path)
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise DataFileFormatError(f"{path}: cannot read as .npz ({exc})") from exc
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise DataFileFormatError(f"{path}: not an .npz archive (a bare .npy array?)")
    with loaded as npz:
        if "G_LM" not in npz.files:
            raise DataFileFormatError(
                f"{path}: no array 'G_LM' in the archive (found: {npz.files})"
            )
        try:
            arr = npz["G_LM"]
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise DataFileFormatError(f"{path}: cannot read G_LM ({exc})") from exc
    if arr.dtype.kind != "f":
        raise DataFileFormatError(f"{path}: G_LM must be a real floating array; got {arr.dtype}")
    if arr.ndim != 4 or arr.shape[2] != arr.shape[3]:
        raise DataFileFormatError(
            f"{path}: G_LM must have shape (layers, heads, dk, dk); got {arr.shape}"
        )
    if expected_shape is not None and tuple(arr.shape) != tuple(expected_shape):
        raise DataFileFormatError(
            f"{path}: G_LM must have shape {tuple(expected_shape)}; got {arr.shape}"
        )
    out = arr.astype(np.float64)
    if not np.all(np.isfinite(out)):
        raise DataFileFormatError(f"{path}: G_LM has non-finite entries")
    return out


@dataclass(frozen=True)
class Provenance:
    """Where a data file came from (for reports).

    Attributes
    ----------
    file : str
        File name.
    path : str
        Absolute path read.
    sha256 : str
        Hex digest of the file's bytes.
    source : str or None
        The file's row of the README table (``| file | source pickle | what it is |``),
        or ``None`` if the README lacks one.
    """

    file: str
    path: str
    sha256: str
    source: str | None


def provenance(
    name: str | os.PathLike[str] = "trained", *, data_dir: str | os.PathLike[str] | None = None
) -> Provenance:
    """File name, sha256 and README source line of a data file.

    Parameters
    ----------
    name : str or path-like, default "trained"
        As in :func:`load_g_lm`.
    data_dir : str or path-like, optional
        Data folder.

    Returns
    -------
    Provenance
        The record.

    Raises
    ------
    DataFileMissingError
        If the file is absent.
    """
    path = data_file(name, data_dir).resolve()
    source = None
    readme = path.parent / "README.md"
    if readme.is_file():
        for line in readme.read_text(encoding="utf-8").splitlines():
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            if line.lstrip().startswith("|") and cells and cells[0] == path.name:
                source = line.strip()
                break
    return Provenance(file=path.name, path=str(path), sha256=sha256_file(path), source=source)
