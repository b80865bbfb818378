"""Print the mutation score of the last ``mutmut run`` (reads ``.mutmut-cache``).

Usage: ``python property_tests/mutation_score.py [path/to/.mutmut-cache]``. Prints, per
source file and in total, the mutants killed, survived, timed out, suspicious and not
checked, and the score ``killed / (checked)``; exits 0 (the score is a report, not a gate).
"""

from __future__ import annotations

import sqlite3
import sys
from collections import Counter, defaultdict
from pathlib import Path

STATUS = {
    "ok_killed": "killed",
    "bad_survived": "survived",
    "bad_timeout": "timeout",
    "ok_suspicious": "suspicious",
    "untested": "untested",
    "skipped": "skipped",
}


def main(argv: list[str]) -> int:
    cache = Path(argv[1] if len(argv) > 1 else ".mutmut-cache")
    if not cache.exists():
        print(f"no mutmut cache at {cache}: run `mutmut run` first")
        return 1
    con = sqlite3.connect(cache)
    rows = con.execute(
        "SELECT SourceFile.filename, Mutant.status FROM Mutant "
        "JOIN Line ON Mutant.line = Line.id JOIN SourceFile ON Line.sourcefile = SourceFile.id"
    ).fetchall()
    per_file: dict[str, Counter] = defaultdict(Counter)
    for filename, status in rows:
        per_file[filename][STATUS.get(status, status)] += 1
    total: Counter = Counter()
    cols = ("killed", "survived", "timeout", "suspicious", "untested")
    print(f"{'file':<40} " + " ".join(f"{c:>10}" for c in cols) + f" {'score':>7}")
    for filename in sorted(per_file):
        c = per_file[filename]
        total.update(c)
        print(f"{filename:<40} " + " ".join(f"{c[k]:>10}" for k in cols) + f" {_score(c):>7}")
    print(f"{'TOTAL':<40} " + " ".join(f"{total[k]:>10}" for k in cols) + f" {_score(total):>7}")
    return 0


def _score(c: Counter) -> str:
    checked = c["killed"] + c["survived"] + c["timeout"] + c["suspicious"]
    if not checked:
        return "-"
    # a timeout counts as killed (the mutant made the suite hang), as mutmut does
    return f"{100 * (c['killed'] + c['timeout']) / checked:.1f}%"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
