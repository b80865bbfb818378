"""Building and auditing the Lean package.

With the embedded WebAssembly toolchain the sources are staged under the
toolchain folder (Lean there sees only ``/tmp`` and ``/home``), each module is
compiled with ``lean --json -o`` in dependency order, independent modules in
parallel, and an object file is reused while the content key of the module
and of everything it imports is unchanged. With a native toolchain,
``lake build`` does the work. Either way the audit applies: no errors, no
``sorry`` warning, no forbidden word in the sources; natively also
``#print axioms`` for every theorem.
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path

from pyverify.lean.audit import (
    Finding,
    compare_axioms,
    judge_diagnostics,
    parse_print_axioms,
    scan_lakefile,
    scan_source,
)
from pyverify.lean.kernel_audit import ModuleAudit, audit_package, load_axioms, save_axioms
from pyverify.lean.messages import Diagnostic, parse_json_output
from pyverify.lean.project import (
    Module,
    critical_path_order,
    load_package,
    local_imports,
    module_keys,
    topo_order,
)
from pyverify.lean.sources import parse_theorems
from pyverify.lean.toolchain import NativeToolchain, Toolchain, WasmToolchain, check_visible
from pyverify.output import Progress

OUTPUT_SUFFIXES = (".olean", ".olean.private", ".olean.server", ".ir", ".key")


@dataclass
class ModuleResult:
    """What happened to one module."""

    name: str
    rel: str
    status: str  # "built" | "cached" | "failed" | "skipped"
    seconds: float = 0.0
    diagnostics: list[Diagnostic] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


@dataclass
class BuildResult:
    """The outcome of a build and its audit."""

    toolchain: str
    modules: list[ModuleResult]
    seconds: float
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every module built and the audit found nothing."""
        return not self.findings and all(m.status in ("built", "cached") for m in self.modules)

    def all_findings(self) -> list[Finding]:
        """Every finding, module by module, then package-wide ones."""
        return [f for m in self.modules for f in m.findings] + self.findings


def stage_dir(toolchain: WasmToolchain, project: Path) -> Path:
    """The staging folder of ``project`` inside the toolchain folder."""
    return toolchain.cache_dir(project)


def sync_sources(modules: dict[str, Module], src: Path) -> None:
    """Make ``src`` hold exactly the package's ``.lean`` files (rewriting only changed ones)."""
    wanted = {m.rel: m.source for m in modules.values()}
    if src.exists():
        for path in src.rglob("*.lean"):
            rel = path.relative_to(src).as_posix()
            if rel not in wanted and not rel.startswith("PyverifyGen"):
                path.unlink()
    for rel, text in wanted.items():
        path = src / rel
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def _remove_outputs(build: Path, rel: str) -> None:
    stem = build / rel[: -len(".lean")]
    for suffix in OUTPUT_SUFFIXES:
        Path(str(stem) + suffix).unlink(missing_ok=True)


def _prune_outputs(build: Path, modules: dict[str, Module]) -> None:
    """Delete object files of modules that no longer exist."""
    keep = {m.rel[: -len(".lean")] for m in modules.values()}
    if not build.exists():
        return
    for path in build.rglob("*.olean"):
        stem = path.relative_to(build).as_posix()[: -len(".olean")]
        if stem not in keep:
            _remove_outputs(build, stem + ".lean")


def _compile(
    tc: Toolchain, mod: Module, src: Path, build: Path, key: str
) -> tuple[list[Diagnostic], list[Finding], float]:
    stem = build / mod.rel[: -len(".lean")]
    stem.parent.mkdir(parents=True, exist_ok=True)
    _remove_outputs(build, mod.rel)
    start = time.monotonic()
    run = tc.run_lean(["--json", "-o", f"{stem}.olean", mod.rel], cwd=src, lean_path=[build])
    seconds = time.monotonic() - start
    diagnostics, rest = parse_json_output(run.output)
    findings = judge_diagnostics(diagnostics)
    if run.returncode != 0 and not findings:
        tail = " | ".join(rest[-3:]) or "no message"
        findings.append(Finding(mod.rel, 1, 0, f"lean exited with {run.returncode}: {tail}"))
    if not Path(f"{stem}.olean").exists() and not findings:
        findings.append(Finding(mod.rel, 1, 0, "lean wrote no .olean"))
    if not findings:
        Path(f"{stem}.key").write_text(key + "\n")
    # A failed module keeps its outputs (without a key, so it is rebuilt next time):
    # the modules importing it are still compiled and audited, and name their own faults.
    return diagnostics, findings, seconds


def _display(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix else rel


def _build_per_module(
    project: Path,
    tc: WasmToolchain,
    modules: dict[str, Module],
    order: list[str],
    jobs: int | None,
    say: Progress,
    t0: float,
) -> BuildResult:
    """Compile module by module with the WebAssembly toolchain; see the module docstring."""
    keys = module_keys(modules, salt=tc.version())
    stage = stage_dir(tc, project)
    check_visible(stage, "staging folder")
    src, build = stage / "src", stage / "build"
    build.mkdir(parents=True, exist_ok=True)
    sync_sources(modules, src)
    _prune_outputs(build, modules)
    prefix = os.path.relpath(project, Path.cwd()) if project.is_absolute() else str(project)
    prefix = "" if prefix == "." else prefix

    # Forbidden words fail a module, but it is still compiled so that Lean's own
    # diagnostics (errors, the `sorry` warning) are reported beside the audit's.
    scans = {
        name: scan_source(_display(prefix, modules[name].rel), modules[name].source)
        for name in order
    }
    results: dict[str, ModuleResult] = {}
    for name in order:
        mod = modules[name]
        if scans[name]:
            continue
        key_file = build / (mod.rel[: -len(".lean")] + ".key")
        olean = build / (mod.rel[: -len(".lean")] + ".olean")
        if olean.exists() and key_file.exists() and key_file.read_text().strip() == keys[name]:
            results[name] = ModuleResult(name, mod.rel, "cached")

    todo = [n for n in order if n not in results]
    jobs = max(1, min(jobs or tc.max_jobs(), len(todo) or 1))
    if todo:
        say(f"compiling {len(todo)} of {len(order)} modules, {jobs} at a time ({tc.version()})")
    else:
        say(f"all {len(order)} modules up to date")
    done_count = len(order) - len(todo)
    running: dict[Future[tuple[list[Diagnostic], list[Finding], float]], str] = {}
    todo_set = set(todo)
    # longest remaining chain first: the two ends of the build are one module each
    pending = [n for n in critical_path_order(modules) if n in todo_set]

    def has_olean(name: str) -> bool:
        return (build / (modules[name].rel[: -len(".lean")] + ".olean")).exists()

    def blocked(name: str) -> str | None:
        for dep in local_imports(modules[name], modules):
            r = results.get(dep)
            if r is not None and (r.status == "skipped" or not has_olean(dep)):
                return dep
        return None

    def ready(name: str) -> bool:
        return all(dep in results for dep in local_imports(modules[name], modules))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        while pending or running:
            for name in list(pending):
                dep = blocked(name)
                if dep is not None:
                    pending.remove(name)
                    done_count += 1
                    reason = f"not built: it imports {dep}, which failed"
                    results[name] = ModuleResult(name, modules[name].rel, "skipped")
                    say(f"[{done_count}/{len(order)}] {name}: skipped ({reason})")
                elif ready(name) and len(running) < jobs:
                    pending.remove(name)
                    mod = modules[name]
                    say(f"        {name}: compiling ...")
                    running[pool.submit(_compile, tc, mod, src, build, keys[name])] = name
            if not running:
                continue
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in finished:
                name = running.pop(fut)
                mod = modules[name]
                diagnostics, findings, seconds = fut.result()
                diagnostics = [replace(d, file=_display(prefix, d.file)) for d in diagnostics]
                findings = scans[name] + [
                    Finding(_display(prefix, f.file), f.line, f.col, f.reason) for f in findings
                ]
                if findings:
                    Path(build / (mod.rel[: -len(".lean")] + ".key")).unlink(missing_ok=True)
                status = "failed" if findings else "built"
                results[name] = ModuleResult(name, mod.rel, status, seconds, diagnostics, findings)
                done_count += 1
                say(f"[{done_count}/{len(order)}] {name}: {status} in {seconds:.1f} s")
                for d in diagnostics:
                    if d.severity != "info":
                        say("    " + d.format().replace("\n", "\n    "))
    result = BuildResult(
        toolchain=tc.version(),
        modules=[results[n] for n in order],
        seconds=time.monotonic() - t0,
    )
    files = {
        n: _display(prefix, modules[n].rel)
        for n in order
        if results[n].status != "skipped" and has_olean(n)
    }
    _kernel_audit(result, tc, project, files, keys, say)
    result.seconds = time.monotonic() - t0
    return result


_LAKE_MSG = re.compile(r"^(error|warning|info): (.+?\.lean):(\d+):(\d+): (.*)$")


def parse_lake_output(text: str) -> list[Diagnostic]:
    """Parse ``lake build`` output into diagnostics (continuation lines joined)."""
    diagnostics: list[Diagnostic] = []
    for line in text.splitlines():
        m = _LAKE_MSG.match(line.strip())
        if m:
            sev, file, ln, col, msg = m.groups()
            diagnostics.append(Diagnostic(file.removeprefix("./"), int(ln), int(col), sev, msg))
    return diagnostics


def _build_with_lake(
    project: Path,
    tc: NativeToolchain,
    lib: str,
    modules: dict[str, Module],
    order: list[str],
    say: Progress,
    t0: float,
) -> BuildResult:
    """Build with ``lake build``; audit sources, the compiled constants and ``#print axioms``."""
    results = []
    for name in order:
        mod = modules[name]
        results.append(
            ModuleResult(name, mod.rel, "built", findings=scan_source(mod.rel, mod.source))
        )
    say(f"lake build ({tc.version()}) ...")
    run = tc.lake_build(project)
    diagnostics = parse_lake_output(run.output)
    findings = judge_diagnostics(diagnostics)
    for d in diagnostics:
        say("    " + d.format())
    if run.returncode != 0 and not findings:
        tail = " | ".join(run.output.strip().splitlines()[-3:])
        findings.append(Finding("lakefile.toml", 1, 0, f"lake build failed: {tail}"))
    result = BuildResult(tc.version(), results, time.monotonic() - t0, findings)
    if run.returncode == 0:
        keys = module_keys(modules, salt=tc.version())
        audits = _kernel_audit(result, tc, project, {n: modules[n].rel for n in order}, keys, say)
        names = [t.name for t in parse_theorems(modules)]
        text = f"import {lib}\n" + "".join(f"#print axioms {n}\n" for n in names)
        say(f"#print axioms on {len(names)} theorems ...")
        printed = parse_print_axioms(tc.run_generated(project, "PyverifyGenAxioms", text).output)
        reader = {t.name: t for a in audits or [] for t in a.theorems.values()}
        for problem in compare_axioms(names, printed, reader):
            findings.append(Finding("PyverifyGenAxioms.lean", 1, 0, problem))
    for r in results:
        if any(f.file == r.rel for f in findings) or r.findings:
            r.status = "failed"
    result.seconds = time.monotonic() - t0
    return result


def _config_refused(
    project: Path, modules: dict[str, Module], order: list[str], tc: Toolchain, t0: float
) -> BuildResult | None:
    """A failed result, without compiling, when ``lakefile.toml`` changes how Lean runs."""
    findings = scan_lakefile(project)
    if not findings:
        return None
    mods = [ModuleResult(n, modules[n].rel, "skipped") for n in order]
    return BuildResult(tc.version(), mods, time.monotonic() - t0, findings)


def _kernel_audit(
    result: BuildResult,
    tc: Toolchain,
    project: Path,
    files: dict[str, str],
    keys: dict[str, str],
    say: Progress,
) -> list[ModuleAudit] | None:
    """Read the compiled modules in ``files`` and add the audit's findings to ``result``.

    A passed audit is cached under the package's content keys (with every
    theorem's axioms, for the manifest), so a no-op build reads no ``.olean``.
    Returns the audits, or ``None`` when the cached verdict was used.
    """
    cache = tc.cache_dir(project)
    everything_cached = all(m.status == "cached" for m in result.modules)
    if everything_cached and load_axioms(cache, keys) is not None:
        return None
    start = time.monotonic()
    audits = audit_package(tc.object_dir(project), tc.library_dirs(), files)
    by_name = {m.name: m for m in result.modules}
    for audit in audits:
        if audit.findings:
            mod = by_name[audit.module]
            mod.findings.extend(audit.findings)
            mod.status = "failed"
            (tc.object_dir(project) / (mod.rel[: -len(".lean")] + ".key")).unlink(missing_ok=True)
    count = sum(len(a.theorems) for a in audits)
    say(
        f"kernel audit: {len(audits)} modules, {count} theorems in {time.monotonic() - start:.1f} s"
    )
    if result.ok:
        save_axioms(cache, keys, audits)
    return audits


def build(
    project: Path,
    tc: Toolchain,
    jobs: int | None = None,
    progress: Progress | None = None,
    lib: str = "Pldr",
) -> BuildResult:
    """Build and audit ``project`` with whichever toolchain ``tc`` is."""
    t0 = time.monotonic()
    say = progress or (lambda _msg: None)
    modules = load_package(project, lib)
    order = topo_order(modules)
    refused = _config_refused(project, modules, order, tc, t0)
    if refused is not None:
        return refused
    if tc.builds_per_module:
        return _build_per_module(project, tc, modules, order, jobs, say, t0)  # type: ignore[arg-type]
    return _build_with_lake(project, tc, lib, modules, order, say, t0)  # type: ignore[arg-type]


def clean(project: Path, tc: Toolchain) -> None:
    """Forget every cached object file of ``project``."""
    tc.clean(project)
