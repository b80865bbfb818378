"""``python -m pyverify.cli`` (what ``torchrun -m pyverify.cli -- collapse ...`` runs)."""

import sys

from pyverify.cli import main

sys.exit(main())
