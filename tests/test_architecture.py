"""The house's rules, read from the sources with ``ast`` (nothing is imported):
- imports flow one way between wings: every import inside trtsim, at module level, under
  ``TYPE_CHECKING`` and inside functions alike, goes to the same wing or to a wing below it;
- no cycle between modules, counting those same imports;
- no private name (``_x``) imported from another wing;
- no function over 80 lines, no wing over 30 % of the package's lines;
- every wing says what it owns."""

from __future__ import annotations

import ast
import pathlib

import pytest

import trtsim

ROOT = pathlib.Path(trtsim.__file__).parent

# Wing -> the wings it may import (besides itself). Read top to bottom: faces, composition
# roots, the runtime model, then the communication stack (backends > intercept > comm > guard
# > calls), layout at the bottom. perf is a pure cost model beside them; postmortem reads a
# hang's files with the guard's rules, and a replay is a scenario.
BASE = {"checks", "safe_write", "user_cache"}   # limits, the one safe writer, the cache: leaves
LAYOUT = BASE | {"layout"}
PERF = LAYOUT | {"perf"}
TIMELINE = LAYOUT | {"timeline"}
CALLS = LAYOUT | {"calls"}                    # the vocabulary: ops, records, errors, formats
GUARD = CALLS | {"guard"}                     # the pure rules
GATES = BASE | {"gates"}                      # the one gate model (lint and run-time observer)
COMM = GUARD | TIMELINE | GATES | {"comm"}    # Distributed, origins, markers, LaunchConfig
INTERCEPT = COMM | {"intercept"}              # torch.distributed and mpi4py stand-ins
BACKENDS = INTERCEPT | {"backends"}           # inproc, spawned processes, torchrun, mpirun
STATE = LAYOUT | {"state"}
KERNELS = BASE | {"kernels"}
MODEL = KERNELS | {"model"}
SPEC = COMM | MODEL | {"spec"}
DISAGG = STATE | COMM | {"disagg"}
EXECUTOR = DISAGG | {"executor"}
RUNTIME = EXECUTOR | SPEC
POSTMORTEM = COMM | {"postmortem"}
SCENARIO = RUNTIME | PERF | POSTMORTEM | {"scenario"}
ROOTS = SCENARIO | BACKENDS | {"jobs", "launching"}
STRATEGIES = DISAGG | {"strategies"}          # the public hypothesis strategies
ALLOWED = {
    "checks": BASE, "safe_write": BASE, "user_cache": BASE, "layout": LAYOUT, "perf": PERF,
    "timeline": TIMELINE,
    "calls": CALLS, "guard": GUARD, "gates": GATES, "comm": COMM, "intercept": INTERCEPT,
    "backends": BACKENDS,
    "state": STATE, "kernels": KERNELS, "model": MODEL, "spec": SPEC, "disagg": DISAGG,
    "executor": EXECUTOR, "postmortem": POSTMORTEM, "scenario": SCENARIO,
    "launching": ROOTS - {"jobs"}, "jobs": ROOTS, "strategies": STRATEGIES,
    "app": ROOTS | STRATEGIES | {"app", "lint"},
    "mpi": ROOTS | {"mpi"},              # python -m trtsim.mpi: the mpirun job's face
    "torchrun": ROOTS | {"torchrun"},    # python -m trtsim.torchrun: the torchrun job's face
    "lint": GATES | {"lint"},            # trtsim lint: the source check
}
MAX_FUNCTION_LINES = 80
MAX_WING_SHARE = 0.30


def wing_of(module: str) -> str:
    return module.split(".")[1] if "." in module else "__init__"


def modules(root: pathlib.Path = ROOT):
    """(dotted name, is a package, path) of every module under ``root``."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        yield ".".join(parts), is_pkg, path


def imports_of(name: str, is_pkg: bool, path: pathlib.Path, top: str = "trtsim"):
    """(line, target, imported names) of every import of ``top``'s modules in one file: every
    node of the tree, so function-level and ``TYPE_CHECKING`` imports count."""
    package = name.split(".") if is_pkg else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = tuple(alias.name for alias in node.names)
            if target == top:                              # from trtsim import x: x's wing
                for alias in names:
                    if not alias.startswith("__"):         # the face's own __version__
                        yield node.lineno, f"{top}.{alias}", ()
            elif target.startswith(top + "."):
                yield node.lineno, target, names
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(top + "."):
                    yield node.lineno, alias.name, ()


def module_graph(root: pathlib.Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules it imports (``from pkg import mod`` is an import of ``mod``)."""
    found = {name: (is_pkg, path) for name, is_pkg, path in modules(root)}
    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, (is_pkg, path) in found.items():
        for _line, target, names in imports_of(name, is_pkg, path, root.name):
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in found]
            for dest in subs or [target]:
                while dest not in found and "." in dest:
                    dest = dest.rsplit(".", 1)[0]
                if dest in found and dest != name:
                    graph[name].add(dest)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def upward_imports(root: pathlib.Path = ROOT, allowed=None) -> list[str]:
    allowed = ALLOWED if allowed is None else allowed
    upward = []
    for name, is_pkg, path in modules(root):
        wing = wing_of(name)
        if wing in ("__init__", "__main__"):
            continue                                  # the package's face imports anything
        for line, target, _names in imports_of(name, is_pkg, path, root.name):
            if wing_of(target) not in allowed[wing]:
                upward.append(f"{path.relative_to(root.parent)}:{line}: {wing} -> {target}")
    return upward


def test_the_wing_table_covers_every_wing():
    wings = {wing_of(name) for name, _, _ in modules()} - {"__init__", "__main__"}
    assert wings == set(ALLOWED), wings ^ set(ALLOWED)


def test_imports_flow_one_way():
    assert not upward_imports(), "\n".join(upward_imports())


def test_no_module_cycle():
    assert cycles(module_graph()) == []


def test_the_checks_see_an_upward_import_under_type_checking_and_a_function_level_cycle(
        tmp_path):
    # A package of its own: layout imports comm under TYPE_CHECKING (upward), and two comm
    # modules import each other, one of them inside a function.
    pkg = tmp_path / "house"
    for wing in ("layout", "comm"):
        (pkg / wing).mkdir(parents=True)
        (pkg / wing / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "layout" / "grid.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from ..comm.a import A\n")
    (pkg / "comm" / "a.py").write_text("from .b import B\nclass A: pass\n")
    (pkg / "comm" / "b.py").write_text("class B:\n    def f(self):\n"
                                       "        from . import a\n        return a\n")
    allowed = {"layout": {"layout"}, "comm": {"comm", "layout"}}
    assert upward_imports(pkg, allowed) == ["house/layout/grid.py:3: layout -> house.comm.a"]
    assert cycles(module_graph(pkg)) == [["house.comm.a", "house.comm.b"]]


def test_no_private_name_crosses_a_wing():
    crossing = []
    for name, is_pkg, path in modules():
        for line, target, names in imports_of(name, is_pkg, path):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and wing_of(target) != wing_of(name):
                crossing.append(f"{path.relative_to(ROOT.parent)}:{line}: {private} from {target}")
    assert not crossing, "\n".join(crossing)


def test_no_function_is_longer_than_a_screenful():
    long = []
    for _name, _, path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} "
                                f"{node.name}: {lines} lines")
    assert not long, "\n".join(long)


def test_no_wing_holds_more_than_its_share_of_the_package():
    lines: dict[str, int] = {}
    for name, _, path in modules():
        lines[wing_of(name)] = lines.get(wing_of(name), 0) + len(path.read_text().splitlines())
    total = sum(lines.values())
    big = {w: f"{n / total:.0%}" for w, n in lines.items() if n > MAX_WING_SHARE * total}
    assert not big, big


@pytest.mark.parametrize("wing", sorted(ALLOWED))
def test_every_wing_says_what_it_owns(wing):
    init = ROOT / wing / "__init__.py"
    if not init.exists():
        init = ROOT / f"{wing}.py"
    doc = ast.get_docstring(ast.parse(init.read_text()))
    assert doc and len(doc) > 40, f"{init} has no note saying what the wing owns"
