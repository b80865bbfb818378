"""``reports/index.md`` from the report's data."""

from __future__ import annotations

from typing import Any

from pyverify.report.bench_load import bench_section
from pyverify.report.markdown import not_done
from pyverify.report.markdown import num as _g
from pyverify.report.markdown import sci as _e
from pyverify.report.markdown import table as _table
from pyverify.report.markdown import verdict as _verdict
from pyverify.report.tightness import tightness_lines

__all__ = ["render_index"]


def _tests_cell(c: dict[str, Any]) -> str:
    st = c.get("status")
    if st in ("not run", "none"):
        return _verdict(st)
    txt = f"{c['passed']}/{c['total']}"
    bad = c["failed"] + c["error"]
    if bad:
        return f"**{txt} ({bad} failed)**"
    if c["skipped"]:
        txt += f" ({c['skipped']} skipped)"
    return txt


def _lean_cell(lean: dict[str, Any], repo_rel: str) -> str:
    if not lean.get("name"):
        return "–"
    name = f"`{lean['name']}`"
    if lean.get("file"):
        name += f" ([{lean['file']}:{lean['line']}]({repo_rel}/{lean['file']}#L{lean['line']}))"
    if lean.get("tagged", 0) > 1:
        name += f" +{lean['tagged'] - 1}"
    axioms = lean.get("axioms")
    if axioms is not None:
        listed = ", ".join(f"`{a}`" for a in axioms) or "none"
        name += f"; axioms: {listed}" + ("" if lean.get("axioms_exact", True) else " (at least)")
    return name


def _theorem_section(data: dict[str, Any], repo_rel: str) -> list[str]:
    rows = []
    impls: list[str] = []
    for t in data["theorems"]:
        for impl in t["tests"]:
            if impl not in impls:
                impls.append(impl)
    for t in data["theorems"]:
        cc = t["crosscheck"]
        cc_cell = _verdict(cc["status"])
        if cc["comparisons"]:
            cc_cell += f" ({cc['comparisons'] - cc['failed']}/{cc['comparisons']})"
        rows.append(
            [f"`{t['id']}`", _lean_cell(t["lean"], repo_rel), _verdict(t["lean"]["status"])]
            + [_tests_cell(t["tests"].get(i, {"status": "none"})) for i in impls]
            + [cc_cell, "yes" if t["ok"] else "**NO**"]
        )
    header = ["theorem ID", "Lean theorem", "Lean build"]
    header += [f"tests: {i}" for i in impls] + ["cross-check", "ok"]
    lines = ["## Theorems", ""]
    lines += _table(header, rows)
    lines += [
        "",
        "Lean build: *proved* = the library built with no error, no `sorry` and no forbidden "
        "construct, and a theorem carries the ID. Axioms: what `#print axioms` prints for the "
        "theorem, read from the compiled constants (*at least*: it also uses Lean-library lemmas "
        "whose proofs the embedded toolchain does not ship). Tests: Hypothesis property tests "
        "tagged with the ID (passed/total, every device and dtype). Cross-check: comparisons "
        "of the optimised kernels against the float64 reference that exercise the theorem.",
        "",
    ]
    for t in data["theorems"]:
        lines.append(f"- `{t['id']}`: {t['summary']}")
    lines.append("")
    return lines


def _lean_section(lean: dict[str, Any]) -> list[str]:
    lines = ["## Lean build", ""]
    st = lean.get("status")
    if short := not_done(lines, lean, "--no-lean", st == "error" and not lean.get("modules")):
        return short
    mods = lean.get("modules") or []
    ok = sum(1 for m in mods if m["status"] in ("ok", "built", "cached"))
    lines.append(
        f"Status **{st}**; toolchain `{lean.get('version') or lean.get('toolchain')}`; "
        f"{ok}/{len(mods)} modules built and audited."
    )
    man = lean.get("manifest") or {}
    if man:
        n = len(man.get("theorems") or [])
        tagged = sum(1 for t in man.get("theorems") or [] if t.get("theorem_id"))
        lines.append(
            f"Manifest: {n} theorems, {tagged} tagged with a theorem ID "
            "([lean_manifest.json](lean_manifest.json))."
        )
    for f in lean.get("findings") or []:
        lines.append(f"- finding: `{f}`")
    for p in lean.get("id_problems") or []:
        lines.append(f"- {p}")
    if lean.get("error"):
        lines.append(f"- error: {lean['error']}")
    lines.append("")
    return lines


def _tests_section(tests: dict[str, Any]) -> list[str]:
    lines = ["## Property tests", ""]
    st = tests.get("status")
    agg = tests.get("aggregate")
    if short := not_done(lines, tests, "--no-tests", not agg):
        return short
    tot = agg["totals"]
    lines.append(
        f"Status **{st}**: {tot['passed']} passed, {tot['failed']} failed, {tot['error']} errors, "
        f"{tot['skipped']} skipped of {tot['total']} (Hypothesis profile `ci`, derandomised)."
    )
    lines.append("")
    rows = []
    for impl, per in sorted(agg["by_implementation"].items()):
        for where, c in sorted(per.items()):
            rows.append(
                [
                    impl,
                    where,
                    str(c["passed"]),
                    str(c["failed"] + c["error"]),
                    str(c["skipped"]),
                    str(c["total"]),
                ]
            )
    lines += _table(
        ["implementation", "device/dtype", "passed", "failed", "skipped", "total"], rows
    )
    if agg.get("unknown_theorems"):
        lines.append(f"\nUnknown theorem IDs in tests: {', '.join(agg['unknown_theorems'])}")
    if agg.get("failures"):
        lines += ["", "Failures:"] + [f"- `{n}`" for n in agg["failures"]]
    lines.append("")
    return lines


def _error_cells(row: dict[str, Any], *more: str) -> list[str]:
    """A cross-check row's max and median relative error, ``more``, pass/FAIL."""
    verdict = "pass" if row["passed"] else "**FAIL**"
    return [_e(row["max_rel"]), _e(row["median_rel"]), *more, verdict]


def _crosscheck_section(cc: dict[str, Any]) -> list[str]:
    lines = ["## Cross-check", ""]
    if cc.get("status") == "error" and not cc.get("rows"):
        return [*lines, f"**Error**: {cc.get('error')}", ""]
    n_fail = sum(1 for r in cc["rows"] if not r["passed"])
    lines.append(
        f"Status **{'passed' if cc['ok'] else 'FAILED'}** ({'quick' if cc['quick'] else 'full'} "
        f"sweep): {len(cc['cases'])} cases, {len(cc['rows'])} comparisons, {n_fail} failed; "
        f"devices {', '.join(cc['devices'])}; dtypes {', '.join(cc['dtypes'])}. Error = per "
        "(batch, head) slice `max|x - y| / max|y|`; max and median over slices (and cases). "
        "*Measured on this machine*: the errors and the proved bounds, which are "
        "evaluated on the operands (they move in their last digits with the CPU and its "
        "dispatch; [measurements.json](measurements.json)); the pass/fail verdicts are in "
        "verification.json. *Proved*: the stage's bound from the "
        "floating-point theorems of `lean/Pldr/Float` (`pyverify/fp/models.py`: each "
        "implementation's arithmetic, stage by stage, the previous stage's measured "
        "difference as its input bound), in the same measure; every entry must lie within "
        "it, and it *is* the row's tolerance (rule `proved: IDs`); a stage without one (a "
        "premise that fails, such as a score error bound above 1 on torch's MATH backend) "
        "fails: no tolerance without a theorem. The metric learner is compared at its "
        "sub-stages (`D = Q^T Q`, `A0` its first LayerNorm, per unit `k` the first SwiGLU "
        "block `Uk.f1`, the residual sum `Uk.Z` and its LayerNorm `Ak`, the last unit's "
        "`A`; `pyverify/crosscheck/learner_bound.py`): each LayerNorm's mean and rstd are "
        "certified per row on the values the routine was given (exact rational arithmetic, "
        "`pyverify/fp/learner.py`), and the kernels' rows also fail where those statistics "
        "are less accurate than the two-pass routine's proved worst case. Rows of the "
        "fused kernel whose scores are too far off for "
        "`fp_head_output` are held to `fp_head_output_hull`: the values' range plus the "
        "kernel's own roundings, a bound of last resort."
    )
    lines += ["", "![error by dtype](error_by_dtype.png)", ""]
    rows = []
    for s in cc["summary"]:  # the tolerance is the proved bound: shown once, as that
        proved = "-" if s.get("proved") is None else _e(s["proved"])
        p_ratio = "-" if s.get("proved_ratio") is None else _g(s["proved_ratio"], ".2g")
        if s.get("proved_cases") is not None and s["proved_cases"] < s["cases"]:
            p_ratio += f" ({s['proved_cases']} of {s['cases']} cases bounded)"
        cells = _error_cells(s, proved, p_ratio)
        rows.append([s["dtype"], s["path"], s["stage"], str(s["cases"]), *cells])
    header = ["dtype", "path", "stage", "cases", "max rel. error", "median"]
    lines += _table([*header, "proved bound", "worst measured/proved", "result"], rows)
    lines += ["", *tightness_lines([*cc["summary"], *cc.get("decoder_step", [])], _table)]
    lines += ["<details><summary>every comparison</summary>", ""]
    full = []
    for r in cc["rows"]:
        shape = "x".join(map(str, r["shape"]))
        where = [r["case"], r["path"], r["against"], shape, r["device"], r["dtype"], r["stage"]]
        full.append([*where, *_error_cells(r, _e(r["tolerance"]))])
    header = ["case", "path", "against", "BxHxSxdk", "device", "dtype", "stage"]
    lines += _table([*header, "max", "median", "tol (proved)", "result"], full)
    lines += ["", "</details>", ""]
    bad = [r for r in cc["rows"] if not r["passed"] and (r.get("note") or r.get("proved_note"))]
    for r in bad:  # why: its note, and where it had no proved bound, the premise that failed
        why = "; ".join(x for x in (r.get("note"), r.get("proved_note")) if x)
        lines.append(f"- FAILED `{r['case']}` {r['path']} {r['stage']}: {why}")
    if bad:
        lines.append("")
    return lines


def _source(row: str | None) -> str:
    """The data README's table row ``| file | source pickle | what it is |`` as prose."""
    if not row:
        return "–"
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    if len(cells) >= 3:
        return f"source pickle {cells[1]}; {cells[2]}"
    return row


def _diag_summary_rows(name: str, d: dict[str, Any]) -> list[str]:
    if d.get("status") == "error":
        return [name, "**error**", d.get("error", ""), "", "", "", "", ""]
    s = d["summary"]
    return [
        name,
        f"{_g(s['commutant_residual']['min'])} / {_g(s['commutant_residual']['median'])} / "
        f"{_g(s['commutant_residual']['max'])}",
        f"{s['heads_residual_above_0.5']}/{s['total_heads']}",
        f"{_g(s['identity_distance']['median'])}",
        f"{s['positive_heads']}/{s['total_heads']}",
        f"{s['rank']['min']} / {_g(s['rank']['median'])} / {s['rank']['max']}",
        f"{_g(s['largest_singular_value']['median'])}",
        f"{s['absorbable_heads']}/{s['total_heads']}",
    ]


def _diagnostics_section(diag: dict[str, dict[str, Any]], model: dict[str, Any]) -> list[str]:
    lines = [
        "## Diagnostics of the real trained G_LM",
        "",
        "*Measured on this machine*: the figures below (residuals, distances, singular "
        "values; [measurements.json](measurements.json)); the counts and verdicts drawn "
        "from them by a threshold are in verification.json.",
        "",
    ]
    tr = diag.get("trained") or {}
    if tr.get("status") == "error" or not tr:
        lines += [f"**Error**: {tr.get('error', 'not run')}", ""]
    else:
        p, s = tr["provenance"], tr["summary"]
        lines += [
            f"- file: `{p['file']}`, shape {' x '.join(map(str, tr['shape']))}",
            f"- sha256: `{p['sha256']}`",
            f"- source: {_source(p['source'])}",
            "- origin: `burcgokden/PLDR-LLM-with-KVG-cache` (Apache-2.0), "
            "`src/ablation/predefined-G_LM/` (see `pyverify/data/README.md`)",
            "",
            f"RoPE-commutant residual (adjacent-pair planes, base 10000): min "
            f"{_g(s['commutant_residual']['min'])}, median {_g(s['commutant_residual']['median'])}"
            f", max {_g(s['commutant_residual']['max'])}; {s['heads_residual_above_0.5']} of "
            f"{s['total_heads']} heads above 0.5. Absorbable into `W_q` before RoPE: "
            f"{s['absorbable_heads']}/{s['total_heads']} heads (tolerance {s['absorb_tol']:g})"
            + (
                "; for this model only the post-rotation form `softmax((Q_rot G) K_rot^T / "
                "sqrt(dk)) V` is exact."
                if not s["absorbable"]
                else "."
            ),
            f"Distance from the identity `||G - I||_F / ||I||_F` (how far from SDPA): min "
            f"{_g(s['identity_distance']['min'])}, median {_g(s['identity_distance']['median'])}, "
            f"max {_g(s['identity_distance']['max'])}. Entries from {_g(s['min_entry'])} "
            f"(max |entry| {_g(s['max_abs_entry'])}); entrywise positive heads: "
            f"{s['positive_heads']}/{s['total_heads']} (Perron-Frobenius applies only there); "
            f"spectral radius attained by a real positive eigenvalue in "
            f"{s['dominant_real_positive_heads']}/{s['total_heads']} heads. Numerical rank "
            f"(singular values above {s['rank_rtol']:.2g} s_max): min {s['rank']['min']}, median "
            f"{_g(s['rank']['median'])}, max {s['rank']['max']}; full rank in "
            f"{s['full_rank_heads']}/{s['total_heads']} heads.",
            "",
            "![commutant residual heatmaps](commutant_residual.png)",
            "",
        ]
        rows = [
            [
                str(r["layer"]),
                f"{r['residual_min']:.3f}",
                f"{r['residual_median']:.3f}",
                f"{r['residual_max']:.3f}",
                _g(r["identity_distance_median"]),
                str(r["positive_heads"]),
                f"{r['rank_min']}..{r['rank_max']}",
                str(r["absorbable_heads"]),
            ]
            for r in tr["per_layer"]
        ]
        lines += _table(
            [
                "layer",
                "residual min",
                "median",
                "max",
                "‖G−I‖/‖I‖ median",
                "positive heads",
                "rank",
                "absorbable heads",
            ],
            rows,
        )
        lines.append("")
    lines += ["### Trained operator vs the controls", ""]
    rows = [_diag_summary_rows(n, d) for n, d in diag.items()]
    lines += _table(
        [
            "G_LM",
            "residual min/median/max",
            "heads > 0.5",
            "‖G−I‖/‖I‖ median",
            "positive heads",
            "rank min/median/max",
            "s_max median",
            "absorbable heads",
        ],
        rows,
    )
    lines.append("")
    for n, d in diag.items():
        if d.get("status") != "error" and n != "trained":
            lines.append(f"- `{d['provenance']['file']}` sha256 `{d['provenance']['sha256']}`")
    lines.append("")
    if model and model.get("order_parameter"):
        m, op, inv = model["model"], model["order_parameter"], model["invariance"]
        lines += [
            "### A live metric learner (random reference model)",
            "",
            f"{m['layers']} layers x {m['heads']} heads, d_model {m['d_model']}, seed "
            f"{m['seed']}; {m['n_inputs']} random token sequences of length {m['seq_len']}. "
            "Order parameter = RMS fluctuation over the inputs / norm of the mean "
            "(0 = collapsed to a constant operator):",
            "",
        ]
        lines += _table(
            ["tensor", "order parameter"], [[t, _g(v)] for t, v in op["overall"].items()]
        )
        lines += [
            "",
            f"Invariance error `eps_G` of the first input's G-cache against G recomputed on each "
            f"input: max {_g(inv['eps_G_max'])}; logits gap cached vs recomputed: max "
            f"{_g(inv['logits_gap_max'])} (an untrained metric learner is far from invariant, "
            "so caching changes the outputs; `cache_equivalence` needs `eps_G = 0`).",
            "",
        ]
    return lines


def render_index(
    data: dict[str, Any],
    *,
    lean: dict[str, Any],
    tests: dict[str, Any],
    bench: dict[str, Any],
    repo_rel: str = "..",
) -> str:
    """Render ``index.md``.

    Parameters
    ----------
    data : dict
        The ``verification.json`` content (before rounding is fine).
    lean, tests, bench : dict
        The phases' full results (for details not kept in ``verification.json``).
    repo_rel : str, default ".."
        Path from the report folder to the repository root (for links).

    Returns
    -------
    str
        Markdown.
    """
    ok = data["ok"]
    st = data["status"]
    lines = [
        "# pyverify verification report",
        "",
        f"Overall: **{'passed' if ok else 'FAILED'}** — Lean {st['lean']}, property tests "
        f"{st['tests']}, cross-check {st['crosscheck']}, diagnostics {st['diagnostics']}, "
        f"benchmarks {st['bench']}.",
        "",
        "Data: [verification.json](verification.json) (the verdicts: identical on every "
        "machine), [measurements.json](measurements.json) (errors and figures measured on "
        "this machine), [environment.json](environment.json) (host, time, versions, "
        "durations)"
        + (", [lean_manifest.json](lean_manifest.json)" if lean.get("manifest") else "")
        + (", [benchmarks.json](benchmarks.json)" if bench.get("rows") else "")
        + ". Regenerate with `pyverify report` (or `tox -e report`).",
        "",
    ]
    lines += _theorem_section(data, repo_rel)
    lines += _lean_section(lean)
    lines += _tests_section(tests)
    lines += _crosscheck_section(data["crosscheck"])
    lines += _diagnostics_section(data["diagnostics"], data.get("model_diagnostics") or {})
    lines += bench_section(bench)
    return "\n".join(lines).rstrip() + "\n"
