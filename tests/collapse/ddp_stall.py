"""A torchrun worker for the kill-and-resume test: the real ``pyverify collapse`` job, except
that rank 1 stops before it draws the batch of step ``STALL``: it writes its pid to ``MARK``
and sleeps until it is killed (so the kill lands at a known step, whatever the load).

Usage: ``torchrun ... ddp_stall.py -- STALL MARK collapse --run NAME ...``
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from pyverify.cli import main
from pyverify.collapse import corpus

STALL, MARK, ARGV = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
_batch = corpus.Corpus.batch


def _stalling_batch(self, seed, step, batch, seq):
    if step == STALL and os.environ.get("RANK") == "1":
        tmp = MARK.with_name(MARK.name + ".tmp")
        tmp.write_text(str(os.getpid()))
        tmp.replace(MARK)  # the test sees the whole pid or nothing
        time.sleep(300)
    return _batch(self, seed, step, batch, seq)


corpus.Corpus.batch = _stalling_batch
sys.exit(main(ARGV))
