"""Read saved studies and run folders, and merge them into one study.

A source is a study folder (``collapse.json``, ``timings.json``: what ``pyverify
collapse`` writes) or a run folder (``run.json``, ``timing.json``: what one job
writes, :mod:`~pyverify.collapse.job`). One study folder is returned as it was
saved. Several sources merge into the shape of ``collapse.json``
(``{"study", "settings", "baseline", "runs"}``, runs in name order, as a saved
file reads back) and of ``timings.json`` (``{"runs": {name: timing}, ...}``),
after checking that they are runs of one study:

* their settings agree apart from ``steps`` (a run may have been given more or
  fewer steps); the merged ``settings`` are those of the source holding
  ``author`` (else of the first source), and each run's own step count is its
  history's last step;
* their n-gram baselines agree to 1e-9 relative (the same corpus and windows;
  not bitwise, since folders may come from machines whose ``log`` differ in the
  last bit);
* no run appears twice.

A violation is one line naming the folder.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyverify.collapse.job import RUN_FILE, RUN_FORMAT, SETTINGS_FILE, TIMING_FILE
from pyverify.collapse.train import CHECKPOINT
from pyverify.errors import InputValueError, MissingInputError
from pyverify.output import read_json

__all__ = [
    "RESULT_FILE",
    "RUNS_DIR",
    "TIMINGS_FILE",
    "NotAStudyError",
    "load_sources",
    "merge_sources",
]

RESULT_FILE = "collapse.json"
RUNS_DIR = "runs"
"""The local study's run folders: ``<study>/runs/<name>/``."""
TIMINGS_FILE = "timings.json"
BASELINE_RTOL = 1e-9
"""Baselines of one corpus agree to rounding (float64 sums of logs: ~1e-15 relative)."""
AUTHOR = "author"


class NotAStudyError(InputValueError):
    """``collapse.json`` is JSON but not an ablation study's result."""


Source = tuple[Path, dict[str, Any], dict[str, Any] | None]
"""A folder, its study-shaped result and its timings (``None`` when absent)."""


def _read_source(d: Path) -> Source:
    if not d.exists():
        raise MissingInputError(f"{d}: no such folder")
    if not d.is_dir():
        raise InputValueError(f"{d}: not a folder (a study or a run folder)")
    study_f, run_f = d / RESULT_FILE, d / RUN_FILE
    if study_f.is_file():
        result = read_json(study_f)
        if result.get("study") != "ablation" or "runs" not in result:
            raise NotAStudyError(f"{study_f}: not an ablation study (rerun `pyverify collapse`)")
        tf = d / TIMINGS_FILE
        return d, result, read_json(tf) if tf.is_file() else None
    if run_f.is_file():
        run = read_json(run_f)
        if run.get("format") != RUN_FORMAT or run.get("study") != "ablation":
            raise NotAStudyError(
                f"{run_f}: not a run folder of this pyverify's format {RUN_FORMAT} "
                "(rerun the job with --resume)"
            )
        name = run["name"]
        result = {"study": "ablation", "settings": run["settings"],
                  "baseline": run["baseline"], "runs": {name: run["entry"]}}  # fmt: skip
        tf = d / TIMING_FILE
        return d, result, {"runs": {name: read_json(tf)}} if tf.is_file() else None
    if (d / CHECKPOINT).is_file() or (d / SETTINGS_FILE).is_file():
        raise MissingInputError(
            f"{d}: the run is not finished (no {RUN_FILE}); continue it with "
            f"`pyverify collapse --run NAME -o {d} --resume` and the same settings"
        )
    if (d / RUNS_DIR).is_dir():
        raise MissingInputError(
            f"{d}: the study is not finished (no {RESULT_FILE}): `pyverify collapse -o {d} "
            f"--resume` finishes it; `pyverify claims -i {d}/{RUNS_DIR}/*` reads its finished runs"
        )
    raise MissingInputError(
        f"{d}: neither a study ({RESULT_FILE}) nor a run folder ({RUN_FILE}): "
        "run `pyverify collapse` first"
    )


def _first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}{k}: {'absent' if k not in a else a[k]!r} here, " + (
                    f"{'absent' if k not in b else b[k]!r} there"
                )
            diff = _first_difference(a[k], b[k], f"{path}{k}.")
            if diff is not None:
                return diff
        return None
    if a != b:
        return f"{path.rstrip('.')}: {a!r} here, {b!r} there"
    return None


def merge_sources(sources: Sequence[Source]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One study from several sources (see the module docstring); a one-line error otherwise."""
    if len(sources) == 1:
        return sources[0][1], sources[0][2]
    ref = next((s for s in sources if AUTHOR in s[1]["runs"]), sources[0])
    ref_dir, ref_res, _ = ref
    ref_settings = {k: v for k, v in ref_res["settings"].items() if k != "steps"}
    ref_base = ref_res["baseline"]["val_loss_by_order"]
    runs: dict[str, Any] = {}
    timing_runs: dict[str, Any] = {}
    seen: dict[str, Path] = {}
    for d, res, tim in sources:
        settings = {k: v for k, v in res["settings"].items() if k != "steps"}
        diff = _first_difference(settings, ref_settings)
        if diff is not None:
            raise InputValueError(
                f"{d}: settings differ from {ref_dir}'s ({diff}); merge runs of one study"
            )
        base = res["baseline"]["val_loss_by_order"]
        if len(base) != len(ref_base) or not all(
            math.isclose(x, y, rel_tol=BASELINE_RTOL) for x, y in zip(base, ref_base, strict=True)
        ):
            raise InputValueError(
                f"{d}: n-gram baseline differs from {ref_dir}'s ({base} vs {ref_base}): "
                "another corpus?"
            )
        for name, entry in res["runs"].items():
            if name in seen:
                raise InputValueError(f"{d}: run {name!r} is also in {seen[name]}; name it once")
            seen[name] = d
            runs[name] = entry
            if tim is not None and name in tim.get("runs", {}):
                timing_runs[name] = tim["runs"][name]
    result = {
        "study": "ablation",
        "settings": ref_res["settings"],
        "baseline": ref_res["baseline"],
        "runs": {n: runs[n] for n in sorted(runs)},
    }
    timings = {"sources": [str(s[0]) for s in sources], "runs": timing_runs}
    return result, timings


def load_sources(dirs: Sequence[Path]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Read study and run folders and merge them (:func:`merge_sources`)."""
    if not dirs:
        raise InputValueError("no study or run folder given")
    return merge_sources([_read_source(Path(d)) for d in dirs])
