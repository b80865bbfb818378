"""Recipe fidelity: the study's trainer against the author's, step by step (``--check-recipe``).

From the same initial weights and batches (float64), each side set up as its own code
does -- ours: :func:`~pyverify.collapse.train.make_optimizer`,
:func:`~pyverify.collapse.train.lr_at`, :func:`~pyverify.collapse.train.forward_loss`
and :func:`~pyverify.collapse.train.update`; theirs: the trainer of
``pldr_run_model_v510.py`` (:mod:`pyverify.collapse.author`: their FSDP wrap, AdamW,
``LinearWarmupCosineLRSchedule``, ``dist_train_step`` with its clipping call and loss)
-- the check compares:

* **settings**: the preset's recipe numbers against their sample script's variables
  (every shape and count too for ``--preset paper``; the vocabulary against their
  tokenizer's);
* **initial weights**: per tensor, the statistics of the study's initialisation and
  of their constructors' (their global generator, seeded), at the preset's full
  shape: zeros and ones exactly; means and standard deviations within 6 standard
  errors of the difference of two samples (for n draws the sample std has a relative
  error of at most 1/sqrt(2n) for the laws used, normal or uniform; the mean
  std/sqrt(n));
* **loss and gradients** at the initial weights on step 0's batch: relative
  difference <= 1e-10 (loss) and per tensor ``max|g_ours - g_theirs| / max|g_theirs|``
  <= 1e-10;
* **20 optimiser steps**, their trainer running free and ours stepped from THEIR state
  before every step (weights and AdamW moments loaded into our model and optimiser;
  our hyper-parameters, schedule and clipping stay ours): the learning rate of each
  step (``|lr_o - lr_t| / peak <= 1e-12``, and over the run's whole schedule), the
  loss of each step (<= 1e-10) and, per tensor, the weights after each step relative
  to that step's update, ``max|w_o - w_t| / max|w_t - w_before|`` <= 1e-8. The weights
  after the 20th step are the last of these. And the two trajectories left to run
  free from the shared initial weights: per tensor ``max|w_o - w_t|`` after 20 steps
  over ``max|w_t - w_init|``, within :data:`FREE_FACTOR` noise floors (below).

Why step by step: the model is numerically chaotic at its initialisation. Where
``A_LM`` sits near its floor (1e-9) the power ``A_LM ** P`` has second derivatives
of order 1e8 and more, so a difference of one unit in the last place grows about
tenfold a step: our trainer against itself, from initial weights that differ by one
ulp in one tensor, differs by ~1e-5 in the loss and by up to 40 % of the update in
some tensor after 20 steps (measured at the small preset's check shape; the check
measures this *noise floor* every time). Free-running trajectories of two float64
implementations cannot agree to 1e-10 after 20 steps there, however right both are;
one step from a shared state can, and is a tight test of the whole update (a
clipping by norm, a wrong eps or an off-by-one in the schedule shows at 1e-3 .. 1
of the update). Where the model is well conditioned (a tiny shape) the floor is
~1e-12 and the free-running comparison is tight too.

Shapes. The first three checks need float64 agreement, so they run at a reduced
shape (:func:`check_shape`) where the author's float32 constants ``sqrt(d_model)``
and ``sqrt(dk)`` are exact (perfect squares), with the preset's recipe (schedule,
optimiser, clipping, run length); the initial-weight statistics use the preset's
own shape. Their rotary module is float32 whatever the input; :class:`~pyverify.
collapse.author.Rope64` evaluates its formula in float64 (checked against it).
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from pyverify.collapse import author as au
from pyverify.collapse.config import RUNS, RunConfig
from pyverify.collapse.corpus import Corpus, load_corpus
from pyverify.collapse.train import forward_loss, lr_at, make_optimizer, update
from pyverify.output import Progress
from pyverify.trainable.decoder import ModelConfig, PLDRDecoder

__all__ = [
    "GRAD_TOL",
    "LOSS_TOL",
    "LR_TOL",
    "STEPS",
    "UPDATE_TOL",
    "RecipeResult",
    "Row",
    "check_recipe",
    "check_shape",
    "format_recipe",
]

STEPS = 20
LOSS_TOL = 1e-10
GRAD_TOL = 1e-10
"""Measured <= 1e-14 (summation order); a recipe or model error is O(1)."""
UPDATE_TOL = 1e-8
"""Measured <= 1e-11 of a step's update (one step from a shared state, summation order
in the gradient carried through AdamW); a wrong eps, clipping or learning rate moves it
by 1e-3 and more."""
LR_TOL = 1e-12
FREE_FACTOR = 10.0
"""Free-running weights may differ by this many noise floors (a floor is one sample of the
chaos; measured ratios 0.4 .. 1 at the small preset's check shape)."""
SIGMAS = 6.0

UpdateFn = Callable[[nn.Module, torch.optim.Optimizer, Tensor, RunConfig, float], None]


@dataclass(frozen=True)
class Row:
    """One compared quantity: its largest relative difference and the tolerance."""

    section: str
    name: str
    value: float | None
    tol: float | None
    ok: bool | None
    note: str = ""


@dataclass
class RecipeResult:
    """The check's rows and what it ran on."""

    preset: str
    device: str
    shape: ModelConfig
    seq: int
    batch: int
    steps: int
    rows: list[Row] = field(default_factory=list)
    free_running: list[float] = field(default_factory=list)
    noise_floor: list[float] = field(default_factory=list)
    clipped: int = 0

    @property
    def verdict(self) -> str:
        """``PASS``, ``FAIL`` or ``INCONCLUSIVE`` (clipping never exercised)."""
        if any(r.ok is False for r in self.rows):
            return "FAIL"
        return "PASS" if self.clipped > 0 else "INCONCLUSIVE"


def check_shape(m: ModelConfig, vocab: int) -> ModelConfig:
    """The float64 check's model: the preset's family, small, with square d_model and dk.

    dk is the largest even perfect square <= the preset's (at least 4: 32 gives 16, 64
    stays 64); 4 heads (so d_model = 4 dk is a square too); at most 2 layers and 2
    residual units; ``dff`` and ``A_dff`` scaled with d_model and dk; the corpus's
    vocabulary.
    """
    dk = max(4, max(k * k for k in range(2, math.isqrt(m.dk) + 1, 2)) if m.dk >= 4 else 4)
    d = 4 * dk
    return ModelConfig(
        vocab=vocab,
        d_model=d,
        num_heads=4,
        num_layers=min(m.num_layers, 2),
        dff=max(2, round(m.dff * d / m.d_model)),
        a_dff=max(2, round(m.a_dff * dk / m.dk)),
        num_reslayer=min(m.num_reslayer, 2),
        num_dense=m.num_dense,
        rope_base=m.rope_base,
    )


def _rel(a: Tensor, b: Tensor) -> float:
    """``max|a - b| / max|b|`` (0 when both vanish; inf when only ``a`` does not)."""
    num = float((a - b).abs().max())
    den = float(b.abs().max())
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def _family(name: str) -> str:
    return re.sub(r"\.\d+\.", ".*.", name)


def _settings_rows(cfg: RunConfig, preset: str, root: Path, res: RecipeResult) -> None:
    sc = au.script_settings(root)
    run = RUNS["author"]
    total = cfg.run_steps(run)
    warm = max(1, round(run.warmup_frac * total))
    script_warm = float(sc["WARMUP_STEPS"]) / float(sc["TRAIN_BATCHES_CNT"])

    def add(name: str, ours: float, theirs: float, note: str = "") -> None:
        ok = ours == theirs
        res.rows.append(Row("settings", name, 0.0 if ok else math.inf, 0.0, ok,
                            note or f"ours {ours:g}, their script {theirs:g}"))  # fmt: skip

    add("peak lr (LEARNING_RATE)", run.peak_lr, float(sc["LEARNING_RATE"]))
    add("weight decay (ADAMW_DECAY)", cfg.weight_decay, float(sc["ADAMW_DECAY"]))
    add("final lr fraction (LR_ALPHA)", cfg.min_lr_frac, float(sc["LR_ALPHA"]))
    add("warm-up fraction (WARMUP_STEPS / TRAIN_BATCHES_CNT)", run.warmup_frac, script_warm)
    if preset != "paper":
        res.rows.append(Row("settings", "shape, steps, batch, context", None, None, None,
                            f"preset {preset}: scaled (checked for --preset paper)"))  # fmt: skip
        return
    m = cfg.model
    for name, ours, key in (
        ("layers", m.num_layers, "NUM_LAYERS"),
        ("heads", m.num_heads, "NUM_HEADS"),
        ("dk", m.dk, "DK"),
        ("residual units", m.num_reslayer, "NUM_RESLAYERA"),
        ("SwiGLU blocks a unit", m.num_dense, "NUM_DENSEA"),
        ("A_dff", m.a_dff, "ADFF"),
        ("context (seq + 1 target)", cfg.seq + 1, "CONTEXT_LENGTH"),
        ("batch (theirs per GPU; ours global: one GPU)", cfg.batch, "BATCH_SIZE"),
        ("steps of the author run", total, "TRAIN_BATCHES_CNT"),
        ("warm-up steps", warm, "WARMUP_STEPS"),
    ):
        add(f"{name} ({key})", ours, float(sc[key]))
    add("vocabulary (their tokenizer's pieces)", m.vocab, au.tokenizer_vocab(root))
    res.rows.append(Row("settings", "dff", None, None, None,
                        f"ours {m.dff}: their main's default floor(num_heads dk 8/3) "
                        "(the script passes none)"))  # fmt: skip


def _init_rows(cfg: RunConfig, model_mod: Any, res: RecipeResult) -> None:
    ours = dict(PLDRDecoder(cfg.model, seed=cfg.seed).named_parameters())
    theirs = dict(
        au.author_model(
            model_mod, cfg.model, max_seq_len=cfg.seq + 1, seed=cfg.seed
        ).named_parameters()
    )
    worst: dict[str, tuple[float, str]] = {}
    for name, p in ours.items():
        a = p.detach().double().flatten()
        b = theirs[name].detach().double().flatten()
        const = torch.all(a == a[0]) and torch.all(b == b[0])
        if bool(const):
            z = 0.0 if float(a[0]) == float(b[0]) else math.inf
            why = f"constant {float(a[0]):g} vs {float(b[0]):g}"
        else:
            n = a.numel()
            sa, sb = float(a.std()), float(b.std())
            z_std = abs(sa - sb) / (max(sa, sb) / math.sqrt(n))  # sqrt(2) x 1/sqrt(2n)
            z_mean = abs(float(a.mean()) - float(b.mean())) / (max(sa, sb) * math.sqrt(2 / n))
            z = max(z_std, z_mean)
            why = f"std {sa:.4g} vs {sb:.4g}"
        fam = _family(name)
        if fam not in worst or z > worst[fam][0]:
            worst[fam] = (z, why)
    for fam, (z, why) in worst.items():
        res.rows.append(Row("initial weights", fam, z, SIGMAS, z <= SIGMAS,
                            f"{why} (worst of its tensors, in standard errors)"))  # fmt: skip


def _load_state(model: nn.Module, opt: torch.optim.Optimizer, msd: dict, osd: dict) -> None:
    """Their weights and AdamW moments into our model and optimiser (our hyper-parameters)."""
    model.load_state_dict(msd, strict=True)
    names = [n for n, _ in model.named_parameters()]
    state = {i: {k: v.clone() for k, v in osd["state"][n].items()}
             for i, n in enumerate(names) if n in osd["state"]}  # fmt: skip
    mine = opt.state_dict()
    opt.load_state_dict({"state": state, "param_groups": mine["param_groups"]})


def check_recipe(
    cfg: RunConfig,
    *,
    preset: str,
    device: torch.device | str = "cpu",
    steps: int = STEPS,
    corpus: Corpus | None = None,
    update_fn: UpdateFn = update,
    progress: Progress | None = None,
) -> RecipeResult:
    """Run the check (module docstring); ``update_fn`` is ours (a test passes a wrong one)."""
    with au.quiet():
        return _check(cfg, preset, torch.device(device), steps, corpus, update_fn, progress)


def _check(
    cfg: RunConfig,
    preset: str,
    dev: torch.device,
    steps: int,
    corpus: Corpus | None,
    update_fn: UpdateFn,
    progress: Progress | None,
) -> RecipeResult:
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
        get_optimizer_state_dict,
    )

    say = progress or (lambda _s: None)
    what = "collapse --check-recipe"
    root = au.author_src(what)
    model_mod, run_mod = au.author_modules(root, what)
    corpus = corpus or load_corpus(cfg.corpus)
    run = RUNS["author"]
    shape = check_shape(cfg.model, corpus.vocab)
    ccfg = replace(cfg, model=shape, batch=min(cfg.batch, 8), seq=min(cfg.seq, 64))
    res = RecipeResult(preset, str(dev), shape, ccfg.seq, ccfg.batch, steps)
    say("check-recipe: settings against their script")
    _settings_rows(cfg, preset, root, res)
    say(f"check-recipe: initial weights at the preset's shape ({cfg.model.d_model} wide)")
    _init_rows(cfg, model_mod, res)

    agree = au.rope_agreement(model_mod, shape.dk, ccfg.seq + 1)
    bound = 16 * (ccfg.seq + 1) * 2.0**-24
    res.rows.append(Row("model", "Rope64 vs their rotary module (float32)", agree, bound,
                        agree <= bound, "their formula, float64 (module docstring)"))  # fmt: skip
    batches = [corpus.batch(cfg.seed, t, ccfg.batch, ccfg.seq) for t in range(steps)]
    batches = [(x.to(dev), y.to(dev)) for x, y in batches]
    zeros = sum(int((y == 0).sum()) for _, y in batches)
    if zeros:
        res.rows.append(Row("model", "targets of id 0 in the batches", float(zeros), 0.0, None,
                            "their loss skips id 0 ([PAD]); ours scores it"))  # fmt: skip

    ours = PLDRDecoder(shape, seed=cfg.seed, p_init=run.p_init).double().to(dev)
    init = {k: v.clone() for k, v in ours.state_dict().items()}
    say(f"check-recipe: loss and gradients (float64, {dev})")
    x0, y0 = batches[0]
    loss_o, _ = forward_loss(ours, x0, y0, ccfg, run.objective)
    loss_o.backward()
    grads_o = {n: p.grad.detach().clone() for n, p in ours.named_parameters()}
    ours.zero_grad(set_to_none=True)
    plain = au.author_model(model_mod, shape, max_seq_len=ccfg.seq + 1, state_dict=init,
                            dtype=torch.float64, device=dev)  # fmt: skip
    hp = au.author_hparams(ccfg, run, amp=False, fsdp_mp=False)
    count = {"clipped": 0}

    def clip_count(p: Tensor) -> None:
        count["clipped"] += int((p.grad.abs() > ccfg.grad_clip_value).sum())

    with au.process_group(dev), tempfile.TemporaryDirectory() as tmp:
        trainer = au.author_trainer(
            run_mod, hp,
            au.author_model(model_mod, shape, max_seq_len=ccfg.seq + 1, state_dict=init,
                            dtype=torch.float64, device=dev),
            dev, Path(tmp),
        )  # fmt: skip
        pred = plain([x0, trainer.create_masks(x0)])[0]
        loss_t = run_mod.masked_loss_function(y0, pred)
        loss_t.backward()
        lo, lt0 = float(loss_o.detach()), float(loss_t.detach())
        rel = abs(lo - lt0) / abs(lt0)
        res.rows.append(Row("step 0", "loss", rel, LOSS_TOL, rel <= LOSS_TOL,
                            f"{lo:.15g} vs {lt0:.15g}"))  # fmt: skip
        grads_t = {n: p.grad for n, p in plain.named_parameters()}
        grad_rel = {n: _rel(grads_o[n], grads_t[n]) for n in grads_o}

        say(f"check-recipe: {steps} optimiser steps, ours from their state before each")
        opts = StateDictOptions(full_state_dict=True, cpu_offload=False)
        opt = make_optimizer(ours, ccfg, run)
        hooks = [p.register_post_accumulate_grad_hook(clip_count) for p in ours.parameters()]
        lr_d, loss_d = 0.0, 0.0
        w_rel = dict.fromkeys(grads_o, 0.0)
        w_at = dict.fromkeys(grads_o, 0)
        lam = trainer.scheduler.lr_lambdas[0]
        base = trainer.optimizer.param_groups[0]["initial_lr"]
        for t, (x, y) in enumerate(batches):
            msd = get_model_state_dict(trainer.dist_pldr_model, options=opts)
            # torch's getter steps an empty optimiser once (lr 0) to create its state:
            # before their first step there is none to read, and it must not be created
            osd = {"state": {}} if not trainer.optimizer.state else get_optimizer_state_dict(
                trainer.dist_pldr_model, trainer.optimizer, options=opts)  # fmt: skip
            _load_state(ours, opt, msd, osd)
            lr_t = trainer.scheduler.get_last_lr()[0]
            lr_o = lr_at(t, ccfg, run)
            lr_d = max(lr_d, abs(lr_o - lr_t) / run.peak_lr)
            loss, _ = forward_loss(ours, x, y, ccfg, run.objective)
            update_fn(ours, opt, loss, ccfg, lr_o)
            lt = trainer.dist_train_step(torch.cat([x, y[:, -1:]], 1))[0]
            loss_d = max(loss_d, abs(float(loss.detach()) - lt) / abs(lt))
            after = get_model_state_dict(trainer.dist_pldr_model, options=opts)
            for n, w in ours.state_dict().items():
                r = _rel(w - msd[n], after[n] - msd[n])
                if r > w_rel[n] or t == 0:
                    w_rel[n], w_at[n] = r, t
        for h in hooks:
            h.remove()
        res.clipped = count["clipped"]
        total = ccfg.run_steps(run)
        sched = max(abs(lr_at(t, ccfg, run) - base * lam(t)) for t in range(total + 1))
        res.rows.append(Row("schedule", f"lr of the {steps} steps", lr_d, LR_TOL,
                            lr_d <= LR_TOL, "|lr_ours - lr_theirs| / peak"))  # fmt: skip
        rel_s = sched / run.peak_lr
        res.rows.append(Row("schedule", f"lr over the run's {total:,} steps", rel_s, LR_TOL,
                            rel_s <= LR_TOL, "ours lr_at, theirs base x lr_lambda"))  # fmt: skip
        res.rows.append(Row("steps", f"loss of each of the {steps} steps", loss_d, LOSS_TOL,
                            loss_d <= LOSS_TOL, "ours from their state"))  # fmt: skip
        res.rows.append(Row("steps", "gradient elements clipped (|g| > clip)", float(res.clipped),
                            None, None, "the premise: clipping was exercised"))  # fmt: skip
        for n in grads_o:
            res.rows.append(Row("gradients", n, grad_rel[n], GRAD_TOL, grad_rel[n] <= GRAD_TOL))
        for n, v in w_rel.items():
            res.rows.append(Row("weights", n, v, UPDATE_TOL, v <= UPDATE_TOL, f"step {w_at[n]}"))
        say("check-recipe: free-running trajectories and the noise floor (information)")
        final = get_model_state_dict(trainer.dist_pldr_model, options=opts)
    res.free_running, res.noise_floor = _free_running(ccfg, init, batches, final, update_fn, dev)
    free, floor = max(res.free_running), max(res.noise_floor)
    tol = max(FREE_FACTOR * floor, 1e-10)
    note = f"worst tensor, / its update; noise floor {_fmt(floor)}"
    res.rows.append(Row("steps", f"weights after {steps} free-running steps", free, tol,
                        free <= tol, note))  # fmt: skip
    return res


def _trajectory(cfg: RunConfig, init: dict, batches: list, update_fn: UpdateFn,
                dev: torch.device) -> tuple[nn.Module, list[float]]:  # fmt: skip
    run = RUNS["author"]
    m = PLDRDecoder(cfg.model, init=False).double().to(dev)
    m.load_state_dict(init)
    opt = make_optimizer(m, cfg, run)
    losses = []
    for t, (x, y) in enumerate(batches):
        loss, _ = forward_loss(m, x, y, cfg, run.objective)
        update_fn(m, opt, loss, cfg, lr_at(t, cfg, run))
        losses.append(float(loss.detach()))
    return m, losses


def _free_running(cfg, init, batches, final, update_fn, dev) -> tuple[list[float], list[float]]:
    """Free-running: ours alone from the shared init against their final weights.

    And the noise floor: ours against ours from an init one ulp away in one tensor.
    Per tensor ``max|w_a - w_b| / max|w_b - w_init|``.
    """
    ours, _ = _trajectory(cfg, init, batches, update_fn, dev)
    nudged = dict(init)
    name = next(n for n in init if n.endswith("wq.weight"))
    nudged[name] = init[name] * (1 + 2.0**-52)
    other, _ = _trajectory(cfg, nudged, batches, update_fn, dev)

    def per_tensor(a: dict, b: dict) -> list[float]:
        return [_rel(a[n] - init[n], b[n] - init[n]) for n in init]

    sd = ours.state_dict()
    return per_tensor(sd, final), per_tensor(other.state_dict(), sd)


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "0"
    if math.isinf(v):
        return "inf"
    return f"{v:.2e}" if v < 1e-2 or v >= 1e4 else f"{v:.4g}"


def format_recipe(res: RecipeResult) -> str:
    """The per-quantity table and the verdict (gradients and weights: one line a tensor)."""
    s = res.shape
    lines = [
        f"recipe check (preset {res.preset}, {res.device}): float64 at layers {s.num_layers}, "
        f"{s.num_heads} heads, dk {s.dk}, d_model {s.d_model}, dff {s.dff}, A_dff {s.a_dff}, "
        f"{s.num_reslayer} units of {s.num_dense}, vocabulary {s.vocab}, batch {res.batch} x "
        f"{res.seq}; {res.steps} steps",
        f"{'section':<16} {'quantity':<62} {'max rel diff':>12} {'tolerance':>10}  ok",
    ]
    per_tensor = ("gradients", "weights")
    for r in res.rows:
        if r.section in per_tensor:
            continue
        ok = "-" if r.ok is None else ("yes" if r.ok else "NO")
        name = r.name if len(r.name) <= 62 else "..." + r.name[-59:]
        line = f"{r.section:<16} {name:<62} {_fmt(r.value):>12} {_fmt(r.tol):>10}  {ok}"
        show = r.note and (r.ok is not True or r.section == "steps")
        lines.append(line + (f"  {r.note}" if show else ""))
    grads = {r.name: r for r in res.rows if r.section == "gradients"}
    weights = {r.name: r for r in res.rows if r.section == "weights"}
    if grads:
        lines.append(
            f"{'tensor':<62} {'gradient':>10} {'weights':>10}  ok   (gradient at step 0, "
            f"/ max|g|, tolerance {_fmt(GRAD_TOL)}; weights after each of the {res.steps} "
            f"steps, / the step's update, tolerance {_fmt(UPDATE_TOL)}, worst step)"
        )
        for name, g in grads.items():
            w = weights[name]
            ok = "yes" if g.ok and w.ok else "NO"
            lines.append(f"{name:<62} {_fmt(g.value):>10} {_fmt(w.value):>10}  {ok:<4} {w.note}")
    verdict = res.verdict
    if verdict == "INCONCLUSIVE":
        verdict += " (no gradient element exceeded the clip value: clipping was not exercised)"
    failed = [r for r in res.rows if r.ok is False]
    if failed:
        verdict += f" ({len(failed)} of {sum(r.ok is not None for r in res.rows)} quantities)"
    lines.append(verdict)
    return "\n".join(lines)
