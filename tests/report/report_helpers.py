"""Fake phases for the report tests (imported as ``report_helpers``): no Lean, no subprocess."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from pyverify.crosscheck import run_crosscheck
from pyverify.diagnose import run_diagnose
from pyverify.report import Phases, aggregate_tests
from pyverify.theorems import THEOREM_IDS

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_results() -> dict[str, Any]:
    return json.loads((FIXTURES / "results.json").read_text())


def fake_manifest(missing: tuple[str, ...] = ()) -> dict[str, Any]:
    theorems = []
    for i, tid in enumerate(THEOREM_IDS):
        if tid in missing:
            continue
        # a helper lemma with the same ID first: the principal one is the `.<id>` one
        theorems.append(
            {
                "name": f"Pldr.T{i}.{tid}_aux",
                "theorem_id": tid,
                "file": f"lean/Pldr/T{i}.lean",
                "line": 3,
                "docstring": f"[{tid}] aux",
                "statement": "True",
            }
        )
        theorems.append(
            {
                "name": f"Pldr.T{i}.{tid}",
                "theorem_id": tid,
                "file": f"lean/Pldr/T{i}.lean",
                "line": 10,
                "docstring": f"[{tid}] main",
                "statement": "True",
            }
        )
    theorems.append(
        {
            "name": "Pldr.Basic.helper",
            "theorem_id": None,
            "file": "lean/Pldr/Basic.lean",
            "line": 1,
            "docstring": "",
            "statement": "True",
        }
    )
    return {
        "schema": 1,
        "package": "Pldr",
        "lean": "Lean (version 4.28.0, fake)",
        "theorem_ids": list(THEOREM_IDS),
        "theorems": theorems,
    }


class Fake:
    """Configurable fake phases; counts calls; varies non-deterministic fields per call."""

    def __init__(
        self, tmp: Path, *, lean_status="passed", missing=(), results=None, crash: str | None = None
    ) -> None:
        self.calls = 0
        self.lean_status = lean_status
        self.missing = missing
        self.results = results if results is not None else fixture_results()
        self.crash = crash
        self.data_dir = tmp / "data"
        self.data_dir.mkdir(exist_ok=True)
        rng = np.random.default_rng(0)
        files = {
            "trained": rng.normal(size=(2, 3, 4, 4)),
            "identity": np.broadcast_to(np.eye(4), (2, 3, 4, 4)),
            "random_normal": rng.uniform(size=(2, 3, 4, 4)),
        }
        for name, g in files.items():
            np.savez(self.data_dir / f"{name}.npz", G_LM=g.astype(np.float32))

    def _maybe_crash(self, name: str) -> None:
        if self.crash == name:
            raise RuntimeError(f"{name} exploded")

    def lean(self, repo: Path, progress) -> dict[str, Any]:
        self._maybe_crash("lean")
        self.calls += 1
        progress("fake lean build")
        return {
            "status": self.lean_status,
            "toolchain": "wasm",
            "version": "Lean (version 4.28.0, fake)",
            # built on the first call, cached later, with varying times: must not matter
            "modules": [
                {
                    "name": "Pldr.Basic",
                    "rel": "Pldr/Basic.lean",
                    "status": "built" if self.calls == 1 else "cached",
                    "seconds": 1.5 * self.calls,
                }
            ],
            "findings": [],
            "manifest": fake_manifest(self.missing),
            "id_problems": [f"no theorem carries the ID [{m}]" for m in self.missing],
            "seconds": 3.0 * self.calls,
            "error": None,
        }

    def tests(self, repo: Path, progress) -> dict[str, Any]:
        self._maybe_crash("tests")
        agg = aggregate_tests(self.results)
        bad = agg["totals"]["failed"] + agg["totals"]["error"]
        return {
            "status": "failed" if bad else "passed",
            "returncode": 1 if bad else 0,
            "aggregate": agg,
            "results": self.results,
            "output_tail": [f"run {self.calls}"],
        }

    def crosscheck(self, quick: bool, progress):
        self._maybe_crash("crosscheck")
        return run_crosscheck(
            ["cpu"], ["float64", "float32"], quick=True, shard=(1, 6), progress=progress
        )

    def diagnostics(self, progress) -> dict[str, dict[str, Any]]:
        self._maybe_crash("diagnostics")
        out = {}
        for name in ("trained", "identity", "random_normal"):
            d = run_diagnose(str(self.data_dir / f"{name}.npz"), progress)
            d["status"] = "passed"
            out[name] = d
        return out

    def model(self, progress) -> dict[str, Any]:
        from pyverify.diagnose import run_model_diagnose

        d = run_model_diagnose(seed=0, n_inputs=3, seq_len=5, progress=progress)
        d["status"] = "passed"
        return d

    def bench(self, progress) -> dict[str, Any]:
        self._maybe_crash("bench")
        return {
            "status": "passed",
            "meta": {"device": "cpu", "threads": 2, "method": "fake"},
            "rows": [
                {
                    "benchmark": "P1 collapsed/SDPA",
                    "shape": [1, 14, 512, 64],
                    "dtype": "float32",
                    "device": "cpu",
                    "ours_ms": 1.0 + self.calls,
                    "baseline_ms": 1.0,
                    "ratio": 1.0 + self.calls,
                    "target": 1.1,
                    "meets_target": False,
                }
            ],
        }

    def decoder_step(self, progress) -> list[dict[str, Any]]:
        progress("fake decoder step")
        return [{"dtype": "float32", "path": "kernels decoder", "stage": "decoder step",
                 "cases": 2, "proved_cases": 2, "violations": 0, "tightness_cases": 2,
                 "tightness_worst": 300.0 + self.calls, "tightness_median": 200.0}]  # fmt: skip

    def phases(self) -> Phases:
        return Phases(
            lean=self.lean,
            tests=self.tests,
            crosscheck=self.crosscheck,
            decoder_step=self.decoder_step,
            diagnostics=self.diagnostics,
            model=self.model,
            bench=self.bench,
        )
