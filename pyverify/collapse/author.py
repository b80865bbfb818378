"""The paper author's model and trainer, imported from a checkout of their repository.

``PYVERIFY_AUTHOR_SRC`` names a checkout of ``burcgokden/PLDR-LLM-with-KVG-cache``;
nothing of theirs is copied here. What runs is their ``pldr_model_v510`` (the model,
their initialisers) and their ``pldr_run_model_v510`` (the trainer class
``dist_pldr_model_e2e``: its ``__init__`` wraps the model in FSDP and builds their
AdamW, their ``LinearWarmupCosineLRSchedule`` and their GradScaler; its
``dist_train_step`` is their step; ``create_masks`` and ``masked_loss_function``
their loss). Three things are supplied from outside, each stated where it is used:

* torchtune's ``RotaryPositionalEmbeddings`` (their model imports it): the installed
  package, or its one file loaded by path when the package's ``__init__`` needs
  optional dependencies (``pip install --no-deps torchtune==0.6.1`` is enough);
* a stand-in ``keras`` module when keras is absent: their trainer imports it at the
  top and uses only ``keras.metrics.Mean`` for its running averages, which
  :class:`Mean` replaces (bookkeeping; it never touches a gradient);
* for float64 comparisons, :class:`Rope64` in place of their rotary module, whose
  table and rotation are float32 whatever the input dtype (torchtune casts to
  ``float()``): the same formula (adjacent pairs, ``theta_p = base^(-2p/dk)``)
  evaluated in float64, checked against their module in float32 by
  :func:`rope_agreement`.

Their trainer runs in a one-process group (world size 1, gloo on CPU, NCCL on CUDA)
created here when none exists; at world size 1 FSDP turns their script's
``HYBRID_SHARD`` into ``NO_SHARD`` (one rank holds every parameter either way).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import math
import os
import sys
import tempfile
import types
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from pyverify.collapse.config import RunConfig, RunSpec
from pyverify.errors import MissingInputError
from pyverify.trainable.decoder import ModelConfig

__all__ = [
    "ENV",
    "REPO",
    "Mean",
    "Rope64",
    "author_hparams",
    "author_model",
    "author_modules",
    "author_src",
    "author_trainer",
    "model_module",
    "process_group",
    "quiet",
    "rope_agreement",
    "script_settings",
]

ENV = "PYVERIFY_AUTHOR_SRC"
REPO = "burcgokden/PLDR-LLM-with-KVG-cache"
MODEL_DIR = Path("src") / "pldr_model_v510"
SCRIPT = MODEL_DIR / "scripts" / "sample-train-script-pldrv510.sh"
VOCAB_FILE = Path("tokenizer-models") / "refinedweb-tokenizer-pldrllm-kvg-cache-paper.vocab"


def author_src(what: str) -> Path:
    """The checkout named by ``PYVERIFY_AUTHOR_SRC``; a one-line error when unset or wrong."""
    root = os.environ.get(ENV, "").strip()
    if not root:
        raise MissingInputError(
            f"{what}: set {ENV} to a checkout of {REPO} (git clone "
            f"https://github.com/{REPO}); nothing was checked"
        )
    path = Path(root)
    if not (path / MODEL_DIR / "pldr_run_model_v510.py").is_file():
        raise MissingInputError(
            f"{what}: {ENV}={root} is not a checkout of {REPO} "
            f"({MODEL_DIR}/pldr_run_model_v510.py not found)"
        )
    return path


def _torchtune_rope(what: str) -> None:
    """Make ``torchtune.modules.RotaryPositionalEmbeddings`` importable (torchtune's own)."""
    try:
        from torchtune.modules import RotaryPositionalEmbeddings  # noqa: F401

        return
    except Exception:  # its package __init__ needs optional dependencies
        pass
    spec = importlib.util.find_spec("torchtune")
    locs = None if spec is None else spec.submodule_search_locations
    path = None if not locs else Path(next(iter(locs))) / "modules" / "position_embeddings.py"
    if path is None or not path.is_file():
        raise MissingInputError(
            f"{what}: the author's model needs torchtune's RotaryPositionalEmbeddings "
            "(pip install --no-deps torchtune==0.6.1)"
        )
    file_spec = importlib.util.spec_from_file_location("_torchtune_position_embeddings", path)
    if file_spec is None or file_spec.loader is None:  # pragma: no cover - a file exists
        raise MissingInputError(f"{what}: cannot load {path}")
    mod = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(mod)
    pkg, sub = types.ModuleType("torchtune"), types.ModuleType("torchtune.modules")
    sub.RotaryPositionalEmbeddings = mod.RotaryPositionalEmbeddings  # type: ignore[attr-defined]
    pkg.modules = sub  # type: ignore[attr-defined]
    sys.modules["torchtune"], sys.modules["torchtune.modules"] = pkg, sub


def model_module(root: Path, what: str) -> types.ModuleType:
    """Their ``pldr_model_v510`` alone, imported from ``root`` (the model, not the trainer)."""
    _torchtune_rope(what)
    if str(root / MODEL_DIR) not in sys.path:
        sys.path.append(str(root / MODEL_DIR))
    import pldr_model_v510 as model_mod

    return model_mod


def author_modules(root: Path, what: str) -> tuple[types.ModuleType, types.ModuleType]:
    """Their ``pldr_model_v510`` and ``pldr_run_model_v510``, imported from ``root``."""
    _torchtune_rope(what)
    for p in (root / MODEL_DIR, root / "src"):  # their trainer imports src/common.py
        if str(p) not in sys.path:
            sys.path.append(str(p))
    try:
        import keras  # noqa: F401
    except ImportError:
        sys.modules["keras"] = types.ModuleType("keras")  # see the module docstring
    level = logging.getLogger().level
    import pldr_model_v510 as model_mod
    import pldr_run_model_v510 as run_mod

    logging.getLogger().setLevel(level)
    logging.getLogger("M").setLevel(logging.WARNING)  # their INFO lines, not ours
    return model_mod, run_mod


class Rope64(nn.Module):
    """torchtune's rotary formula in float64, with their module's call signature.

    ``x (b, s, heads, dk)``: pairs ``(x0, x1) = x[..., 2p], x[..., 2p + 1]`` at position
    ``n`` become ``(x0 c - x1 s, x1 c + x0 s)``, ``c, s = cos, sin(n base^(-2p/dk))``.
    """

    def __init__(self, base: float = 10000.0) -> None:
        super().__init__()
        self.base = base

    def forward(self, x: Tensor, *, input_pos: Any = None) -> Tensor:
        """Rotate ``x`` at positions ``0..s-1`` (or from ``input_pos`` on)."""
        s, dk = x.shape[1], x.shape[3]
        start = 0 if input_pos is None else int(input_pos)
        pos = torch.arange(start, start + s, dtype=torch.float64, device=x.device)
        theta = self.base ** (-torch.arange(0, dk, 2, dtype=torch.float64, device=x.device) / dk)
        ang = pos[:, None] * theta[None]
        c, sn = torch.cos(ang)[None, :, None].to(x.dtype), torch.sin(ang)[None, :, None].to(x.dtype)
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x0 * c - x1 * sn, x1 * c + x0 * sn), -1).flatten(3)


def rope_agreement(model_mod: types.ModuleType, dk: int, seq: int) -> float:
    """Max relative difference of :class:`Rope64` and their rotary module (float32 input).

    A float32 angle ``n theta`` is off by up to ``n 2^-24`` rad, so agreement to about
    ``seq 2^-24`` says the two compute the same rotation.
    """
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, seq, 3, dk, generator=g)
    theirs = model_mod.RotaryPositionalEmbeddings(dim=dk, max_seq_len=seq, base=10000)(x)
    ours = Rope64()(x.double())
    return float((theirs.double() - ours).abs().max() / ours.abs().max())


def _use_rope64(model: nn.Module) -> None:
    for layer in model.decoder.dec_layers:
        layer.mha1.rotary_embedding = Rope64()


def author_model(
    model_mod: types.ModuleType,
    m: ModelConfig,
    *,
    max_seq_len: int,
    seed: int | None = None,
    state_dict: Mapping[str, Tensor] | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> nn.Module:
    """Their ``PLDR_Model`` of sizes ``m``, built by their constructor.

    ``seed``: their initialisers draw from torch's global generator, seeded so (the
    caller's generator state is restored after). ``state_dict``: then loaded
    strictly. float64: their rotary modules are replaced by :class:`Rope64`.
    """
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        mod = model_mod.PLDR_Model(
            num_layers=m.num_layers, d_model=m.d_model, num_heads=m.num_heads, dff=m.dff,
            input_vocab_size=m.vocab, A_dff=m.a_dff, num_reslayerA=m.num_reslayer,
            num_denseA=m.num_dense, max_seq_len=max_seq_len, device=torch.device(device),
        )  # fmt: skip
    mod = mod.to(dtype)
    if state_dict is not None:
        mod.load_state_dict(state_dict, strict=True)
    if dtype == torch.float64:
        _use_rope64(mod)
    return mod


def author_hparams(cfg: RunConfig, run: RunSpec, *, amp: bool, fsdp_mp: bool) -> dict[str, Any]:
    """Their ``hyperparameter_dict`` (``dist_pldr_v510_train_main.py``) for ``cfg``'s run.

    The schedule's numbers are the run's (peak lr, warm-up steps, total steps, final
    fraction), the weight decay ``cfg``'s; the sharding and prefetch are their
    script's; ``amp``/``fsdp_mp`` switch their autocast and FSDP mixed precision.
    """
    from torch.nn import functional as F  # noqa: N812

    m = cfg.model
    steps = cfg.run_steps(run)
    return {
        "num_layers": m.num_layers,
        "d_model": m.d_model,
        "num_heads": m.num_heads,
        "dff": m.dff,
        "A_dff": m.a_dff,
        "num_reslayerA": m.num_reslayer,
        "num_denseA": m.num_dense,
        "input_vocab_size": m.vocab,
        "max_seq_len": cfg.seq + 1,
        "epochs": 1,
        "save_model_path": "pyverify-recipe",
        "warmup_steps": max(1, round(run.warmup_frac * steps)),
        "lr_total_steps": steps,
        "learning_rate": run.peak_lr,
        "lr_alpha": cfg.min_lr_frac,
        "adamw_decay": cfg.weight_decay,
        "activation": F.silu,
        "disable_amp": not amp,
        "auto_size_minimum": None,
        "disable_fsdp_mixed_precision": not fsdp_mp,
        "fsdp_cpu_offload": False,
        "fsdp_sharding_strategy": "HYBRID_SHARD",
        "backward_prefetch": "PRE",
        "save_type": "torch",
    }


class Mean:
    """Stand-in for ``keras.metrics.Mean`` (their trainer's running averages)."""

    def __init__(self, name: str = "") -> None:
        self.name, self.total, self.count = name, 0.0, 0

    def update_state(self, value: float) -> None:
        """Add a value."""
        self.total, self.count = self.total + float(value), self.count + 1

    def reset_state(self) -> None:
        """Forget the values."""
        self.total, self.count = 0.0, 0

    def result(self) -> Tensor:
        """The mean so far (NaN before any value)."""
        return torch.tensor(self.total / self.count if self.count else math.nan)


_METRICS = (
    "train_loss", "train_accuracy", "val_loss", "val_accuracy", "train_loss_epoch",
    "train_accuracy_epoch", "train_loss_one_epoch", "train_accuracy_one_epoch",
)  # fmt: skip


_NOISE = (
    r"FSDP is switching to use `NO_SHARD`",  # world size 1: their HYBRID_SHARD holds all
    r"When using ``NO_SHARD``",
    r"`_get_pg_default_device` will be deprecated",
    r"Multiple backends are registered",
)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence torch's notices about FSDP at world size 1 (known, and not ours to act on)."""
    with warnings.catch_warnings():
        for msg in _NOISE:
            warnings.filterwarnings("ignore", message=msg)
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.distributed")
        yield


@contextlib.contextmanager
def process_group(device: torch.device) -> Iterator[None]:
    """A one-process group for their FSDP trainer (none is made when one exists)."""
    from torch import distributed as dist

    if dist.is_initialized():
        if dist.get_world_size() != 1:
            raise MissingInputError(
                "the author's trainer is run in one process; not under torchrun"
            )
        yield
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def author_trainer(
    run_mod: types.ModuleType,
    hp: dict[str, Any],
    model: nn.Module,
    device: torch.device,
    workdir: Path | None = None,
) -> Any:
    """Their ``dist_pldr_model_e2e`` trainer (rank 0 of 1) training ``model``.

    Their ``__init__`` runs as written: it builds ``PLDR_Model`` from ``hp`` (here
    the constructor hands back ``model``, after checking the sizes it was asked for),
    wraps it in FSDP and builds their optimiser, schedule and GradScaler. Call inside
    :func:`process_group`.
    """
    mod = run_mod.pldr_model
    original = mod.PLDR_Model

    keys = ("num_layers", "d_model", "num_heads", "dff", "input_vocab_size", "A_dff",
            "num_reslayerA", "num_denseA")  # fmt: skip

    def build(**kw: Any) -> nn.Module:
        want, got = [hp[k] for k in keys], [kw[k] for k in keys]
        if got != want:  # pragma: no cover - their __init__ passes hp through
            raise RuntimeError(f"their trainer asked for a model of sizes {got}, not {want}")
        return model

    folder = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="pyverify-"))
    inputs = types.SimpleNamespace(tokenize=None, detokenize=None)
    mod.PLDR_Model = build
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # their pklsave prints
            trainer = run_mod.dist_pldr_model_e2e(
                rank=0, world_size=1, inp_obj_src=inputs, hpdict=hp,
                checkpoint_path=str(folder), device=device.type, is_train=True,
            )  # fmt: skip
    finally:
        mod.PLDR_Model = original
    for name in _METRICS:  # dist_train_model sets these before its first step
        setattr(trainer, name, Mean(name))
    return trainer


def script_settings(root: Path) -> dict[str, str]:
    """The shell variables their sample training script sets (``NAME=value`` lines)."""
    out: dict[str, str] = {}
    for line in (root / SCRIPT).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if "=" in line and line.split("=", 1)[0].isidentifier() and line[0].isupper():
            key, val = line.split("=", 1)
            out[key] = val.strip().strip("'\"")
    return out


def tokenizer_vocab(root: Path) -> int:
    """Pieces in their SentencePiece vocabulary file (one a line)."""
    with (root / VOCAB_FILE).open(encoding="utf-8") as fh:
        return sum(1 for _ in fh)
