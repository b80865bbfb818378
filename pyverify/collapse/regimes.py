"""The study's regimes: what is trained, on which task, with which seeds, in which folder.

A regime is one specimen the claims ledger can speak about, with its own gate
(:mod:`pyverify.claims.gates`): the byte-level text of the first studies
(``bytes``), in-context recall (``recall``) and BPE-tokenised text (``text``).
Each seed of a regime is one study of the byte study's shape (settings, runs,
``collapse.json``), its settings the regime's with that ``seed``; a regime of one
seed keeps the study in its folder (``reports/collapse/`` for ``bytes``, as every
saved study before regimes), a regime of several puts seed ``s`` in
``<folder>/seed-<s>/`` (:func:`seed_folder`). :func:`regime_studies` lists them;
:func:`~pyverify.collapse.runner.run_studies` runs all their jobs in one schedule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from pyverify.collapse.config import STUDY_RUNS, RunConfig, full_config
from pyverify.collapse.recall_regime import (
    RECALL_RUNS,
    RECALL_SEEDS,
    recall_b128_config,
    recall_config,
)
from pyverify.collapse.text_regime import text_config
from pyverify.errors import InputValueError

__all__ = ["REGIMES", "Regime", "regime", "regime_studies", "seed_folder"]


@dataclass(frozen=True)
class Regime:
    """A regime: its name, folder under ``reports/``, runs, seeds, settings and scope.

    Attributes
    ----------
    name : str
        ``--regime`` name.
    folder : str
        Its folder under ``reports/``.
    runs : tuple of str
        The named runs it trains (:data:`~pyverify.collapse.config.RUNS`).
    seeds : tuple of int
        Training seeds (every run trains once per seed).
    config : callable
        Its settings (fixed before its first full run; their reasons in the preset's
        docstring).
    what : str
        One line: the task and what the regime can say.
    """

    name: str
    folder: str
    runs: tuple[str, ...]
    seeds: tuple[int, ...]
    config: Callable[[], RunConfig]
    what: str

    def seed_config(self, seed: int) -> RunConfig:
        """The settings of seed ``seed``."""
        return replace(self.config(), seed=seed).validate()


def seed_folder(base: Path, reg: Regime, seed: int) -> Path:
    """The study folder of ``seed`` of ``reg`` in its regime folder ``base``."""
    return base if len(reg.seeds) == 1 else base / f"seed-{seed}"


def regime_studies(
    base: Path, reg: Regime, runs: tuple[str, ...] | None = None
) -> list[tuple[RunConfig, Path, tuple[str, ...]]]:
    """Every seed's study of ``reg`` in its folder ``base``: settings, folder, runs."""
    return [(reg.seed_config(s), seed_folder(base, reg, s), runs or reg.runs) for s in reg.seeds]


REGIMES: dict[str, Regime] = {
    "bytes": Regime(
        "bytes",
        "collapse",
        STUDY_RUNS,
        (0,),
        full_config,
        "byte-level next-token prediction on the vendored Python docs (the first studies' "
        "specimen): no run beats the byte n-gram, so nothing is decided there",
    ),
    "recall": Regime(
        "recall",
        "recall",
        RECALL_RUNS,
        RECALL_SEEDS,
        recall_config,
        "multi-query associative recall (16 key-value pairs, then 8 queries whose answers "
        "are the matching values): the in-context task attention is for, where an n-gram "
        "is at chance by construction",
    ),
    "recall-b128": Regime(
        "recall-b128",
        "recall-b128",
        RECALL_RUNS,
        RECALL_SEEDS,
        recall_b128_config,
        "the recall task again, its second version (4x the batch, no weight decay on the "
        "embedding and output layer): sized so that the exposure-free run is competent",
    ),
    "text": Regime(
        "text",
        "text",
        ("author",),
        (0,),
        text_config,
        "next-token prediction on the vendored Python docs in BPE ids (1,024 pieces): the "
        "tokenised text regime, one seed of the author run, measured once against its token "
        "n-gram",
    ),
}
"""The regimes, in the ledger's order."""


def regime(name: str) -> Regime:
    """The regime ``name``; a one-line error naming the known ones."""
    if name not in REGIMES:
        raise InputValueError(f"--regime must be one of {', '.join(REGIMES)}; got {name!r}")
    return REGIMES[name]
