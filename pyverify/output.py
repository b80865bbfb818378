"""What the commands print and write: progress lines, plain-text tables, JSON files, paths.

Output paths are checked before any work is done (:func:`check_output_file`,
:func:`check_output_dir`), so that a bad ``-o`` costs nothing and loses nothing.
"""

from __future__ import annotations

import io
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pyverify.errors import InputValueError, OutputPathError

__all__ = [
    "Progress",
    "check_output_dir",
    "check_output_file",
    "json_array",
    "json_number",
    "json_text",
    "progress",
    "read_json",
    "table",
    "write_json",
    "write_text",
]


#: A progress callback: called with one line of text per step of a slow command.
Progress = Callable[[str], None]


def progress(msg: str) -> None:
    """Print one progress line on stderr (stdout stays the result)."""
    print(msg, file=sys.stderr, flush=True)


def table(header: Sequence[str], rows: Iterable[Sequence[str]], right: Sequence[int] = ()) -> str:
    """Plain-text table: a header, a rule of dashes, the rows (columns ``right`` right-aligned)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    rule = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
    t = Table(box=rule, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), header_style=None)
    for i, h in enumerate(header):
        t.add_column(h, justify="right" if i in right else "left", no_wrap=True)
    for r in rows:
        t.add_row(*r)
    buf = io.StringIO()
    Console(file=buf, width=100_000, color_system=None, highlight=False, markup=False,
            emoji=False, soft_wrap=True).print(t)  # fmt: skip
    return "\n".join(line.rstrip() for line in buf.getvalue().rstrip("\n").split("\n"))


def json_array(a: Any) -> Any:
    """An array as nested lists for strict JSON: ``nan`` as ``None``, infinities as strings."""
    import numpy as np

    a = np.asarray(a)
    if a.dtype == bool:
        return a.tolist()
    if a.dtype.kind in "iu":
        return a.astype(int).tolist()

    return _json_safe(a.astype(np.float64).tolist())


def json_number(x: float) -> float | str | None:
    """``x`` for strict JSON: ``nan`` as ``None``, infinities as ``"inf"``/``"-inf"``."""
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float):
        return json_number(obj)
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_safe(v) for v in obj]
    return obj


def json_text(data: object) -> str:
    """``data`` as indented, key-sorted, strict JSON text (see :func:`json_number`)."""
    return json.dumps(_json_safe(data), indent=2, sort_keys=True, allow_nan=False) + "\n"


def write_text(path: Path, text: str) -> None:
    """Write ``text`` via a temporary file beside ``path``: never half a file."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise OutputPathError(f"cannot write {path}: {exc.strerror or exc}") from exc


def read_json(path: Path, where: str = "") -> dict[str, Any]:
    """A JSON object from ``path``; a one-line error (``where: path: ...``) otherwise."""
    pre = f"{where}: " if where else ""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputValueError(f"{pre}{path}: unreadable ({exc})") from None
    if not isinstance(data, dict):
        raise InputValueError(f"{pre}{path}: not a JSON object")
    return data


def write_json(path: Path, data: object) -> None:
    """Write ``data`` as :func:`json_text` (via :func:`write_text`)."""
    write_text(path, json_text(data))


def _writable_folder(folder: Path, option: str) -> None:
    """Create ``folder`` (and parents) if needed; raise unless it is a writable folder."""
    for above in (folder, *folder.parents):
        if above.exists():
            if not above.is_dir():
                raise OutputPathError(f"{option}: {above} is a file, not a folder")
            break
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(
            f"{option}: cannot create folder {folder}: {exc.strerror or exc}"
        ) from exc
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option}: folder {folder} is not writable")


def check_output_file(path: str | os.PathLike[str], option: str) -> Path:
    """Check that ``path`` can be written as a file (its folder is created); return it.

    Raises
    ------
    OutputPathError
        Naming ``option`` and the problem: a folder at ``path``, a file where
        a folder should be, no permission.
    """
    p = Path(path)
    if p.is_dir():
        raise OutputPathError(f"{option}: {p} is a folder; give a file name")
    _writable_folder(p.parent if str(p.parent) else Path("."), option)
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputPathError(f"{option}: {p} is not writable")
    return p


def check_output_dir(path: str | os.PathLike[str], option: str, files: Sequence[str] = ()) -> Path:
    """Check that ``path`` is (or can be made) a writable folder for ``files``; return it.

    Raises
    ------
    OutputPathError
        Naming ``option`` and the problem (a file at ``path``, a folder where
        one of ``files`` goes, no permission).
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputPathError(f"{option}: {p} is a file, not a folder")
    _writable_folder(p, option)
    for name in files:
        f = p / name
        if f.is_dir():
            raise OutputPathError(f"{option}: {f} is a folder; it must be a file (move it away)")
        if f.exists() and not os.access(f, os.W_OK):
            raise OutputPathError(f"{option}: {f} is not writable")
    return p
