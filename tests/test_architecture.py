"""Imports flow one way between wings: every import inside trtsim (module level and inside
functions) goes to the same wing or to a wing below it. The check reads the sources with
``ast``; nothing is imported."""

import ast
import pathlib

import pytest

import trtsim

ROOT = pathlib.Path(trtsim.__file__).parent

# Wing -> the wings it may import (besides itself). Read top to bottom: faces, composition
# roots, the runtime model, communication, layout. perf is a pure cost model beside them;
# postmortem reads a hang's files with the guard's rules (comm), and a replay is a scenario.
BASE = {"checks", "safe_write"}     # the limits and the one safe writer: leaves
LAYOUT = BASE | {"layout"}
PERF = LAYOUT | {"perf"}
TIMELINE = LAYOUT | {"timeline"}
COMM = TIMELINE | {"comm"}
STATE = COMM | {"state"}
KERNELS = BASE | {"kernels"}
MODEL = KERNELS | {"model"}
SPEC = COMM | MODEL | {"spec"}
DISAGG = STATE | {"disagg"}
EXECUTOR = DISAGG | {"executor"}
RUNTIME = EXECUTOR | SPEC
POSTMORTEM = COMM | {"postmortem"}
SCENARIO = RUNTIME | PERF | POSTMORTEM | {"scenario"}
ROOTS = SCENARIO | {"jobs", "launching"}
STRATEGIES = DISAGG | {"strategies"}          # the public hypothesis strategies
ALLOWED = {
    "checks": BASE, "safe_write": BASE, "layout": LAYOUT, "perf": PERF, "timeline": TIMELINE, "comm": COMM,
    "state": STATE, "kernels": KERNELS, "model": MODEL, "spec": SPEC, "disagg": DISAGG,
    "executor": EXECUTOR, "postmortem": POSTMORTEM, "scenario": SCENARIO,
    "launching": ROOTS - {"jobs"}, "jobs": ROOTS, "strategies": STRATEGIES,
    "app": ROOTS | STRATEGIES | {"app", "lint"},
    "mpi": ROOTS | {"mpi"},              # python -m trtsim.mpi: the mpirun job's face
    "gates": BASE | {"gates"},           # the one gate model (lint and run-time observer)
    "lint": BASE | {"gates", "lint"},    # trtsim lint: the source check
}


def wing_of(module: str) -> str:
    return module.split(".")[1] if "." in module else "__init__"


def modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        yield ".".join(parts), is_pkg, path


def imports_of(name: str, is_pkg: bool, path: pathlib.Path):
    package = name.split(".") if is_pkg else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "trtsim":                         # from trtsim import x: x's wing
                for alias in node.names:
                    if not alias.name.startswith("__"):    # the face's own __version__
                        yield node.lineno, f"trtsim.{alias.name}"
            elif target.startswith("trtsim"):
                yield node.lineno, target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("trtsim"):
                    yield node.lineno, alias.name


def test_the_wing_table_covers_every_wing():
    wings = {wing_of(name) for name, _, _ in modules()} - {"__init__", "__main__"}
    assert wings == set(ALLOWED), wings ^ set(ALLOWED)


def test_imports_flow_one_way():
    upward = []
    for name, is_pkg, path in modules():
        wing = wing_of(name)
        if wing in ("__init__", "__main__"):
            continue                                  # the package's face imports anything
        for line, target in imports_of(name, is_pkg, path):
            if wing_of(target) not in ALLOWED[wing]:
                upward.append(f"{path.relative_to(ROOT.parent)}:{line}: {wing} -> {target}")
    assert not upward, "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path):
    # The checker itself must be able to fail: a layout module importing comm is upward.
    path = tmp_path / "bad.py"
    path.write_text("from ..comm.distributed import Distributed\n")
    found = list(imports_of("trtsim.layout.bad", False, path))
    assert found == [(1, "trtsim.comm.distributed")]
    assert wing_of(found[0][1]) not in ALLOWED["layout"]


@pytest.mark.parametrize("wing", sorted(ALLOWED))
def test_every_wing_says_what_it_owns(wing):
    init = ROOT / wing / "__init__.py"
    if not init.exists():
        init = ROOT / f"{wing}.py"
    doc = ast.get_docstring(ast.parse(init.read_text()))
    assert doc and len(doc) > 40, f"{init} has no note saying what the wing owns"
