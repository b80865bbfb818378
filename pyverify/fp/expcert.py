"""Certify the exponential inside torch's float32 CPU flash attention, every float32 argument.

The fused SDPA computes ``exp(x - max)`` for every score of a row: on the lanes of its
vector loop with ATen's ``Vectorized<float>::exp_u20`` (a degree-5 polynomial under
``avx2``/``avx512``; ``std::exp`` per lane under ``default``), on the keys left over
after the last full vector with ``std::exp`` (the C library's ``expf``). Neither is
callable from Python, so this module reads them out of SDPA itself: a row whose key 0
has score 0 (the maximum, ``exp(0) = 1``) and whose keys ``1..m`` have scores
``x_1..x_m`` (``q_i . k_j = x_ij`` exactly: unit keys, scale 1), values ``v_0 = e_0`` and
``v_j = w_a e_(a m + j)`` for three weights ``w_a``. The output is
``o_0 = r = fl(1 / D)`` and ``o_(a m + j) = fl(fl(e^_j w_a) r)`` whatever order the kernel
sums ``D`` in, so ``e^_j`` is the float32 ``e`` with ``fl(fl(e w_a) r) = o`` for every
``a``: an interval of float32 numbers (the maps are monotone), one number for all but a
few ``x`` (where two remain, the certificate takes the worse). A layout of 16 keys puts
every ``x`` on a vector lane (16 lanes under ``avx512``, 8 under ``avx2``/``default``); a
layout of 23 keys (keys ``1..15`` at score ``-1000``, flushed to 0) puts 7 on the scalar
tail under all three.

Every float32 ``x`` in ``[X_MIN, 0]`` is swept (``X_MIN``: the smallest float32 whose
correctly rounded ``exp`` is not 0), per capability in a subprocess
(``ATEN_CPU_CAPABILITY``), against float64 ``exp`` (NumPy's, whose own relative error is
taken as at most :data:`ORACLE_REL`), the worst cases confirmed with mpmath. The
certificate holds, per capability and path, the relative error where
``exp(x) >= REL_FLOOR`` and the absolute error below it (the subnormal outputs and the
vector path's flush to 0 under ``ln(FLT_MIN)``): the pair ``(u_exp, eta_exp)`` of the
Lean hypothesis ``|e^(z) - exp z| <= u_exp exp z + eta_exp`` (``Pldr.fp_softmax_exp``)
on ``z <= 0``. Below ``X_MIN`` a sample is checked (every 4096th float32).

``python -m pyverify.fp.expcert`` reruns the sweep under every capability this CPU has
and writes :data:`CERTIFICATE` (minutes per capability; progress lines on stderr). It is
a one-time certification, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "CERTIFICATE",
    "ORACLE_REL",
    "REL_FLOOR",
    "X_MIN",
    "certify",
    "extract",
    "main",
    "sweep_bits",
]

#: The certificate, next to this module.
CERTIFICATE = Path(__file__).with_name("exp_certificate.json")
#: Relative error of the oracle (NumPy's float64 ``exp``, within a few ulp of float64; the
#: worst cases are re-done in mpmath): added to every measured relative error.
ORACLE_REL = 2.0**-50
#: Where the relative error stops and the absolute one starts (the ``u_exp``/``eta_exp``
#: split of ``[fp_softmax]``'s hypothesis): ``2^-125``, above float32's
#: normal threshold ``2^-126`` (the vector path returns 0 below ``ln(FLT_MIN)``).
REL_FLOOR = 2.0**-125
#: The smallest float32 ``x`` whose correctly rounded ``exp(x)`` is not 0
#: (``exp(x) > 2^-150``).
X_MIN = float(np.nextafter(np.float32(np.log(2.0**-150)), np.float32(0)))
_F32 = np.float32
_WEIGHTS = (_F32(1.0), _F32(1.1), _F32(0.7))
_WEIGHTS_ONE = (_F32(1.0), _F32(1.1), _F32(0.7), _F32(1.3), _F32(0.9), _F32(1.7))
#: (keys, first key carrying an x, how many x per row) of each path's row layout.
_LAYOUT = {"vector": (16, 1, 15), "tail": (23, 16, 7)}
_CAPS = ("default", "avx2", "avx512")


def sweep_bits(chunk: int, stride: int = 1) -> tuple[int, Any]:
    """How many chunks, and the chunks of the bit patterns of every float32 in ``[X_MIN, 0]``.

    ``stride > 1``: every ``stride``-th chunk only (a check of the machinery, never the
    certificate).
    """
    last = int(np.array([X_MIN], dtype=_F32).view(np.uint32)[0])
    starts = range(0x80000000, last + 1, chunk * stride)

    def gen() -> Any:
        yield np.array([0], dtype=np.uint32)  # +0.0
        for start in starts:
            yield np.arange(start, min(start + chunk, last + 1), dtype=np.uint32)

    return len(starts) + 1, gen()


def _sdpa(q: Any, k: Any, v: Any) -> np.ndarray:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with torch.inference_mode(), sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=1.0)
    return out[0, 0].numpy()


def _rows(
    x: np.ndarray, path: str, m: int, weights: tuple[np.float32, ...], filler: float = -1000.0
) -> np.ndarray:
    """SDPA's outputs for ``x``, ``m`` per row on ``path``'s keys.

    The key after them has score ``filler`` (it changes ``D``, hence ``r``), the other keys
    but key 0 score -1000 (their exponentials are 0).
    """
    import torch

    nk, first, _ = _LAYOUT[path]
    pad = (-x.size) % m
    xs = np.concatenate([x, np.full(pad, -1000.0, dtype=_F32)]).reshape(-1, m)
    d = 1 + len(weights) * m
    q = torch.zeros(1, 1, xs.shape[0], d)
    q[0, 0, :, 1 : m + 1] = torch.from_numpy(xs)
    q[0, 0, :, 0] = 1.0
    k = torch.zeros(1, 1, nk, d)
    k[0, 0, 1:, 0] = -1000.0  # every key but 0 and the x keys at -1000: exp flushes to 0
    v = torch.zeros(1, 1, nk, d)
    v[0, 0, 0, 0] = 1.0
    if first + m < nk:
        k[0, 0, first + m, 0] = filler
    for j in range(m):
        k[0, 0, first + j, 0] = 0.0
        k[0, 0, first + j, 1 + j] = 1.0
        for a, w in enumerate(weights):
            v[0, 0, first + j, 1 + a * m + j] = float(w)
    return _sdpa(q, k, v)


def _f(e: np.ndarray, w: np.float32, r: np.ndarray) -> np.ndarray:
    """``fl(fl(e w) r)`` in float32 (each product of two float32 is exact in float64)."""
    p = (e.astype(np.float64) * np.float64(w)).astype(_F32)
    return (p.astype(np.float64) * r.astype(np.float64)).astype(_F32)


def _bisect(y: np.ndarray, r: np.ndarray, w: np.float32, upper: bool) -> np.ndarray:
    """Bits of the first ``e >= 0`` with ``f(e) >= y`` (``upper``: the last with ``<= y``)."""
    lo = np.zeros(y.size, dtype=np.int64)
    hi = np.full(y.size, 0x7F800000, dtype=np.int64)
    for _ in range(33):
        mid = (lo + hi) // 2
        fm = _f(mid.astype(np.uint32).view(_F32), w, r)
        go_up = (fm <= y) if upper else (fm < y)
        lo = np.where(go_up, mid + 1, lo)
        hi = np.where(go_up, hi, mid)
    return lo - 1 if upper else lo


def _interval(
    x: np.ndarray, path: str, m: int, weights: tuple[np.float32, ...], filler: float = -1000.0
) -> tuple[np.ndarray, np.ndarray]:
    """Bits of the interval of float32 ``e`` consistent with SDPA's outputs, per ``x``."""
    out = _rows(x, path, m, weights, filler)
    r = out[:, :1].repeat(m, axis=1).reshape(-1)[: x.size]
    ys = [out[:, 1 + a * m : 1 + (a + 1) * m].reshape(-1)[: x.size] for a in range(len(weights))]
    e0 = (ys[0].astype(np.float64) / r.astype(np.float64)).astype(_F32).view(np.int32)
    win = 4
    ok = np.zeros((2 * win + 1, x.size), dtype=bool)
    for i, kk in enumerate(range(-win, win + 1)):
        bits = e0.astype(np.int64) + kk
        e = np.clip(bits, 0, 0x7F800000).astype(np.uint32).view(_F32)
        good = bits >= 0
        for a, w in enumerate(weights):
            good &= _f(e, w, r) == ys[a]
        ok[i] = good
    lo = (e0.astype(np.int64) + np.argmax(ok, axis=0) - win).clip(0)
    hi = (e0.astype(np.int64) + win - np.argmax(ok[::-1], axis=0)).clip(0)
    redo = ~ok.any(axis=0) | ok[0] | ok[-1]  # the interval may reach past the window: bisect
    if redo.any():
        idx = np.flatnonzero(redo)
        los = [_bisect(ys[a][idx], r[idx], w, False) for a, w in enumerate(weights)]
        his = [_bisect(ys[a][idx], r[idx], w, True) for a, w in enumerate(weights)]
        lo[idx], hi[idx] = np.max(los, axis=0), np.min(his, axis=0)
        if np.any(lo[idx] > hi[idx]):
            bad = x[idx][lo[idx] > hi[idx]][:3]
            raise RuntimeError(f"{path}: SDPA's outputs fit no float32 exponential at x={bad}")
    return lo, hi


def extract(x: np.ndarray, path: str) -> tuple[np.ndarray, np.ndarray]:
    """The interval ``[lo, hi]`` (float32) holding SDPA's ``e^(x)`` on ``path``, per ``x``.

    Many ``x`` per row first; where two float32 numbers remain, again with that ``x``
    alone in its row, more weights and four more denominators (a key of known score
    beside it).
    """
    lo, hi = _interval(x, path, _LAYOUT[path][2], _WEIGHTS)
    for filler in (-1000.0, -0.3, -0.7, -1.1, -2.3):
        wide = np.flatnonzero(lo != hi)
        if not wide.size:
            break
        lo2, hi2 = _interval(x[wide], path, 1, _WEIGHTS_ONE, filler)
        lo[wide], hi[wide] = np.maximum(lo[wide], lo2), np.minimum(hi[wide], hi2)
    return lo.astype(np.uint32).view(_F32), hi.astype(np.uint32).view(_F32)


class _Tally:
    """The worst errors of one path, by region, with their arguments."""

    def __init__(self) -> None:
        self.rel, self.rel_x = 0.0, 0.0
        self.abs, self.abs_x = 0.0, 0.0
        self.sub_abs = 0.0  # where exp(x) < 2^-126 (subnormal or flushed outputs)
        self.count = self.wide = 0
        self.worst: list[tuple[float, float]] = []  # (relative error, x), the largest

    def add(self, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        ex = np.exp(x.astype(np.float64))
        err = np.maximum(np.abs(lo.astype(np.float64) - ex), np.abs(hi.astype(np.float64) - ex))
        self.count += x.size
        self.wide += int(np.count_nonzero(lo != hi))
        big = ex >= REL_FLOOR
        if big.any():
            rel = err[big] / ex[big]
            i = int(np.argmax(rel))
            if rel[i] > self.rel:
                self.rel, self.rel_x = float(rel[i]), float(x[big][i])
            top = np.argpartition(rel, -4)[-4:] if rel.size > 4 else np.arange(rel.size)
            self.worst = sorted([*self.worst, *((float(rel[t]), float(x[big][t])) for t in top)])[
                -16:
            ]
        if (~big).any():
            a = err[~big]
            i = int(np.argmax(a))
            if a[i] > self.abs:
                self.abs, self.abs_x = float(a[i]), float(x[~big][i])
            sub = ex < 2.0**-126
            if sub.any():
                self.sub_abs = max(self.sub_abs, float(err[sub].max()))

    def result(self, x_for: Any) -> dict[str, Any]:
        """The certified pair and the figures behind it, worst cases re-done in mpmath."""
        import mpmath

        ctx = mpmath.MPContext()
        ctx.dps = 60
        confirmed = []
        for _, xv in self.worst[-8:]:
            lo, hi = x_for(np.array([xv], dtype=_F32))
            exact = ctx.exp(ctx.mpf(xv))
            rel = max(abs(ctx.mpf(float(lo[0])) - exact), abs(ctx.mpf(float(hi[0])) - exact))
            confirmed.append({"x": xv, "rel_mpmath": float(rel / exact)})
        rel_mp = max((c["rel_mpmath"] for c in confirmed), default=0.0)
        u_exp = max(self.rel + ORACLE_REL, rel_mp)
        return {
            "u_exp": u_exp,
            "u_exp_in_u32": u_exp / 2.0**-24,
            "eta_exp": self.abs * (1 + ORACLE_REL),
            "worst_rel_x": self.rel_x,
            "worst_abs_x": self.abs_x,
            "abs_where_subnormal": self.sub_abs * (1 + ORACLE_REL),
            "count": self.count,
            "two_candidates": self.wide,
            "mpmath_confirmed": confirmed,
        }


def _below(path: str) -> float:
    """The largest output on a sample below ``X_MIN`` (``exp`` is below ``2^-150`` there).

    ``-inf`` is not sampled: it is a masked score, which the kernel handles before its
    exponential, and ``-inf * 0`` in the read-out's score product would poison the row.
    """
    last = int(np.array([X_MIN], dtype=_F32).view(np.uint32)[0])
    x = np.arange(last + 1, 0xFF800000, 4096, dtype=np.uint32).view(_F32)
    _, hi = extract(x, path)
    return float(hi.max())


def certify(chunk_bits: int = 22, say: Any = None, stride: int = 1) -> dict[str, Any]:
    """Sweep both paths under this process's capability; the certificate's entry for it.

    ``stride > 1`` sweeps every ``stride``-th chunk only (a check of the machinery: the
    entry then says ``"exhaustive": false``).
    """
    import torch

    torch.set_num_threads(1)
    say = say or (lambda s: print(s, file=sys.stderr, flush=True))
    cap = str(torch.backends.cpu.get_cpu_capability()).lower()
    out: dict[str, Any] = {"capability": cap, "paths": {}}
    t0 = time.perf_counter()
    for path in _LAYOUT:
        tally = _Tally()
        total, chunks = sweep_bits(1 << chunk_bits, stride)
        for i, bits in enumerate(chunks, 1):
            x = bits.view(_F32)
            tally.add(x, *extract(x, path))
            if i % 16 == 0 or i == total:
                say(f"expcert {cap} {path}: chunk {i}/{total}, worst rel "
                    f"{tally.rel:.3g} ({tally.rel / 2.0**-24:.2f} ulp), "
                    f"{time.perf_counter() - t0:.0f} s")  # fmt: skip
        res = tally.result(lambda x, p=path: extract(x, p))
        below = _below(path)
        res["largest_below_x_min"] = below
        res["eta_exp"] = max(res["eta_exp"], below + 2.0**-150)
        out["paths"][path] = res
    out["u_exp"] = max(p["u_exp"] for p in out["paths"].values())
    out["eta_exp"] = max(p["eta_exp"] for p in out["paths"].values())
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["exhaustive"] = stride == 1
    return out


def _provenance() -> dict[str, Any]:
    import mpmath
    import torch

    cpu = next(
        (ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
         if ln.startswith("model name")), platform.processor(),
    ) if Path("/proc/cpuinfo").exists() else platform.processor()  # fmt: skip
    return {
        "torch": torch.__version__,
        "numpy": np.__version__,
        "mpmath": mpmath.__version__,
        "libc": " ".join(platform.libc_ver()),
        "platform": platform.platform(),
        "cpu": cpu,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m pyverify.fp.expcert",
        "x_min": X_MIN,
        "rel_floor": REL_FLOOR,
        "oracle": f"NumPy float64 exp (relative error taken as <= {ORACLE_REL:g}); the 8 "
        "worst cases per path re-done in mpmath at 60 digits",
        "what": "torch's float32 CPU flash attention (SDPA, FLASH_ATTENTION pinned): its "
        "exponential read out of SDPA's outputs, on the vector lanes and on the scalar tail",
    }


def main(argv: list[str] | None = None) -> int:
    """Run the sweep per capability (subprocesses) and write the certificate."""
    ap = argparse.ArgumentParser(prog="python -m pyverify.fp.expcert", description=__doc__)
    ap.add_argument("--capabilities", default=None, help="comma list (default: all supported)")
    ap.add_argument("--out", type=Path, default=CERTIFICATE)
    ap.add_argument("--chunk-bits", type=int, default=22)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(certify(args.chunk_bits)), flush=True)
        return 0
    import torch

    best = str(torch.backends.cpu.get_cpu_capability()).lower()
    caps = args.capabilities.split(",") if args.capabilities else list(
        _CAPS[: _CAPS.index(best) + 1] if best in _CAPS else [best]
    )  # fmt: skip
    cert = {"provenance": _provenance(), "capabilities": {}}
    if args.out.exists():  # keep what other capabilities certified on this torch
        old = json.loads(args.out.read_text())
        if old.get("provenance", {}).get("torch") == cert["provenance"]["torch"]:
            cert["capabilities"] = old.get("capabilities", {})
    for cap in caps:
        env = dict(os.environ, ATEN_CPU_CAPABILITY=cap)
        cmd = [sys.executable, "-m", "pyverify.fp.expcert", "--worker",
               "--chunk-bits", str(args.chunk_bits)]  # fmt: skip
        done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=True)
        entry = json.loads(done.stdout.strip().splitlines()[-1])
        if entry["capability"] != cap:
            raise RuntimeError(f"asked for capability {cap}, torch took {entry['capability']}")
        cert["capabilities"][cap] = entry
        args.out.write_text(json.dumps(cert, indent=2, sort_keys=True) + "\n")
        print(f"expcert {cap}: u_exp {entry['u_exp']:.4g} ({entry['u_exp'] / 2**-24:.2f} ulp), "
              f"eta_exp {entry['eta_exp']:.3g}, {entry['seconds']} s", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
