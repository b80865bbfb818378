"""The study's measurement inputs: fixed windows of the validation split.

Every window is cut by :meth:`pyverify.collapse.corpus.Corpus.windows` (evenly
spaced; a ``phase`` per role keeps the roles disjoint), so the inputs are the
same for every run and every step, and ``pyverify diagnose --inputs`` can be
given exactly what the study measured (:func:`write_inputs`).
"""

from __future__ import annotations

from pathlib import Path

from pyverify.collapse.config import RunConfig
from pyverify.collapse.corpus import Corpus
from pyverify.collapse.recall import RecallTask
from pyverify.measure.inputs import Answers, FinalInputs, MeasureInputs
from pyverify.output import write_json

__all__ = ["INPUTS_FILE", "answers", "final_inputs", "record_inputs", "write_inputs"]

INPUTS_FILE = "inputs.json"

PHASE_PROBES, PHASE_PROMPTS, PHASE_VAL, PHASE_PAIRS, PHASE_ONLINE = 0.0, 0.25, 0.5, 0.75, 0.125


def record_inputs(cfg: RunConfig, corpus: Corpus | RecallTask) -> MeasureInputs:
    """A record's inputs: probes at every ``s_measure`` (named by length), pair prompts, val."""
    return MeasureInputs(
        probes={
            str(S): (corpus.windows(cfg.n_probe, S, phase=PHASE_PROBES),)
            for S in sorted(cfg.s_measure)
        },
        pair_prompts=(corpus.windows(cfg.n_pairs, cfg.pair_prompt_len, phase=PHASE_PAIRS),),
        n_cont=cfg.pair_new,
        seed=cfg.seed,
        jac_probes=cfg.jac_probes,
        rank_rtol=cfg.rank_rtol,
        val=(corpus.windows(cfg.n_val, cfg.seq + 1, phase=PHASE_VAL),),
        answers=answers(cfg),
    )


def answers(cfg: RunConfig) -> Answers | None:
    """Where the validation sequences' answers lie (the recall task), else None."""
    t = cfg.recall
    if t is None:
        return None
    return Answers(tuple(int(p) for p in t.answer_positions()), t.kv_len)


def final_inputs(cfg: RunConfig, corpus: Corpus | RecallTask) -> FinalInputs:
    """The end-of-run inputs (the reasons for each are in :mod:`pyverify.collapse.config`)."""
    val = (corpus.windows(cfg.n_val, cfg.seq + 1, phase=PHASE_VAL),)
    return FinalInputs(
        val=val,
        prompts=(corpus.windows(cfg.n_prompts, cfg.prompt_len, phase=PHASE_PROMPTS),),
        n_new=cfg.n_new,
        online=(corpus.windows(cfg.online_n, cfg.online_len, phase=PHASE_ONLINE),),
        online_prefix=cfg.online_prefix,
        calibration=(corpus.windows(cfg.n_probe, cfg.seq, phase=PHASE_PROBES),),
        assessment=val,
        seed=cfg.seed,
        a_prefix=cfg.prompt_len,
        answers=answers(cfg),
    )


def write_inputs(path: Path, cfg: RunConfig, corpus: Corpus | RecallTask) -> None:
    """Save both input sets as JSON (``pyverify diagnose --checkpoint CK --inputs PATH``)."""
    rec, fin = record_inputs(cfg, corpus), final_inputs(cfg, corpus)
    write_json(path, {"record": rec.to_json(), "final": fin.to_json()})
