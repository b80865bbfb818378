"""Bad input on the command line: one line naming the problem, exit status 2, no work done.

Each case is one line of ``CASES``: the arguments (``{tmp}`` is a fresh folder
prepared by ``_prepare``), and a fragment the error line must contain. Output
paths are checked before any work: the commands would take seconds to minutes,
so a case that returns at once with nothing written shows that.
"""

# ruff: noqa: E501 (the table of cases reads best one case a line)

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from pyverify.cli import main
from pyverify.errors import UserError


def _prepare(tmp: Path) -> None:
    (tmp / "a_file").write_text("x")
    (tmp / "a_dir").mkdir()
    (tmp / "out_with_dir" / "verification.json").mkdir(parents=True)
    np.savez(tmp / "huge.npz", G_LM=np.full((1, 2, 4, 4), 1e300))
    np.savez(tmp / "empty.npz", G_LM=np.zeros((0, 2, 4, 4)))


CASES = [  # (id, argv, fragment of the one error line)
    ("report-o-file", "report -o {tmp}/a_file --no-lean --no-tests --no-bench --quick", "is a file, not a folder"),
    ("report-o-under-file", "report -o {tmp}/a_file/sub --no-lean --no-tests --no-bench", "a_file is a file"),
    ("report-verification-is-dir", "report -o {tmp}/out_with_dir --no-lean --no-tests --no-bench", "verification.json is a folder"),
    ("diagnose-json-dir", "diagnose identity --json {tmp}/a_dir", "diagnose --json"),
    ("diagnose-json-under-file", "diagnose identity --json {tmp}/a_file/x.json", "a_file is a file"),
    ("bench-o-dir", "bench --quick -o {tmp}/a_dir", "bench -o/--output"),
    ("bench-device-bogus", "bench --quick --device bogus", "--device 'bogus' is not a torch device"),
    ("crosscheck-json-dir", "crosscheck --quick --dtype fp64 --json {tmp}/a_dir", "crosscheck --json"),
    ("crosscheck-empty-shard", "crosscheck --quick --shard 999/999", "shard 999/999 holds no case"),
    ("crosscheck-bad-shard", "crosscheck --shard 3/2", "1 <= k <= n"),
    ("crosscheck-bad-dtype", "crosscheck --dtype float8", "unknown dtype 'float8'"),
    ("crosscheck-bad-device", "crosscheck --device mps", "device 'mps'"),
    ("diagnose-huge-entries", "diagnose {tmp}/huge.npz", "huge.npz (G_LM): g has entries up to 1e+300"),
    ("diagnose-no-layers", "diagnose {tmp}/empty.npz", "at least one layer and one head; got shape (0, 2, 4, 4)"),
    ("diagnose-missing-file", "diagnose {tmp}/absent.npz", "absent.npz"),
    ("collapse-o-file", "collapse --small -o {tmp}/a_file", "collapse -o/--output: "),
    ("collapse-threads-0", "collapse --small --threads 0 -o {tmp}/out", "--threads: must be >= 1; got 0"),
    ("lean-build-home-file", "lean build --toolchain wasm --home {tmp}/a_file", "lean build --home: "),
    ("lean-build-home-under-file", "lean build --toolchain wasm --home {tmp}/a_file/sub", "a_file is a file, not a folder"),
    ("lean-setup-home-file", "lean setup --home {tmp}/a_file", "lean setup --home: "),
    ("lean-manifest-home-file", "lean manifest --toolchain wasm --home {tmp}/a_file", "lean manifest --home: "),
    ("lean-build-project-file", "lean build --toolchain wasm --project {tmp}/a_file", "lean build --project: "),
    ("lean-build-project-absent", "lean build --toolchain wasm --project {tmp}/absent", "absent does not exist"),
]  # fmt: skip


def _run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own errors
        return int(exc.code or 0)


@pytest.mark.parametrize(("argv", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(argv, fragment, tmp_path, capsys):
    _prepare(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    t0 = time.perf_counter()
    status = _run(argv.format(tmp=tmp_path).split())
    seconds = time.perf_counter() - t0
    err = capsys.readouterr().err
    # ours: "pyverify: error: ..."; argparse's (option types): "pyverify <cmd>: error: ..."
    lines = [ln for ln in err.splitlines() if ln.startswith("pyverify") and ": error: " in ln]
    assert status == 2
    assert len(lines) == 1 and "Traceback" not in err, err
    assert fragment in lines[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written
    assert seconds < 20, "the bad input was found only after the work"  # generous, under load


def test_negative_seed_names_the_option(capsys):
    assert _run(["diagnose", "--model", "--seed", "-1"]) == 2
    err = capsys.readouterr().err
    assert "argument --seed: must be >= 0" in err and "Traceback" not in err


def test_a_bug_is_not_a_user_error(monkeypatch):
    """A ``ValueError`` that is not a :class:`UserError` is a bug: its traceback shows."""
    import pyverify.report.trace

    def buggy(_root):
        raise ValueError("an internal inconsistency")

    monkeypatch.setattr(pyverify.report.trace, "run_trace", buggy)
    with pytest.raises(ValueError, match="internal inconsistency"):
        main(["trace"])


def test_user_errors_keep_their_builtin_bases():
    from pyverify.errors import InputTypeError, InputValueError, OutputPathError
    from pyverify.kernels import PowerLawOverflowError as KernelsOverflow
    from pyverify.reference import NonFiniteStageError, PowerLawOverflowError

    assert KernelsOverflow is PowerLawOverflowError  # one hierarchy for both implementations
    assert issubclass(PowerLawOverflowError, NonFiniteStageError)
    for cls in (InputValueError, OutputPathError, NonFiniteStageError):
        assert issubclass(cls, UserError) and issubclass(cls, ValueError)
    assert issubclass(InputTypeError, UserError) and issubclass(InputTypeError, TypeError)


def test_each_rank_names_itself_under_torchrun(monkeypatch, capsys):
    """Under a launcher of 2 processes the error line says which rank printed it; alone, not."""
    argv = ["bench", "--quick", "--device", "bogus"]
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    assert _run(argv) == 2
    assert capsys.readouterr().err.startswith("pyverify [rank 1/2]: error: --device 'bogus'")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    assert _run(argv) == 2
    assert capsys.readouterr().err.startswith("pyverify: error: --device 'bogus'")
