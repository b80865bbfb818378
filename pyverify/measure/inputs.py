"""What a measurement runs on: token sets, the record's inputs and the final inputs.

A :data:`TokenSet` is a tuple of int64 tensors ``(N_g, S_g)``, each a group of
sequences of one length; sequences of several lengths (a user's prompts) are
grouped by length in order of first appearance, and every measurement stacks
its per-sequence results in that order. A set of one group (the study's probe
windows) is run as one batch, so the study and ``pyverify diagnose --checkpoint``
given the same set compute the same numbers with the same operations.

:class:`MeasureInputs` are the inputs of a record (every measurement step of a
study, and a checkpoint); :class:`FinalInputs` those of the measurements at the
end of a run (and of a checkpoint). Both round-trip through JSON (token lists),
so a study's inputs can be handed to ``pyverify diagnose --inputs``.
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from pyverify.errors import InputValueError

__all__ = [
    "Answers",
    "FinalInputs",
    "MeasureInputs",
    "TokenSet",
    "check_ids",
    "n_seqs",
    "read_inputs",
    "seq_lengths",
    "token_lists",
    "token_set",
]

TokenSet = tuple[Tensor, ...]
"""Groups of equal-length int64 token sequences, each ``(N_g, S_g)``."""


def token_set(seqs: Tensor | Iterable[Sequence[int] | np.ndarray | Tensor]) -> TokenSet:
    """A :data:`TokenSet` from an int tensor ``(N, S)`` or sequences of any lengths.

    Raises
    ------
    InputValueError
        If a sequence is empty or not integer, or there is none.
    """
    if isinstance(seqs, Tensor) and seqs.ndim == 2:
        if seqs.dtype not in (torch.int64, torch.int32) or seqs.shape[0] < 1 or seqs.shape[1] < 1:
            raise InputValueError(f"token set: need a non-empty int tensor; got {seqs.dtype}")
        return (seqs.to(torch.int64),)
    groups: dict[int, list[Tensor]] = {}
    for s in seqs:
        t = torch.as_tensor(np.asarray(s))
        if t.ndim != 1 or t.numel() < 1 or t.dtype.is_floating_point or t.dtype == torch.bool:
            raise InputValueError("token set: every sequence must be a non-empty 1-D int array")
        groups.setdefault(t.numel(), []).append(t.to(torch.int64))
    if not groups:
        raise InputValueError("token set: no sequences")
    return tuple(torch.stack(g) for g in groups.values())


def n_seqs(ts: TokenSet) -> int:
    """Number of sequences in ``ts``."""
    return sum(g.shape[0] for g in ts)


def seq_lengths(ts: TokenSet) -> list[int]:
    """Length of every sequence of ``ts``, in stacking order."""
    return [g.shape[1] for g in ts for _ in range(g.shape[0])]


def token_lists(ts: TokenSet) -> list[list[int]]:
    """The sequences of ``ts`` as lists of ints, in stacking order (JSON-ready)."""
    return [row.tolist() for g in ts for row in g]


def check_ids(ts: TokenSet, vocab: int, where: str) -> None:
    """Raise :class:`InputValueError` naming ``where`` unless every id lies in ``[0, vocab)``."""
    for g in ts:
        if int(g.min()) < 0 or int(g.max()) >= vocab:
            raise InputValueError(f"{where}: token ids outside [0, {vocab})")


def _set(d: dict[str, Any], key: str, where: str) -> TokenSet:
    try:
        return token_set(d[key])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputValueError(f"{where}: bad or missing token set {key!r} ({exc})") from None


@dataclass(frozen=True)
class Answers:
    """Where the answers of the validation sequences lie (the recall task).

    Attributes
    ----------
    positions : tuple of int
        Target positions (indices into ``w[1:]``) whose token is an answer.
    prompt_len : int
        Tokens of the prompt an inference cache holds (the kv section: no answer).
    """

    positions: tuple[int, ...]
    prompt_len: int

    def __post_init__(self) -> None:
        if not self.positions or min(self.positions) < self.prompt_len - 1 or self.prompt_len < 1:
            raise InputValueError("answers: need positions at or after the prompt's last token")

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"positions": list(self.positions), "prompt_len": self.prompt_len}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Answers:
        """Inverse of :meth:`to_json`."""
        return cls(tuple(int(p) for p in d["positions"]), int(d["prompt_len"]))


@dataclass(frozen=True)
class MeasureInputs:
    """Inputs of one record (:func:`pyverify.measure.measure_record`).

    Attributes
    ----------
    probes : dict of str to TokenSet
        Named probe sets (the study names them by context length); the order
        parameter and ``eps_G`` are computed over each, everything else over the
        LAST (the main set). JSON keeps the order: a list of ``[name, sequences]``.
    pair_prompts : TokenSet
        Prompts continued twice by sampling for the author's pairwise order parameter.
    n_cont : int
        Tokens sampled per continuation.
    seed : int
        Seed of the two continuations (generators ``1_000_003 * seed + branch``).
    jac_probes : int
        The metric learner's Jacobian is taken on the rows of the first
        ``jac_probes`` sequences of the main set.
    rank_rtol : float
        Numerical rank: singular values above ``rank_rtol * sigma_1``.
    val : TokenSet
        Windows of ``S + 1`` tokens for the teacher-forced validation loss
        (``()``: not measured).
    answers : Answers or None
        Where ``val``'s answers lie (the recall task): their accuracy and loss are
        measured in every inference mode (:mod:`pyverify.measure.answers`).
    """

    probes: dict[str, TokenSet]
    pair_prompts: TokenSet
    n_cont: int
    seed: int
    jac_probes: int
    rank_rtol: float
    val: TokenSet = ()
    answers: Answers | None = None

    def __post_init__(self) -> None:
        if not self.probes:
            raise InputValueError("measure inputs: no probe set")
        for name, ts in self.probes.items():
            if n_seqs(ts) < 2:
                raise InputValueError(
                    f"measure inputs: probe set {name!r} needs >= 2 sequences (a fluctuation)"
                )
        if self.n_cont < 1 or self.jac_probes < 1 or not self.rank_rtol > 0:
            raise InputValueError("measure inputs: n_cont, jac_probes, rank_rtol must be > 0")
        if self.val and min(seq_lengths(self.val)) < 2:
            raise InputValueError("measure inputs: validation windows need >= 2 tokens")

    def sets(self) -> list[TokenSet]:
        """Every token set held."""
        return [*self.probes.values(), self.pair_prompts, self.val]

    @property
    def main(self) -> TokenSet:
        """The main probe set (the last)."""
        return list(self.probes.values())[-1]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (token lists)."""
        return {
            "probes": [[k, token_lists(v)] for k, v in self.probes.items()],  # ordered
            "pair_prompts": token_lists(self.pair_prompts),
            "n_cont": self.n_cont,
            "seed": self.seed,
            "jac_probes": self.jac_probes,
            "rank_rtol": self.rank_rtol,
            "val": token_lists(self.val),
            **({"answers": self.answers.to_json()} if self.answers else {}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], where: str = "inputs") -> MeasureInputs:
        """Inverse of :meth:`to_json`."""
        try:
            pairs = d["probes"].items() if isinstance(d["probes"], dict) else d["probes"]
            probes = {str(k): token_set(v) for k, v in pairs}
            return cls(
                probes=probes,
                pair_prompts=_set(d, "pair_prompts", where),
                n_cont=int(d["n_cont"]),
                seed=int(d["seed"]),
                jac_probes=int(d["jac_probes"]),
                rank_rtol=float(d["rank_rtol"]),
                val=token_set(d["val"]) if d.get("val") else (),
                answers=Answers.from_json(d["answers"]) if d.get("answers") else None,
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise InputValueError(f"{where}: not measurement inputs ({exc})") from None


@dataclass(frozen=True)
class FinalInputs:
    """Inputs of the measurements at the end of a run (:func:`pyverify.measure.measure_final`).

    Attributes
    ----------
    val : TokenSet
        Windows of ``S + 1`` tokens: teacher-forced and causal validation loss.
    prompts : TokenSet
        Prompts of the cache-fidelity decoding (greedy, ``n_new`` tokens).
    n_new : int
        Greedy tokens per prompt.
    online : TokenSet
        Sequences of the online contract (their suffix is replaced).
    online_prefix : int or None
        Length of the kept prefix (None: half of each sequence).
    calibration : TokenSet
        Contexts whose mean operators form the N1 mean-operator cache.
    assessment : TokenSet
        Windows of ``S + 1`` tokens: the first ``S`` enter the model, the last is
        the external target of the final position (N1).
    seed : int
        Seed of the online contract's replaced suffixes.
    a_prefix : int or None
        Prompt length of the loss with A from a prompt (None: half of each window).
    answers : Answers or None
        Where ``val``'s answers lie (the recall task), as :class:`MeasureInputs`'.
    """

    val: TokenSet
    prompts: TokenSet
    n_new: int
    online: TokenSet
    online_prefix: int | None
    calibration: TokenSet
    assessment: TokenSet
    seed: int
    a_prefix: int | None = None
    answers: Answers | None = None

    def __post_init__(self) -> None:
        if self.n_new < 1:
            raise InputValueError("final inputs: n_new must be >= 1")
        if min(seq_lengths(self.val) + seq_lengths(self.assessment)) < 2:
            raise InputValueError("final inputs: windows need >= 2 tokens (input and target)")
        if min(seq_lengths(self.online)) < 2:
            raise InputValueError("final inputs: online-contract sequences need >= 2 tokens")
        p = self.online_prefix
        if p is not None and not 1 <= p < min(seq_lengths(self.online)):
            raise InputValueError("final inputs: online_prefix must leave a suffix to replace")
        a = self.a_prefix
        if a is not None and not 1 <= a < min(seq_lengths(self.val)):
            raise InputValueError("final inputs: a_prefix must lie inside the windows' inputs")

    def sets(self) -> list[TokenSet]:
        """Every token set held."""
        return [self.val, self.prompts, self.online, self.calibration, self.assessment]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (token lists)."""
        return {
            "val": token_lists(self.val),
            "prompts": token_lists(self.prompts),
            "n_new": self.n_new,
            "online": token_lists(self.online),
            "online_prefix": self.online_prefix,
            "calibration": token_lists(self.calibration),
            "assessment": token_lists(self.assessment),
            "seed": self.seed,
            "a_prefix": self.a_prefix,
            **({"answers": self.answers.to_json()} if self.answers else {}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], where: str = "inputs") -> FinalInputs:
        """Inverse of :meth:`to_json`."""
        try:
            p = d["online_prefix"]
            return cls(
                val=_set(d, "val", where),
                prompts=_set(d, "prompts", where),
                n_new=int(d["n_new"]),
                online=_set(d, "online", where),
                online_prefix=None if p is None else int(p),
                calibration=_set(d, "calibration", where),
                assessment=_set(d, "assessment", where),
                seed=int(d["seed"]),
                a_prefix=None if d.get("a_prefix") is None else int(d["a_prefix"]),
                answers=Answers.from_json(d["answers"]) if d.get("answers") else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputValueError(f"{where}: not final-measurement inputs ({exc})") from None


def read_inputs(path: str | os.PathLike[str]) -> tuple[MeasureInputs, FinalInputs | None]:
    """Read ``{"record": ..., "final": ...}`` (``final`` optional) from a JSON file.

    Raises
    ------
    InputValueError
        Naming the file when it is missing, not JSON or not of this form.
    """
    p = pathlib.Path(path)
    where = f"--inputs {p}"
    if not p.is_file():
        raise InputValueError(f"{where}: no such file")
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputValueError(f"{where}: unreadable ({exc})") from exc
    if not isinstance(d, dict) or "record" not in d:
        raise InputValueError(f"{where}: expected a JSON object with 'record' (and 'final')")
    rec = MeasureInputs.from_json(d["record"], where)
    fin = FinalInputs.from_json(d["final"], where) if d.get("final") else None
    return rec, fin
