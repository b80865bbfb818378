"""``pyverify bench``: ratios of ours to a baseline, timed side by side in one run.

* :mod:`~pyverify.bench.run` -- the rows P1-P3, L, Gc and the run;
* :mod:`~pyverify.bench.author_rows` -- the rows against the author's formulation;
* :mod:`~pyverify.bench.train_rows` -- the training step against the author's trainer;
* :mod:`~pyverify.bench.rows` -- the v51 sizes, a row's dict and its text line;
* :mod:`~pyverify.bench.timing` -- interleaved timing;
* :mod:`~pyverify.bench.memory` -- the peak extra memory of one call.
"""

from pyverify.bench.rows import format_table
from pyverify.bench.run import check_device, run_bench
from pyverify.bench.timing import time_pair

__all__ = ["check_device", "format_table", "run_bench", "time_pair"]
