"""Where the project's folders are (the repository root, ``lean/``, ``reports/``); file digests."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pyverify.errors import MissingInputError


def repo_root(start: Path | None = None) -> Path:
    """Return the repository root.

    The first of ``start`` (default: the working directory) and its parents
    that holds ``lean/lakefile.toml``; failing that, the folder above the
    installed ``pyverify`` package (an editable install).

    Raises
    ------
    FileNotFoundError
        When neither holds the Lean package.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "lean" / "lakefile.toml").is_file():
            return folder
    beside = Path(__file__).resolve().parent.parent
    if (beside / "lean" / "lakefile.toml").is_file():
        return beside
    raise MissingInputError(
        f"no pyverify checkout found at or above {here} (looked for lean/lakefile.toml)"
    )


def sha256_file(path: Path) -> str:
    """Return the hex SHA-256 of a file."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
