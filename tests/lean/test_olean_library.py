"""The ``.olean`` reader on the library's own compiled files (built by the toolchain).

In ``tox`` the ``lean`` environment builds the library first, so the build here
is a no-op; on a fresh machine it is the cold build.
"""

from __future__ import annotations

import re

import pytest

from pyverify.lean.audit import ALLOWED_AXIOMS
from pyverify.lean.build import BuildResult
from pyverify.lean.kernel_audit import Environment, audit_module
from pyverify.lean.project import load_package, strip_comments, topo_order
from pyverify.lean.sources import parse_theorems
from pyverify.lean.toolchain import Toolchain
from pyverify.paths import repo_root

pytestmark = pytest.mark.lean
_THEOREM = re.compile(r"(?<![\w.'])theorem\s")


def test_library_oleans_hold_every_theorem_with_standard_axioms(
    toolchain: Toolchain, library_result: BuildResult
):
    project = repo_root() / "lean"
    result = library_result
    assert result.ok, [f.format() for f in result.all_findings()]
    modules = load_package(project)
    env = Environment(toolchain.object_dir(project), toolchain.library_dirs(), set(modules))
    audits = {n: audit_module(env, n, modules[n].rel) for n in topo_order(modules)}
    kinds = {name: k for a in audits.values() for name, k in a.kinds.items()}
    theorems = {name: t for a in audits.values() for name, t in a.theorems.items()}
    assert all(not a.findings for a in audits.values())

    declared = parse_theorems(modules)
    assert declared, "the library declares theorems"
    for decl in declared:  # every theorem of the manifest is a theorem constant
        assert kinds.get(decl.name) == "theorem", decl.name
        assert set(theorems[decl.name].axioms) <= ALLOWED_AXIOMS, decl.name

    for name, mod in modules.items():  # counts agree with the sources, module by module
        view = env.modules[name]
        written = [
            c.name
            for c in view.constants()
            if c.kind == "theorem" and c.name in view.lines and c.name not in view.projections
        ]
        assert len(written) == len(_THEOREM.findall(strip_comments(mod.source))), name
