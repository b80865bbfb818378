"""Cross-check: optimised kernels vs the float64 reference vs mpmath (``pyverify crosscheck``).

The sweep runs a list of *cases*, each with fixed seeds, on every requested
device and dtype, and compares stage by stage:

* ``random``: random PLGA heads (:meth:`PLGAParams.random`), random rotated
  ``q, k, v`` of shape ``(B, H, S, dk)``. The uncached kernel
  (:func:`pyverify.kernels.plga_attention` with ``return_deductive=True``) is
  compared with :func:`pyverify.reference.plga_forward_full` on the same
  (rounded) inputs: stages ``A``, ``A_LM``, ``A_P``, ``G``, ``scores`` and
  ``output``; the G-cached kernel and the collapsed kernel
  (:func:`pyverify.kernels.collapsed_attention`) given the reference's ``G``:
  ``output``.
* ``mpmath``: the float64 reference against :mod:`pyverify.reference.mp`
  (40 digits) at modest sizes (``S <= 16``, ``dk <= 8``; mpmath is slow), every
  stage. CPU/float64 only (the reference is NumPy float64).
* ``trained``: the real trained ``G_LM`` of one layer (14 heads, ``dk = 64``,
  from ``../shared/data``) through the G-cached and collapsed kernels vs the
  float64 reference (``plga_forward(..., G=G_LM[layer, h])``) on random
  ``q, k, v``: ``scores`` and ``output``.
* ``identity``: the identity control ``G_LM``: the G-cached kernel vs torch's
  float64 SDPA on the same (rounded) inputs, and the float64 reference vs
  float64 SDPA (theorem ``sdpa_special_case``).

Error measure. For every ``(batch, head)`` slice the norm-wise relative error
``max|x - y| / max|y|`` (``y`` the more accurate side); a row reports the
maximum and the median over the slices.

Tolerances (``u`` = unit round-off: 2^-53 float64, 2^-24 float32,
2^-8 bfloat16, 2^-11 float16):

* float64, every stage, kernels vs reference and reference vs mpmath:
  ``1e-12``. The same formulas with a different summation order; ``u = 1.1e-16``
  times a conditioning/accumulation factor of up to ~1e4 (``dk`` ~ 64 terms per
  product, ~20 chained GEMM/LayerNorm stages, ``|P| <= 1.5`` in the power law,
  scores up to ~200 for the trained ``G_LM``); observed ~1e-15.
* float32, deductive stages and scores: ``1e-5`` (``u = 6e-8`` times the same
  factor of ~100 actually realised; observed <= 3e-6). Output: ``1e-5``, or
  twice the error torch's SDPA itself makes at float32 when handed the
  correctly rounded generalised query ``fl(Q G)`` (vs float64 SDPA on the exact
  ``Q G``), if that is larger: softmax turns the absolute error of a score
  into a relative error of the weights, so large scores (``|E|`` ~ 170 for the
  trained ``G_LM``) amplify the unavoidable rounding of ``Q G`` (observed up to
  ~1e-5 there; the kernels cannot be more accurate than that floor).
* bfloat16/float16 (the kernels keep ``D``, the metric learner and ``G`` in
  float32): deductive stages ``1e-5`` (float32, as above); scores
  ``1e-5 + 4 u^2``: the compensated kernels feed SDPA ``Q G = hi + lo``, two
  input-dtype terms, which carry ``Q G`` to relative ``u^2`` before float32
  accumulation. Output of the uncached and G-cached kernels (compensated):
  ``2 e_sdpa + 1e-6`` where ``e_sdpa`` is torch SDPA's own error at that dtype
  (``G = I``, same rounded ``q, k, v``, against float64 SDPA), as the kernel
  tests require: the kernels may not be less accurate than the fused
  attention they build on. Output of the collapsed kernel (its default
  ``precision="rounded"`` rounds ``Q G`` once, the speed path):
  ``2 e_qg + 1e-6``, ``e_qg`` being torch SDPA's error when fed ``fl(Q G)``.
* identity control (G-cached kernel with ``G = I``) vs float64 torch SDPA on
  the same rounded inputs: as the output above (``e_qg = e_sdpa`` for ``G = I``).

Stages ``A_LM`` and ``A_P`` also require every kernel entry to be ``> 0``
(theorem ``metric_positivity``).
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (torch convention)

__all__ = [
    "DTYPE_NAMES",
    "STAGES",
    "Case",
    "CrosscheckResult",
    "CrosscheckRow",
    "available_devices",
    "format_crosscheck",
    "format_summary",
    "list_cases",
    "parse_devices",
    "parse_dtypes",
    "parse_shard",
    "run_case",
    "run_crosscheck",
    "shard_cases",
    "summarize",
]

Progress = Callable[[str], None]

#: Stages compared, in pipeline order.
STAGES: tuple[str, ...] = ("A", "A_LM", "A_P", "G", "scores", "output")

#: Canonical dtype names, most precise first.
DTYPE_NAMES: tuple[str, ...] = ("float64", "float32", "bfloat16", "float16")

_TORCH_DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
_ALIASES: dict[str, str] = {
    "fp64": "float64",
    "f64": "float64",
    "double": "float64",
    "fp32": "float32",
    "f32": "float32",
    "float": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "f16": "float16",
    "half": "float16",
}
#: Unit round-off of each dtype.
UNIT_ROUNDOFF: dict[str, float] = {
    "float64": 2.0**-53,
    "float32": 2.0**-24,
    "bfloat16": 2.0**-8,
    "float16": 2.0**-11,
}
#: Base tolerances (see the module docstring for their derivation).
TOL_FLOAT64 = 1e-12
TOL_FLOAT32 = 1e-5
TOL_LOW_FLOOR = 1e-6
MPMATH_DPS = 40

# Metric-learner sizes of the random heads (as the kernel tests).
_A_DFF, _N_RES, _N_DENSE = 12, 2, 2

# Sweeps: (B, H, S, dk).
_RANDOM_FULL = [
    (1, 1, 1, 2),
    (1, 1, 8, 4),
    (2, 3, 9, 8),
    (1, 2, 17, 16),
    (4, 2, 33, 8),
    (2, 4, 64, 16),
    (1, 2, 128, 32),
    (2, 2, 96, 64),
    (1, 2, 256, 64),
]
_RANDOM_QUICK = [(2, 3, 9, 8), (2, 4, 64, 16)]
_MPMATH_FULL = [(1, 1, 1, 2), (1, 2, 8, 4), (1, 3, 16, 8), (2, 2, 12, 6), (1, 2, 16, 2)]
_MPMATH_QUICK = [(1, 2, 16, 8)]
_TRAINED_FULL = [(2, 14, 256, 64, layer) for layer in range(5)]
_TRAINED_QUICK = [(1, 14, 64, 64, layer) for layer in range(5)]
_IDENTITY = [(1, 14, 64, 64, 0)]


# --------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Case:
    """One cross-check case (deterministic: its seed derives from its id).

    Attributes
    ----------
    kind : str
        ``"random"``, ``"mpmath"``, ``"trained"`` or ``"identity"``.
    shape : tuple of int
        ``(B, H, S, dk)``.
    device : str
        Torch device of the kernels (``"cpu"``, ``"cuda"``).
    dtype : str
        Canonical dtype name (:data:`DTYPE_NAMES`).
    layer : int or None
        Layer of the ``G_LM`` file (``trained``/``identity`` cases).
    """

    kind: str
    shape: tuple[int, int, int, int]
    device: str
    dtype: str
    layer: int | None = None

    @property
    def inputs_id(self) -> str:
        """The part of the id that fixes the inputs (independent of device and dtype)."""
        B, H, S, dk = self.shape
        tail = f"-L{self.layer}" if self.layer is not None else ""
        return f"{self.kind}-B{B}H{H}S{S}dk{dk}{tail}"

    @property
    def case_id(self) -> str:
        """Unique, stable id, e.g. ``random-B2H3S9dk8-cpu-float32``."""
        return f"{self.inputs_id}-{self.device}-{self.dtype}"

    @property
    def seed(self) -> int:
        """Seed of the case's inputs (CRC-32 of :attr:`inputs_id`: stable across runs)."""
        return zlib.crc32(self.inputs_id.encode())


@dataclass(frozen=True)
class CrosscheckRow:
    """One compared stage of one case.

    Attributes
    ----------
    case : str
        :attr:`Case.case_id`.
    kind : str
        The case's kind.
    path : str
        What was checked: ``kernels.uncached``, ``kernels.g_cached``,
        ``kernels.collapsed`` or ``reference.float64``.
    against : str
        The more accurate side: ``reference.float64``, ``mpmath`` or
        ``torch.sdpa.float64``.
    shape : tuple of int
        ``(B, H, S, dk)``.
    device, dtype, stage : str
        Where, at which precision, which stage (:data:`STAGES`, or ``error``).
    max_rel, median_rel : float
        Max and median over (batch, head) slices of ``max|x - y| / max|y|``.
    tolerance : float
        The bound ``max_rel`` is held to.
    passed : bool
        ``max_rel <= tolerance`` (and the extra condition, if any).
    theorems : tuple of str
        Theorem IDs the comparison exercises.
    note : str
        Extra facts (positivity minimum, error message).
    """

    case: str
    kind: str
    path: str
    against: str
    shape: tuple[int, int, int, int]
    device: str
    dtype: str
    stage: str
    max_rel: float
    median_rel: float
    tolerance: float
    passed: bool
    theorems: tuple[str, ...] = ()
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (tuples as lists)."""
        d = asdict(self)
        d["shape"] = list(self.shape)
        d["theorems"] = list(self.theorems)
        return d


@dataclass
class CrosscheckResult:
    """Outcome of :func:`run_crosscheck`.

    Attributes
    ----------
    rows : list of CrosscheckRow
        Every compared stage, in case order.
    cases : list of str
        Ids of the cases run (this shard's).
    devices, dtypes : list of str
        What was swept.
    quick : bool
        The quick sweep.
    shard : tuple of int
        ``(k, n)``.
    seconds : float
        Wall time (not deterministic: keep out of reproducible outputs).
    """

    rows: list[CrosscheckRow] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    quick: bool = False
    shard: tuple[int, int] = (1, 1)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every row passed (and at least one ran, unless the shard is empty)."""
        return all(r.passed for r in self.rows)

    @property
    def failures(self) -> list[CrosscheckRow]:
        """Rows that failed."""
        return [r for r in self.rows if not r.passed]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict without timings."""
        return {
            "ok": self.ok,
            "quick": self.quick,
            "shard": list(self.shard),
            "devices": list(self.devices),
            "dtypes": list(self.dtypes),
            "cases": list(self.cases),
            "rows": [r.to_dict() for r in self.rows],
        }


# --------------------------------------------------------------------------- options
def parse_shard(text: str) -> tuple[int, int]:
    """Parse ``"k/n"`` (1 <= k <= n) into ``(k, n)``.

    Parameters
    ----------
    text : str
        E.g. ``"2/4"``.

    Returns
    -------
    tuple of int
        ``(k, n)``.

    Raises
    ------
    ValueError
        On anything else (``"0/2"``, ``"3/2"``, ``"a/b"``, ``"1"``).
    """
    if not isinstance(text, str):
        raise ValueError(f"shard must be a string 'k/n'; got {text!r}")
    parts = text.strip().split("/")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"shard must look like 'k/n' with integers 1 <= k <= n; got {text!r}")
    k, n = int(parts[0]), int(parts[1])
    if not 1 <= k <= n:
        raise ValueError(f"shard 'k/n' needs 1 <= k <= n; got {text!r}")
    return k, n


def available_devices() -> list[str]:
    """``["cpu"]``, plus ``"cuda"`` when CUDA is available."""
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def parse_devices(devices: Sequence[str] | None) -> list[str]:
    """Validate device names (``None`` or ``["all"]``: every available device).

    Raises
    ------
    ValueError
        On an unknown device or CUDA requested but not available.
    """
    if devices is None or list(devices) in (["all"], []):
        return available_devices()
    out: list[str] = []
    for d in devices:
        try:
            dev = torch.device(d)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"unknown device {d!r} (use cpu, cuda, cuda:N or all)") from exc
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {d!r} requested but CUDA is not available")
        if dev.type not in ("cpu", "cuda"):
            raise ValueError(f"unsupported device {d!r} (use cpu, cuda, cuda:N or all)")
        if str(dev) not in out:
            out.append(str(dev))
    return out


def parse_dtypes(dtypes: Sequence[str] | None) -> list[str]:
    """Canonical dtype names (``None`` or ``["all"]``: all four), in :data:`DTYPE_NAMES` order.

    Raises
    ------
    ValueError
        On an unknown name.
    """
    if dtypes is None or list(dtypes) in (["all"], []):
        return list(DTYPE_NAMES)
    names = set()
    for d in dtypes:
        key = str(d).strip().lower().removeprefix("torch.")
        key = _ALIASES.get(key, key)
        if key not in _TORCH_DTYPES:
            raise ValueError(
                f"unknown dtype {d!r}; use one of {', '.join(DTYPE_NAMES)} (or fp64/fp32/bf16/fp16)"
            )
        names.add(key)
    return [n for n in DTYPE_NAMES if n in names]


def list_cases(devices: Sequence[str], dtypes: Sequence[str], quick: bool) -> list[Case]:
    """Every case of the sweep, in a fixed order (before sharding).

    Parameters
    ----------
    devices, dtypes : sequence of str
        Canonical device and dtype names.
    quick : bool
        The quick subset.

    Returns
    -------
    list of Case
        The cases.
    """
    cases: list[Case] = []
    if "cpu" in devices and "float64" in dtypes:
        for shp in _MPMATH_QUICK if quick else _MPMATH_FULL:
            cases.append(Case("mpmath", shp, "cpu", "float64"))
    for dev in devices:
        for dt in dtypes:
            for shp in _RANDOM_QUICK if quick else _RANDOM_FULL:
                cases.append(Case("random", shp, dev, dt))
            for B, H, S, dk, layer in _TRAINED_QUICK if quick else _TRAINED_FULL:
                cases.append(Case("trained", (B, H, S, dk), dev, dt, layer))
            for B, H, S, dk, layer in _IDENTITY:
                cases.append(Case("identity", (B, H, S, dk), dev, dt, layer))
    return cases


def shard_cases(cases: Sequence[Case], shard: tuple[int, int]) -> list[Case]:
    """The cases of shard ``(k, n)``: those whose index ``i`` has ``i % n == k - 1``.

    Round-robin, so that every shard gets a similar mix of kinds and sizes;
    the ``n`` shards partition ``cases``.

    Raises
    ------
    ValueError
        Unless ``1 <= k <= n``.
    """
    k, n = shard
    if not (isinstance(k, int) and isinstance(n, int) and 1 <= k <= n):
        raise ValueError(f"shard must be (k, n) with 1 <= k <= n; got {shard!r}")
    return [c for i, c in enumerate(cases) if i % n == k - 1]


# --------------------------------------------------------------------------- errors
def _np(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def slice_errors(x: Any, y: Any) -> np.ndarray:
    """Norm-wise relative error ``max|x - y| / max|y|`` per slice over the last two axes.

    Parameters
    ----------
    x, y : array_like or torch.Tensor
        Same shape ``(..., m, n)``; ``y`` is the more accurate one.

    Returns
    -------
    numpy.ndarray
        One error per leading index (flattened). Where ``max|y| = 0`` the
        absolute error is used.
    """
    xa, ya = _np(x), _np(y)
    if xa.shape != ya.shape:
        raise ValueError(f"shape mismatch: {xa.shape} vs {ya.shape}")
    xa = xa.reshape(-1, *xa.shape[-2:])
    ya = ya.reshape(-1, *ya.shape[-2:])
    num = np.abs(xa - ya).max(axis=(-2, -1))
    den = np.abs(ya).max(axis=(-2, -1))
    with np.errstate(invalid="ignore"):
        err = np.where(den > 0, num / np.where(den > 0, den, 1.0), num)
    return np.where(np.isfinite(err), err, np.inf)


def _sdpa_error(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, qg64: torch.Tensor) -> float:
    """Torch SDPA's error at ``q``'s dtype: inputs ``(fl(Q'), K, V)`` vs float64 on exact ``Q'``."""
    low = F.scaled_dot_product_attention(qg64.to(q.dtype), k, v, is_causal=True)
    ref = F.scaled_dot_product_attention(qg64, k.double(), v.double(), is_causal=True)
    return float(slice_errors(low, ref).max())


# --------------------------------------------------------------------------- case runners
def _row(
    case: Case,
    path: str,
    against: str,
    stage: str,
    errs: np.ndarray,
    tol: float,
    theorems: tuple[str, ...] = (),
    extra_ok: bool = True,
    note: str = "",
) -> CrosscheckRow:
    mx = float(np.max(errs)) if errs.size else 0.0
    med = float(np.median(errs)) if errs.size else 0.0
    return CrosscheckRow(
        case=case.case_id,
        kind=case.kind,
        path=path,
        against=against,
        shape=case.shape,
        device=case.device,
        dtype=case.dtype,
        stage=stage,
        max_rel=mx,
        median_rel=med,
        tolerance=float(tol),
        passed=bool(math.isfinite(mx) and mx <= tol and extra_ok),
        theorems=theorems,
        note=note,
    )


def _inputs(case: Case) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Deterministic ``q, k, v`` (B, H, S, dk), rounded to the case's dtype, on its device."""
    rng = np.random.default_rng(case.seed)
    dt = _TORCH_DTYPES[case.dtype]
    return tuple(  # type: ignore[return-value]
        torch.tensor(rng.normal(size=case.shape)).to(device=case.device, dtype=dt) for _ in range(3)
    )


def _compute_dtype(dtype: str) -> torch.dtype:
    return torch.float64 if dtype == "float64" else torch.float32


def _scores_like_kernel(q: torch.Tensor, k: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """The scores the kernels hand to SDPA, ``(Q G) K^T / sqrt(dk)`` in the compute dtype.

    float64/float32: ``Q G`` in the input dtype (:func:`pyverify.kernels.head.rotate_query`).
    bfloat16/float16: the compensated split ``Q G = hi + lo`` of
    :func:`pyverify.kernels.head.sdpa_qg`, accumulated in float32 as SDPA does.
    """
    from pyverify.kernels.head import rotate_query

    dk = q.shape[-1]
    if q.dtype in (torch.float64, torch.float32):
        qg = rotate_query(q, G)
        return torch.matmul(qg, k.transpose(-1, -2)) * dk**-0.5
    qg = torch.matmul(q.float(), G.float())
    hi = qg.to(q.dtype)
    lo = (qg - hi.float()).to(q.dtype)
    kf = k.float().transpose(-1, -2)
    return (torch.matmul(hi.float(), kf) + torch.matmul(lo.float(), kf)) * dk**-0.5


def _stage_tols(dtype: str) -> tuple[float, float]:
    """(deductive-stage tolerance, scores tolerance) of a kernel dtype."""
    if dtype == "float64":
        return TOL_FLOAT64, TOL_FLOAT64
    if dtype == "float32":
        return TOL_FLOAT32, TOL_FLOAT32
    return TOL_FLOAT32, TOL_FLOAT32 + 4 * UNIT_ROUNDOFF[dtype] ** 2


def _output_tols(dtype: str, e_sdpa: float, e_qg: float) -> tuple[float, float]:
    """(uncached/G-cached output tolerance, collapsed output tolerance)."""
    if dtype == "float64":
        return TOL_FLOAT64, TOL_FLOAT64
    if dtype == "float32":
        t = max(TOL_FLOAT32, 2 * e_qg)
        return t, t
    return 2 * e_sdpa + TOL_LOW_FLOOR, 2 * e_qg + TOL_LOW_FLOOR


def _reference_heads(case: Case):
    from pyverify.reference import PLGAParams

    dk, H = case.shape[3], case.shape[1]
    return [
        PLGAParams.random(dk, _A_DFF, _N_RES, _N_DENSE, seed=(case.seed + 7919 * h) % 2**32)
        for h in range(H)
    ]


def _run_random(case: Case) -> list[CrosscheckRow]:
    import pyverify.kernels as kern
    from pyverify.reference import plga_forward_full

    B, H, _S, dk = case.shape
    heads = _reference_heads(case)
    q, k, v = _inputs(case)
    qn, kn, vn = (_np(t) for t in (q, k, v))
    ref = {n: np.zeros((B, H, dk, dk)) for n in ("A", "A_LM", "A_P", "G")}
    ref_E = np.zeros((B, H, q.shape[2], k.shape[2]))
    ref_out = np.zeros((*q.shape[:3], v.shape[-1]))
    for b in range(B):
        for h in range(H):
            r = plga_forward_full(qn[b, h], kn[b, h], vn[b, h], heads[h], causal=True)
            for n in ref:
                ref[n][b, h] = getattr(r.ded, n)
            ref_E[b, h], ref_out[b, h] = r.E, r.out
    cdt = _compute_dtype(case.dtype)
    p = kern.from_reference(heads, case.device, cdt)
    out, ded = kern.plga_attention(q, k, v, p, return_deductive=True)
    G_ref = torch.tensor(ref["G"], device=case.device)
    e_sdpa = _sdpa_error(q, k, v, q.double())
    e_qg = _sdpa_error(q, k, v, torch.matmul(q.double(), G_ref))
    tol_ded, tol_sc = _stage_tols(case.dtype)
    tol_out, tol_coll = _output_tols(case.dtype, e_sdpa, e_qg)
    rows = []
    for n in ("A", "A_LM", "A_P", "G"):
        got = getattr(ded, n)
        extra, note, thm = True, "", ()
        if n in ("A_LM", "A_P"):
            mn = float(got.min())
            extra, note, thm = mn > 0, f"min entry {mn:.3g}", ("metric_positivity",)
        errs = slice_errors(got, ref[n])
        rows.append(
            _row(case, "kernels.uncached", "reference.float64", n, errs, tol_ded, thm, extra, note)
        )
    sc = _scores_like_kernel(q, k, ded.G)
    rows.append(
        _row(
            case, "kernels.uncached", "reference.float64", "scores", slice_errors(sc, ref_E), tol_sc
        )
    )
    rows.append(
        _row(
            case,
            "kernels.uncached",
            "reference.float64",
            "output",
            slice_errors(out, ref_out),
            tol_out,
        )
    )
    Gk = G_ref.to(cdt)
    out_g = kern.plga_attention(q, k, v, None, G=Gk)
    rows.append(
        _row(
            case,
            "kernels.g_cached",
            "reference.float64",
            "output",
            slice_errors(out_g, ref_out),
            tol_out,
            ("cache_equivalence",),
        )
    )
    out_c = kern.collapsed_attention(q, k, v, Gk)
    rows.append(
        _row(
            case,
            "kernels.collapsed",
            "reference.float64",
            "output",
            slice_errors(out_c, ref_out),
            tol_coll,
            ("collapse_absorption",),
        )
    )
    return rows


def _run_mpmath(case: Case) -> list[CrosscheckRow]:
    from pyverify.reference import mp, plga_forward_full

    B, H, S, dk = case.shape
    if S > 16 or dk > 8:
        raise ValueError(f"mpmath cases are limited to S <= 16, dk <= 8; got {case.shape}")
    heads = _reference_heads(case)
    q, k, v = (_np(t) for t in _inputs(case))
    errs: dict[str, list[float]] = {s: [] for s in STAGES}
    for b in range(B):
        for h in range(H):
            r64 = plga_forward_full(q[b, h], k[b, h], v[b, h], heads[h], causal=True)
            rmp = mp.to_numpy(
                mp.plga_forward_full(
                    q[b, h], k[b, h], v[b, h], heads[h], causal=True, dps=MPMATH_DPS
                )
            )
            pairs = {n: (getattr(r64.ded, n), getattr(rmp.ded, n)) for n in STAGES[:4]}
            pairs["scores"] = (r64.E, rmp.E)
            pairs["output"] = (r64.out, rmp.out)
            for s, (x, y) in pairs.items():
                errs[s].append(float(slice_errors(x, y)[0]))
    return [
        _row(case, "reference.float64", "mpmath", s, np.array(errs[s]), TOL_FLOAT64) for s in STAGES
    ]


def _load_g(name: str) -> np.ndarray:
    from pyverify.reference import load_g_lm

    return load_g_lm(name)


def _run_trained(case: Case) -> list[CrosscheckRow]:
    import pyverify.kernels as kern
    from pyverify.reference import PLGAParams, plga_forward_full

    B, H, _S, dk = case.shape
    g_all = _load_g("trained")
    layer = int(case.layer or 0)
    if g_all.shape[1] != H or g_all.shape[2] != dk or not 0 <= layer < g_all.shape[0]:
        raise ValueError(
            f"trained G_LM has shape {g_all.shape}; case needs layer {layer}, H={H}, dk={dk}"
        )
    g = g_all[layer]
    dummy = PLGAParams.random(dk, 1, 0, 0, seed=0)  # unused on the G-cached path
    q, k, v = _inputs(case)
    qn, kn, vn = (_np(t) for t in (q, k, v))
    ref_E = np.zeros((B, H, q.shape[2], k.shape[2]))
    ref_out = np.zeros((*q.shape[:3], v.shape[-1]))
    for b in range(B):
        for h in range(H):
            r = plga_forward_full(qn[b, h], kn[b, h], vn[b, h], dummy, causal=True, G=g[h])
            ref_E[b, h], ref_out[b, h] = r.E, r.out
    G64 = torch.tensor(g, device=case.device)
    Gk = G64.to(_compute_dtype(case.dtype))  # exact: the file holds float32 numbers
    e_sdpa = _sdpa_error(q, k, v, q.double())
    e_qg = _sdpa_error(q, k, v, torch.matmul(q.double(), G64))
    _, tol_sc = _stage_tols(case.dtype)
    tol_out, tol_coll = _output_tols(case.dtype, e_sdpa, e_qg)
    out_g = kern.plga_attention(q, k, v, None, G=Gk)
    out_c = kern.collapsed_attention(q, k, v, Gk)
    note = f"G_LM layer {layer}; max|E| {np.abs(ref_E).max():.3g}"
    return [
        _row(
            case,
            "kernels.g_cached",
            "reference.float64",
            "scores",
            slice_errors(_scores_like_kernel(q, k, Gk), ref_E),
            tol_sc,
            note=note,
        ),
        _row(
            case,
            "kernels.g_cached",
            "reference.float64",
            "output",
            slice_errors(out_g, ref_out),
            tol_out,
            ("cache_equivalence",),
            note=note,
        ),
        _row(
            case,
            "kernels.collapsed",
            "reference.float64",
            "output",
            slice_errors(out_c, ref_out),
            tol_coll,
            ("collapse_absorption",),
            note=note,
        ),
    ]


def _run_identity(case: Case) -> list[CrosscheckRow]:
    import pyverify.kernels as kern
    from pyverify.reference import PLGAParams, plga_forward

    B, H, _S, dk = case.shape
    g = _load_g("identity")[int(case.layer or 0)]
    if g.shape != (H, dk, dk):
        raise ValueError(f"identity G_LM layer has shape {g.shape}; case needs ({H}, {dk}, {dk})")
    q, k, v = _inputs(case)
    Gk = torch.tensor(g, device=case.device, dtype=_compute_dtype(case.dtype))
    out_g = kern.plga_attention(q, k, v, None, G=Gk)
    sdpa64 = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    e_sdpa = _sdpa_error(q, k, v, q.double())
    tol, _ = _output_tols(case.dtype, e_sdpa, e_sdpa)
    thm = ("sdpa_special_case",)
    rows = [
        _row(
            case,
            "kernels.g_cached",
            "torch.sdpa.float64",
            "output",
            slice_errors(out_g, sdpa64),
            tol,
            thm,
            note=f"identity G_LM; torch SDPA's own error at {case.dtype}: {e_sdpa:.2e}",
        ),
    ]
    if case.dtype == "float64":
        dummy = PLGAParams.random(dk, 1, 0, 0, seed=0)
        qn, kn, vn = (_np(t) for t in (q, k, v))
        ref = np.stack(
            [
                np.stack(
                    [plga_forward(qn[b, h], kn[b, h], vn[b, h], dummy, G=g[h])[0] for h in range(H)]
                )
                for b in range(B)
            ]
        )
        rows.append(
            _row(
                case,
                "reference.float64",
                "torch.sdpa.float64",
                "output",
                slice_errors(ref, sdpa64),
                TOL_FLOAT64,
                thm,
                note="float64 reference with G = I vs float64 SDPA",
            )
        )
    return rows


_RUNNERS: dict[str, Callable[[Case], list[CrosscheckRow]]] = {
    "random": _run_random,
    "mpmath": _run_mpmath,
    "trained": _run_trained,
    "identity": _run_identity,
}


def run_case(case: Case) -> list[CrosscheckRow]:
    """Run one case; an exception becomes one failed ``error`` row (nothing is hidden).

    Parameters
    ----------
    case : Case
        The case.

    Returns
    -------
    list of CrosscheckRow
        Its rows.
    """
    try:
        with torch.inference_mode():
            return _RUNNERS[case.kind](case)
    except Exception as exc:  # a crash is a failure of the case, reported as such
        return [
            CrosscheckRow(
                case=case.case_id,
                kind=case.kind,
                path="-",
                against="-",
                shape=case.shape,
                device=case.device,
                dtype=case.dtype,
                stage="error",
                max_rel=float("inf"),
                median_rel=float("inf"),
                tolerance=0.0,
                passed=False,
                note=f"{type(exc).__name__}: {exc}",
            )
        ]


def run_crosscheck(
    devices: list[str] | None = None,
    dtypes: list[str] | None = None,
    quick: bool = False,
    shard: tuple[int, int] = (1, 1),
    progress: Progress | None = None,
) -> CrosscheckResult:
    """Run the cross-check sweep (or one shard of it).

    Parameters
    ----------
    devices : list of str, optional
        Torch devices (default: every available one: cpu, and cuda if present).
    dtypes : list of str, optional
        Dtype names (default: float64, float32, bfloat16, float16; aliases
        fp64/fp32/bf16/fp16 accepted).
    quick : bool, default False
        The quick sweep (about a minute on 2 CPU cores); the full one takes a
        few minutes.
    shard : tuple of int, default (1, 1)
        ``(k, n)``: run only the cases whose index ``i`` (in the fixed case
        order) has ``i % n == k - 1``. The n shards partition the sweep.
    progress : callable, optional
        Called with one line per case.

    Returns
    -------
    CrosscheckResult
        Rows for every compared stage; ``.ok`` is False on any failure.

    Raises
    ------
    ValueError
        Bad device, dtype or shard.
    """
    say = progress or (lambda _s: None)
    devs = parse_devices(devices)
    dts = parse_dtypes(dtypes)
    cases = shard_cases(list_cases(devs, dts, quick), tuple(shard))  # type: ignore[arg-type]
    result = CrosscheckResult(devices=devs, dtypes=dts, quick=quick, shard=tuple(shard))  # type: ignore[arg-type]
    start = time.perf_counter()
    for i, case in enumerate(cases, 1):
        t0 = time.perf_counter()
        rows = run_case(case)
        result.rows.extend(rows)
        result.cases.append(case.case_id)
        bad = [r for r in rows if not r.passed]
        worst = max((r.max_rel / r.tolerance for r in rows if r.tolerance > 0), default=0.0)
        verdict = "ok" if not bad else f"FAILED ({', '.join(f'{r.path}:{r.stage}' for r in bad)})"
        say(
            f"crosscheck [{i}/{len(cases)}] {case.case_id}: {verdict}, "
            f"worst error/tolerance {worst:.2g} ({time.perf_counter() - t0:.1f} s)"
        )
    result.seconds = time.perf_counter() - start
    return result


# --------------------------------------------------------------------------- output
def summarize(result: CrosscheckResult) -> list[dict[str, Any]]:
    """Worst errors per (dtype, path, stage) over all cases.

    Returns
    -------
    list of dict
        ``{dtype, path, stage, cases, max_rel, median_rel, tolerance, worst_ratio,
        passed}`` where ``max_rel`` is the largest over the cases, ``tolerance``
        that case's tolerance (tolerances differ between cases at low precision:
        they scale with torch SDPA's own error), ``median_rel`` the median of the
        cases' medians, ``worst_ratio`` the largest error/tolerance over the cases
        and ``passed`` whether all passed; sorted by dtype, path, stage order.
    """
    groups: dict[tuple[str, str, str], list[CrosscheckRow]] = {}
    for r in result.rows:
        groups.setdefault((r.dtype, r.path, r.stage), []).append(r)
    stage_order = {s: i for i, s in enumerate((*STAGES, "error"))}
    dtype_order = {d: i for i, d in enumerate(DTYPE_NAMES)}
    out = []
    for (dt, path, stage), rows in groups.items():
        biggest = max(rows, key=lambda r: r.max_rel)
        ratios = [r.max_rel / r.tolerance if r.tolerance > 0 else math.inf for r in rows]
        out.append(
            {
                "dtype": dt,
                "path": path,
                "stage": stage,
                "cases": len(rows),
                "max_rel": biggest.max_rel,
                "median_rel": float(np.median([r.median_rel for r in rows])),
                "tolerance": biggest.tolerance,
                "worst_ratio": max(ratios),
                "passed": all(r.passed for r in rows),
            }
        )
    out.sort(
        key=lambda d: (dtype_order.get(d["dtype"], 9), d["path"], stage_order.get(d["stage"], 9))
    )
    return out


def _fmt_e(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{x:.2e}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)
    ]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def format_summary(result: CrosscheckResult) -> str:
    """The per (dtype, path, stage) summary as a text table."""
    rows = [
        [
            d["dtype"],
            d["path"],
            d["stage"],
            str(d["cases"]),
            _fmt_e(d["max_rel"]),
            _fmt_e(d["median_rel"]),
            _fmt_e(d["tolerance"]),
            f"{d['worst_ratio']:.2f}",
            "pass" if d["passed"] else "FAIL",
        ]
        for d in summarize(result)
    ]
    header = ["dtype", "path", "stage", "cases", "max_rel", "median_rel", "tolerance"]
    return _table([*header, "err/tol", "result"], rows)


def format_crosscheck(result: CrosscheckResult) -> str:
    """Render the cross-check as a text table (every row), a summary and a verdict.

    Parameters
    ----------
    result : CrosscheckResult
        From :func:`run_crosscheck`.

    Returns
    -------
    str
        The table.
    """
    rows = []
    for r in result.rows:
        B, H, S, dk = r.shape
        rows.append(
            [
                r.case.rsplit(f"-{r.device}-", 1)[0],
                r.path,
                r.against,
                f"{B}x{H}x{S}x{dk}",
                r.device,
                r.dtype,
                r.stage,
                _fmt_e(r.max_rel),
                _fmt_e(r.median_rel),
                _fmt_e(r.tolerance),
                "pass" if r.passed else "FAIL",
            ]
        )
    header = [
        "case",
        "path",
        "against",
        "BxHxSxdk",
        "device",
        "dtype",
        "stage",
        "max_rel",
        "median_rel",
        "tolerance",
        "result",
    ]
    parts = [
        _table(header, rows),
        "",
        "summary (worst case per dtype, path, stage):",
        format_summary(result),
        "",
    ]
    for r in result.failures:
        if r.note:
            parts.append(f"FAILED {r.case} {r.path} {r.stage}: {r.note}")
    n_fail = len(result.failures)
    k, n = result.shard
    shard = f", shard {k}/{n}" if n > 1 else ""
    parts.append(
        f"crosscheck {'passed' if result.ok else 'FAILED'}: {len(result.cases)} cases, "
        f"{len(result.rows)} comparisons, {n_fail} failed{shard}"
    )
    return "\n".join(parts)
