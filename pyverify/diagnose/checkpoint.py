"""``pyverify diagnose --checkpoint FILE [--tokens FILE | --inputs FILE]``: a real PLDR-LLM.

Loads any ``pldr_model_v510`` state dict (the author's checkpoint dict, a bare
state dict, or a ``pyverify collapse`` checkpoint) into the study's model class
in float64 (:func:`pyverify.measure.load_model`) and measures it through the
SAME code as the study (:func:`pyverify.measure.measure_record` and
:func:`pyverify.measure.measure_final`), so a study run and a released
checkpoint are measured identically: the record (order parameters at every
probe set, ``eps_G``, the author's pairwise order parameter, the learned
singularity, the rotary twirl of G and of the density operator, row energy,
the metric learner's Jacobian, ...) and the final measurements (validation
losses, cache fidelity against full recomputation, the online contract, the N1
mean-operator cache contract). The claims ledger's rows a checkpoint can decide
come from :func:`pyverify.claims.rules.checkpoint_rules` (the study's rules).

Inputs, one of:

* ``--inputs FILE``: a study's saved measurement inputs
  (``reports/collapse/runs/NAME/inputs.json``): the numbers of a study
  checkpoint at step N are then the study's record for step N (same thread count);
* prompts: token ids from a file (``.npy`` int array (S,) or (N, S); ``.json``
  list of lists; otherwise text, one prompt per line of integers separated by
  spaces or commas), or random ids (seeded) when none is given. All prompts form
  one probe set (named by their length, or ``all`` when lengths differ), are
  continued twice for the pairwise order parameter, decoded greedily for cache
  fidelity, have their second half replaced for the online contract, and are
  split in halves for N1 (the first half calibrates the mean operator, the
  second is assessed, the last token of each as the target).
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import numpy as np

from pyverify.errors import InputValueError
from pyverify.measure import (
    FinalInputs,
    MeasureInputs,
    check_ids,
    load_model,
    measure_final,
    measure_record,
    read_inputs,
    token_set,
)
from pyverify.output import Progress

__all__ = ["format_checkpoint", "prompt_inputs", "read_tokens", "run_checkpoint_diagnose"]

JAC_PROBES = 2
"""Prompts whose rows the metric learner's Jacobian is taken on (the study's count)."""
RANK_RTOL = 1e-6
"""Numerical rank tolerance (the study's)."""


def read_tokens(path: str | os.PathLike[str], vocab: int) -> list[np.ndarray]:
    """Read prompts (token ids) from ``path``; each must hold >= 2 ids in ``[0, vocab)``.

    Raises
    ------
    ValueError
        Naming the file (and line) on a missing file, bad syntax or ids out of range.
    """
    p = pathlib.Path(path)
    if not p.is_file():
        raise InputValueError(f"--tokens {p}: no such file")
    try:
        if p.suffix == ".npy":
            arr = np.load(p, allow_pickle=False)
            seqs = [arr] if arr.ndim == 1 else list(arr)
        elif p.suffix == ".json":
            seqs = [np.asarray(s) for s in json.loads(p.read_text())]
        else:
            seqs = []
            for i, line in enumerate(p.read_text().splitlines(), 1):
                if line.strip():
                    try:
                        seqs.append(np.array([int(t) for t in line.replace(",", " ").split()]))
                    except ValueError:
                        raise InputValueError(f"--tokens {p}:{i}: not a list of integers") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InputValueError(f"--tokens {p}: unreadable ({exc})") from exc
    if not seqs:
        raise InputValueError(f"--tokens {p}: no prompts")
    out = []
    for i, s in enumerate(seqs):
        s = np.asarray(s)
        if s.dtype.kind not in "iu" or s.ndim != 1 or s.size < 2:
            raise InputValueError(f"--tokens {p}: prompt {i} must be >= 2 integer ids")
        if s.min() < 0 or s.max() >= vocab:
            raise InputValueError(f"--tokens {p}: prompt {i} has ids outside [0, {vocab})")
        out.append(s.astype(np.int64))
    return out


def prompt_inputs(
    prompts: list[np.ndarray], *, seed: int, n_new: int, n_cont: int
) -> tuple[MeasureInputs, FinalInputs]:
    """The record's and the final measurements' inputs built from prompts (module docstring).

    Raises
    ------
    InputValueError
        With fewer than 2 prompts (a fluctuation and the N1 split need two).
    """
    if len(prompts) < 2:
        raise InputValueError("--checkpoint needs >= 2 prompts (a fluctuation needs two inputs)")
    ts = token_set(prompts)
    lengths = {len(p) for p in prompts}
    name = str(lengths.pop()) if len(lengths) == 1 else "all"
    half = len(prompts) // 2
    rec = MeasureInputs(
        probes={name: ts}, pair_prompts=ts, n_cont=n_cont, seed=seed,
        jac_probes=JAC_PROBES, rank_rtol=RANK_RTOL, val=ts,
    )  # fmt: skip
    fin = FinalInputs(
        val=ts, prompts=ts, n_new=n_new, online=ts, online_prefix=None,
        calibration=token_set(prompts[:half]), assessment=token_set(prompts[half:]), seed=seed,
    )  # fmt: skip
    return rec, fin


def run_checkpoint_diagnose(
    checkpoint: str | os.PathLike[str],
    tokens: str | os.PathLike[str] | None = None,
    *,
    inputs: str | os.PathLike[str] | tuple[MeasureInputs, FinalInputs | None] | None = None,
    n_prompts: int = 8,
    seq_len: int = 16,
    seed: int = 0,
    n_new: int = 16,
    n_cont: int = 16,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The record, the final measurements and the ledger rows of a ``pldr_model_v510``.

    Parameters
    ----------
    checkpoint : str or path
        ``torch.save``d state dict (or the author's checkpoint dict).
    tokens : str or path, optional
        Prompts file (see module docstring); default: ``n_prompts`` random
        prompts of ``seq_len`` ids (seed ``seed``).
    inputs : str, path or tuple, optional
        A study's saved inputs (file, or ``(MeasureInputs, FinalInputs)``); excludes ``tokens``.
    n_prompts, seq_len, seed : int
        Random prompts when no file is given (``seed`` also seeds the sampled
        continuations and the replaced suffixes).
    n_new : int
        Greedy tokens decoded per prompt for the cache-fidelity rows (E2, E8).
    n_cont : int
        Sampled tokens per continuation for the author's pairwise order parameter.
    progress : callable, optional
        Called with a line per step.

    Returns
    -------
    dict
        ``{"kind": "checkpoint", "model", "record", "final", "ledger"}`` (JSON-ready).
    """
    from pyverify.claims.rules import checkpoint_rules

    if tokens is not None and inputs is not None:
        raise InputValueError("--tokens and --inputs exclude each other")
    say = progress or (lambda _s: None)
    say(f"diagnose: loading {checkpoint}")
    model = load_model(checkpoint)
    cfg = model.cfg
    if inputs is not None:
        rec_in, fin_in = read_inputs(inputs) if isinstance(inputs, str | os.PathLike) else inputs
        for ts in rec_in.sets() + (fin_in.sets() if fin_in is not None else []):
            check_ids(ts, cfg.vocab, f"--inputs {inputs}")
        n_in = sum(g.shape[0] for g in rec_in.main)
    else:
        if tokens is not None:
            prompts = read_tokens(tokens, cfg.vocab)
        else:
            rng = np.random.default_rng(seed)
            prompts = [rng.integers(0, cfg.vocab, size=seq_len) for _ in range(n_prompts)]
        rec_in, fin_in = prompt_inputs(prompts, seed=seed, n_new=n_new, n_cont=n_cont)
        n_in = len(prompts)
    say(
        f"diagnose: {cfg.num_layers} layers x {cfg.num_heads} heads, dk {cfg.dk}, "
        f"vocab {cfg.vocab}; {n_in} prompts"
    )
    info: dict[str, Any] = {"checkpoint": os.fspath(checkpoint), "layers": cfg.num_layers,
                            "heads": cfg.num_heads, "dk": cfg.dk, "d_model": cfg.d_model,
                            "vocab": cfg.vocab, "n_prompts": n_in}  # fmt: skip
    info["tokens"] = None if tokens is None else os.fspath(tokens)
    if inputs is not None:
        info["inputs"] = os.fspath(inputs) if isinstance(inputs, str | os.PathLike) else "given"
    say("diagnose: the record (order parameters, continuations, structure, Jacobian)")
    record = measure_record(model, rec_in)
    final: dict[str, Any] = {}
    if fin_in is not None:
        say("diagnose: final measurements (losses, greedy decoding, contracts)")
        final = measure_final(model, fin_in)
    out = {"kind": "checkpoint", "model": info, "record": record, "final": final}
    # without final measurements the rows that need them say "not measured" themselves
    out["ledger"] = [{**v.to_json(), "numbers": v.numbers} for v in checkpoint_rules(out)]
    return out


def _m3(grid: Any) -> str:
    from pyverify.claims.stats import flat, mmm

    lo, med, hi = mmm(flat(grid))
    return f"{lo:.3g} / {med:.3g} / {hi:.3g}"


def format_checkpoint(d: dict[str, Any]) -> str:
    """A short text summary of :func:`run_checkpoint_diagnose`'s result."""
    m, rec, fin = d["model"], d["record"], d["final"]
    lines = [
        f"checkpoint {m['checkpoint']}: {m['layers']} layers x {m['heads']} heads, "
        f"dk {m['dk']}, vocab {m['vocab']}, {m['n_prompts']} prompts",
        "order parameter, min / median / max over layers x heads:",
    ]
    for S, grids in rec["order_parameter"].items():
        lines.append(f"  S={S}: " + "; ".join(f"{t} {_m3(g)}" for t, g in grids.items()))
    eps = "; ".join(f"S={S} {_m3(g).split(' / ')[-1]}" for S, g in rec["eps_G"].items())
    lines += [
        f"eps_G max {eps}",
        f"pairwise order parameter of G (RMS form): {_m3(rec['pairwise_order']['G']['rms'])}",
        f"sigma2/sigma1 of A: {_m3(rec['sigma2_over_sigma1_A'])}; "
        f"row energy of A: {_m3(rec['row_energy_A'])}",
    ]
    if fin:
        f, o = fin["fidelity"]["prompt_G"], fin["online_contract"]
        lines += [
            f"cache fidelity (KV+G-cache vs full recomputation): tokens identical "
            f"{f['tokens_identical']}/{fin['fidelity']['n_prompts']}, "
            f"max logit gap {f['max_logit_gap']:.3g}",
            f"online contract: {o['changed']} of {o['entries']} prefix logits change "
            f"(max {o['max_abs_change']:.3g})",
        ]
    for row in d.get("ledger", []):
        nums = "; ".join(
            f"{k} {format(x, '.3g') if isinstance(x, float) else x}"
            for k, x in row["numbers"].items()
        )
        why = f" ({row['reason']})" if row.get("reason") else ""
        lines.append(f"{row['claim']} {row['verdict'].upper()}{why}: {nums}")
    return "\n".join(lines)
