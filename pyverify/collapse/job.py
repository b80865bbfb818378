"""One named run as one job: ``pyverify collapse --run NAME -o DIR``.

A job trains (or resumes) one run of the study under any launcher -- one plain
process, ``torchrun`` (DDP over the ranks, :mod:`~pyverify.collapse.distributed`),
a Slurm array, the local study (:mod:`~pyverify.collapse.runner`) -- and writes
its own folder. Rank 0 alone measures and writes; every rank must see the folder
(one machine, or a shared file system) to resume. The folder:

* ``settings.json`` -- the settings (:meth:`RunConfig.to_dict`), written first;
  ``--settings FILE`` reads such a file, or any JSON with a ``settings`` key
  (``run.json``, ``collapse.json``);
* ``inputs.json`` -- the measurement inputs (``pyverify diagnose --checkpoint
  DIR/checkpoint.pt --inputs DIR/inputs.json`` reproduces a record);
* ``init.pt``, ``checkpoint.pt`` -- the author's checkpoint format
  (:mod:`~pyverify.collapse.train`): the step-0 model, and the last state,
  written at every measurement, every ``SAVE_EVERY_S`` seconds and at the end;
* ``timing.json`` -- wall times (all sessions, each up to its last checkpoint),
  decoding speed, world size, backend, host: machine-dependent, updated at every
  checkpoint;
* ``run.json`` -- once the run is done: the settings, the n-gram baseline and the
  run's entry (its spec, history and end-of-run measurements, or ``diverged``
  with the history up to the last checkpoint). Deterministic for fixed settings,
  thread count and world size. ``pyverify claims -i DIR ...`` and ``pyverify
  collapse`` merge such folders (:mod:`~pyverify.collapse.merge`).

A folder holding work is not overwritten: ``--resume`` continues it (a finished
run is kept; one finished under an older :data:`FINAL_VERSION` is measured again
from its final checkpoint, without retraining), ``--restart`` discards it.
"""

from __future__ import annotations

import platform
import time
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path
from typing import Any

import torch

from pyverify.collapse.config import LATER_DEFAULTS, RUNS, RunConfig
from pyverify.collapse.corpus import Corpus, load_data
from pyverify.collapse.distributed import DistEnv, broadcast, check_split, start, stop
from pyverify.collapse.inputs import INPUTS_FILE, PHASE_VAL, final_inputs, write_inputs
from pyverify.collapse.ngram import ngram_losses
from pyverify.collapse.recall import RecallTask, ngram_baseline
from pyverify.collapse.train import (
    CHECKPOINT,
    INIT,
    PROGRESS_EVERY_S,
    TrainingDivergedError,
    load_checkpoint,
    train_run,
)
from pyverify.errors import InputValueError, MissingInputError, UserError
from pyverify.host import load_averages
from pyverify.measure import as_float64, load_model, measure_final
from pyverify.measure.decoding import time_per_token
from pyverify.output import Progress, read_json, write_json

__all__ = [
    "FINAL_VERSION",
    "RUN_FILE",
    "RUN_FORMAT",
    "SETTINGS_FILE",
    "TIMING_FILE",
    "baseline",
    "check_run",
    "folder_work",
    "is_finished",
    "read_json",
    "read_settings",
    "run_job",
    "settings_from_dict",
]

RUN_FILE = "run.json"
SETTINGS_FILE = "settings.json"
TIMING_FILE = "timing.json"
RUN_FORMAT = 1
"""Version of ``run.json``'s layout."""
FINAL_VERSION = 4
"""Version of the end-of-run measurements; a finished run of another is measured again
on ``--resume`` (from its final checkpoint, without retraining). 2: the causal
validation loss was added after the first full run showed that the teacher-forced
loss sees later tokens through G. 3: one measurement path (:mod:`pyverify.measure`):
the online contract and the N1 cache contract added. 4: the fidelity's step-by-step
margin counts (E2 decides on them) and seven interleaved timing repeats (E5's spread)."""
OWN_FILES = (RUN_FILE, TIMING_FILE, SETTINGS_FILE, INPUTS_FILE, CHECKPOINT, INIT)
"""What a job writes (``--restart`` removes these and nothing else)."""


def baseline(cfg: RunConfig, corpus: Corpus | RecallTask | None = None) -> dict[str, Any]:
    """The n-gram baseline (:mod:`~pyverify.collapse.ngram`) on the validation windows.

    The same windows :func:`~pyverify.collapse.inputs.final_inputs` scores the model on.
    The recall task's (:func:`~pyverify.collapse.recall.ngram_baseline`): the best
    n-gram's accuracy on the validation answers (``accuracy``, by order in
    ``accuracy_by_order``), its loss there (``val_loss_by_order``: nats per answer,
    not per token), and chance.
    """
    corpus = corpus if corpus is not None else load_data(cfg)
    if isinstance(corpus, RecallTask):
        b = ngram_baseline(corpus, cfg.seed, cfg.batch)
        return {
            "model": b["model"],
            "task": "recall",
            "train_sequences": b["train_sequences"],
            "accuracy_by_order": [o["accuracy"] for o in b["by_order"]],
            "val_loss_by_order": [o["loss"] for o in b["by_order"]],
            "best_order": b["best_order"],
            "accuracy": b["accuracy"],
            "chance": corpus.chance(),
            "uniform_chance": corpus.uniform_chance(),
        }
    val = corpus.windows(cfg.n_val, cfg.seq + 1, phase=PHASE_VAL).numpy()
    losses = ngram_losses(corpus.train, val, cfg.ngram_max, vocab=corpus.vocab)
    best = min(range(len(losses)), key=losses.__getitem__)
    return {
        "model": "Witten-Bell interpolated byte n-gram, train split, same validation windows",
        "val_loss_by_order": losses,
        "best_order": best + 1,
        "val_loss": losses[best],
    }


OPTIONAL_SETTINGS: dict[str, type] = {"recall": RecallTask}
"""Settings that hold a dataclass or None (their default), read back as that class."""


def _from_value(kind: Any, default: Any, value: Any, where: str) -> Any:
    if is_dataclass(kind):
        if not isinstance(value, dict):
            raise InputValueError(f"{where}: expected an object, got {value!r}")
        return _build(kind, value, where)
    if isinstance(default, tuple):
        if not isinstance(value, list):
            raise InputValueError(f"{where}: expected a list, got {value!r}")
        return tuple(tuple(v) if isinstance(v, list) else v for v in value)
    return value


def _build(cls: Any, d: dict[str, Any], where: str) -> Any:
    known = {f.name: f for f in fields(cls)}
    extra = sorted(set(d) - set(known))
    if extra:
        raise InputValueError(f"{where}: unknown setting {extra[0]!r}")
    kwargs = {}
    later = LATER_DEFAULTS if cls is RunConfig else {}
    for name, f in known.items():
        if name not in d and name in later:  # left out of to_dict() at the first study's value
            kwargs[name] = later[name]
            continue
        if name not in d:
            raise InputValueError(f"{where}: setting {name!r} missing")
        default = f.default
        if default is MISSING and f.default_factory is not MISSING:
            default = f.default_factory()
        kind = type(default) if is_dataclass(default) else None
        if cls is RunConfig and name in OPTIONAL_SETTINGS and d[name] is not None:
            kind = OPTIONAL_SETTINGS[name]
        kwargs[name] = _from_value(kind, default, d[name], f"{where}: {name}")
    return cls(**kwargs)


def settings_from_dict(d: dict[str, Any], where: str = "settings") -> RunConfig:
    """The :class:`RunConfig` of ``RunConfig.to_dict()``'s output (inverse; checked)."""
    try:
        return _build(RunConfig, d, where).validate()
    except (TypeError, ValueError) as exc:  # a field of the wrong kind
        if isinstance(exc, UserError):
            raise
        raise InputValueError(f"{where}: {exc}") from exc


def read_settings(path: Path) -> RunConfig:
    """Settings from ``path``: a settings object, or any JSON with a ``settings`` key."""
    if not path.is_file():
        raise MissingInputError(f"--settings: {path} not found")
    data = read_json(path)
    return settings_from_dict(data.get("settings", data), str(path))


def folder_work(out_dir: Path) -> str | None:
    """What a run folder holds, in a few words (``None`` when it holds no run)."""
    run_f, ckpt = out_dir / RUN_FILE, out_dir / CHECKPOINT
    if run_f.is_file():
        done = read_json(run_f)
        return f"run {done.get('name')!r}, finished"
    if ckpt.is_file():
        timing = out_dir / TIMING_FILE
        t = read_json(timing) if timing.is_file() else {}
        where = f" at step {t['step']} of {t['steps']}" if "step" in t and "steps" in t else ""
        return f"run {t.get('run', '?')!r}, unfinished{where}"
    return None


def is_finished(cfg: RunConfig, name: str, out_dir: Path) -> bool:
    """``out_dir`` holds the run ``name`` finished with these settings and :data:`FINAL_VERSION`."""
    run_f = out_dir / RUN_FILE
    if not run_f.is_file():
        return False
    done = read_json(run_f)
    return (
        done.get("format") == RUN_FORMAT
        and done.get("name") == name
        and done.get("final_version") == FINAL_VERSION
        and done.get("settings") == cfg.to_dict()
        and done.get("entry", {}).get("spec") == RUNS[name].to_dict()
    )


def _plan(cfg: RunConfig, name: str, out_dir: Path, resume: bool, restart: bool) -> str:
    """``done`` (a finished run of these settings, kept) or ``train``; clears on restart."""
    held = folder_work(out_dir)
    if held is not None and not (resume or restart):
        raise InputValueError(
            f"{out_dir} holds {held}: --resume continues it, --restart discards it"
        )
    if restart:
        for f in OWN_FILES:
            (out_dir / f).unlink(missing_ok=True)
        return "train"
    run_f = out_dir / RUN_FILE
    if resume and run_f.is_file():
        held_name = read_json(run_f).get("name")
        if held_name != name:
            raise InputValueError(
                f"{out_dir} holds run {held_name!r}, not {name!r}: give each run its own "
                "folder, or --restart"
            )
        if is_finished(cfg, name, out_dir):
            return "done"
    return "train"


def _final(
    model: Any, cfg: RunConfig, corpus: Corpus | RecallTask, out_dir: Path
) -> tuple[dict, dict]:
    model = model.cpu()  # the end-of-run measurements and decoding speed: on the CPU
    fin = final_inputs(cfg, corpus)
    init64 = load_model(out_dir / INIT)
    final = measure_final(as_float64(model), fin, init64)
    timing = time_per_token(model, fin.prompts[0], cfg.n_new)
    return final, timing


def check_run(name: str, cfg: RunConfig) -> None:
    """Refuse, in one line, a run unknown or unfit for ``cfg`` (before any work)."""
    if name not in RUNS:
        raise InputValueError(f"--run: unknown run {name!r} (known: {', '.join(RUNS)})")
    if RUNS[name].objective == "prompt-A-answers" and cfg.recall is None:
        raise InputValueError(f"--run {name}: its loss is on the recall task's answers; "
                              "these settings have no recall task")  # fmt: skip


def run_job(
    cfg: RunConfig,
    name: str,
    out_dir: Path,
    *,
    env: DistEnv | None = None,
    resume: bool = False,
    restart: bool = False,
    threads: int = 1,
    progress: Progress | None = None,
    progress_every_s: float = PROGRESS_EVERY_S,
    stop_after: int | None = None,
) -> dict[str, Any] | None:
    """Train and measure the run ``name`` into ``out_dir``; return ``run.json``'s content.

    Parameters
    ----------
    cfg : RunConfig
        Settings.
    name : str
        A run of :data:`~pyverify.collapse.config.RUNS`.
    out_dir : pathlib.Path
        The run's folder (see the module docstring).
    env : DistEnv, optional
        Rank, world size and device (:func:`~pyverify.collapse.distributed.dist_env`);
        default one CPU process. The process group is started and left here.
    resume, restart : bool
        Continue the work in ``out_dir`` / discard it (without either, a folder
        holding a run is refused).
    threads : int
        ``torch.set_num_threads`` (the numbers are bitwise for a fixed count).
    progress : callable, optional
        Receives rank 0's progress lines.
    progress_every_s : float
        Seconds between progress lines.
    stop_after : int, optional
        Stop after this many steps (an interruption, for tests); nothing final is written.

    Returns
    -------
    dict or None
        On rank 0, the content of ``run.json`` (``None`` after ``stop_after``);
        ``None`` on the other ranks.
    """
    env = env or DistEnv()
    check_run(name, cfg)
    if threads < 1:
        raise InputValueError(f"--threads must be >= 1; got {threads}")
    if resume and restart:
        raise InputValueError("--resume and --restart exclude each other")
    cfg.validate()
    check_split(cfg.batch, env)  # before the rendezvous: every rank says it, none waits
    say = progress if (progress is not None and env.is_main) else (lambda _m: None)
    torch.set_num_threads(threads)
    start(env)
    try:
        plan: tuple[str, str] = ("error", "")
        if env.is_main:
            try:
                out_dir.mkdir(parents=True, exist_ok=True)
                plan = ("ok", _plan(cfg, name, out_dir, resume, restart))
            except UserError as exc:
                plan = ("error", str(exc))
        plan = broadcast(plan, env)  # every rank acts on rank 0's reading of the folder
        if plan[0] == "error":
            raise InputValueError(plan[1])
        if plan[1] == "done":
            say(f"collapse {name}: finished already ({out_dir / RUN_FILE})")
            return read_json(out_dir / RUN_FILE) if env.is_main else None
        return _train_and_measure(
            cfg, name, out_dir, env, resume, threads, say, progress_every_s, stop_after
        )
    finally:
        stop(env)


def _train_and_measure(
    cfg: RunConfig,
    name: str,
    out_dir: Path,
    env: DistEnv,
    resume: bool,
    threads: int,
    say: Progress,
    progress_every_s: float,
    stop_after: int | None,
) -> dict[str, Any] | None:
    run = RUNS[name]
    steps = cfg.run_steps(run)
    corpus = load_data(cfg)
    timing_f = out_dir / TIMING_FILE
    earlier = 0.0  # the sessions before this one, each up to its last checkpoint
    if env.is_main:
        write_json(out_dir / SETTINGS_FILE, cfg.to_dict())
        write_inputs(out_dir / INPUTS_FILE, cfg, corpus)
        if resume and timing_f.is_file():
            earlier = float(read_json(timing_f).get("train_and_measure_s", 0.0))
    host = {
        "run": name,
        "steps": steps,
        "world_size": env.world_size,
        "backend": env.backend,
        "device": str(env.device),
        "threads_per_process": threads,
        "host": platform.node(),
        "torch": torch.__version__,
    }
    t1 = time.perf_counter()

    def saved(step: int) -> None:  # rank 0, after each checkpoint
        elapsed = earlier + time.perf_counter() - t1
        write_json(timing_f, {**host, "step": step, "train_and_measure_s": elapsed})

    stamp = {"format": RUN_FORMAT, "study": "ablation", "name": name,
             "final_version": FINAL_VERSION, "settings": cfg.to_dict()}  # fmt: skip
    try:
        model, history = train_run(cfg, run, corpus, out_dir, resume=resume,
                                   stop_after=stop_after, env=env, progress=say,
                                   progress_every_s=progress_every_s, on_save=saved)  # fmt: skip
    except TrainingDivergedError as exc:  # a finding, recorded as such
        if not env.is_main:
            return None
        say(f"collapse {name}: {exc}")
        ckpt = out_dir / CHECKPOINT
        hist = load_checkpoint(ckpt)["trainer"]["history"] if ckpt.is_file() else []
        entry = {"spec": run.to_dict(), "history": hist, "diverged": str(exc)}
        done = {**stamp, "baseline": baseline(cfg, corpus), "entry": entry}
        write_json(timing_f, {**host, "train_and_measure_s": earlier + time.perf_counter() - t1})
        write_json(out_dir / RUN_FILE, done)
        return done
    if not env.is_main or (stop_after is not None and stop_after < steps):
        return None
    t2 = time.perf_counter()
    say(f"collapse {name}: end-of-run measurements")
    final, decode = _final(model, cfg, corpus, out_dir)
    entry: dict[str, Any] = {"spec": run.to_dict(), "history": history, **final}
    done = {**stamp, "baseline": baseline(cfg, corpus), "entry": entry}
    write_json(timing_f, {
        **host,
        "step": steps,
        "train_and_measure_s": earlier + t2 - t1,
        "final_s": time.perf_counter() - t2,
        "loadavg": load_averages(),
        **decode,
    })  # fmt: skip
    write_json(out_dir / RUN_FILE, done)
    say(f"collapse {name}: wrote {out_dir / RUN_FILE}")
    return done
