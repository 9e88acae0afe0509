"""The same calls are seen on every backend: every collective function of
``distributed_c10d`` that another torch.distributed module imported by name, and every op of
the functional-collective namespaces that communicates, is guarded while the interception is
installed -- found by looking, never listed by hand, so a module or an op torch adds later
fails here until it is covered. One program gives the same calls on inproc and gloo."""

import importlib
import inspect
import pkgutil
import sys
import types
import warnings

import pytest
import torch
import torch.distributed as tdist
import torch.distributed.distributed_c10d as c10d

from trtsim.intercept.torch import by_name, funcol, shim
from tests import torchlib_programs as P
from tests.torchlib_checks import WORLD, launch

NOT_COLLECTIVES = ("get_", "new_", "destroy_", "is_", "init_", "split_group", "shrink_group")


def c10d_collectives() -> dict[int, str]:
    """id -> name of every public function of distributed_c10d that communicates over a
    group: it takes a ``group`` or a list of point-to-point ops, and creates or asks nothing."""
    out = {}
    for name, fn in vars(c10d).items():
        if name.startswith("_") or not inspect.isfunction(fn) or name.startswith(NOT_COLLECTIVES):
            continue
        params = inspect.signature(fn).parameters
        if "group" in params or "p2p_op_list" in params:
            out[id(fn)] = name
    return out


def torch_distributed_modules() -> list[types.ModuleType]:
    """Every importable module of torch.distributed, imported."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(tdist.__path__, "torch.distributed."):
            try:
                importlib.import_module(info.name)
            except Exception:  # noqa: BLE001 - optional dependencies this host lacks
                pass
    return [m for n, m in sorted(sys.modules.items())
            if m is not None and (n == "torch.distributed" or n.startswith("torch.distributed."))
            and n not in by_name.KEEP]


def bindings(modules, collectives: dict[int, str]) -> list[tuple[str, str, str]]:
    """(module, global, c10d function) of every global that holds a real c10d collective."""
    return [(m.__name__, k, collectives[id(v)]) for m in modules for k, v in vars(m).items()
            if id(v) in collectives and getattr(v, "__module__", "") == c10d.__name__]


@pytest.fixture(scope="module")
def modules():
    return torch_distributed_modules()


def test_every_collective_imported_by_name_is_guarded(modules):
    collectives = c10d_collectives()
    found = bindings(modules, collectives)
    assert ("torch.distributed.tensor._collective_utils", "scatter", "scatter") in found
    with shim.installed():
        left = bindings(modules, collectives)
    assert left == [], f"imported by name and unguarded: {left}"
    assert bindings(modules, collectives) == found          # the real functions come back


def test_a_module_that_imports_a_collective_by_name_is_caught(modules, monkeypatch):
    probe = types.ModuleType("torch.distributed._probe_by_name")
    exec("from torch.distributed.distributed_c10d import all_reduce, broadcast", probe.__dict__)
    monkeypatch.setitem(sys.modules, probe.__name__, probe)
    collectives = c10d_collectives()
    with shim.installed():                 # covered: the install finds the new module too
        assert bindings([probe], collectives) == []
    monkeypatch.setattr(by_name, "install", lambda swaps: (None, []))
    monkeypatch.setattr(by_name, "uninstall", lambda held: None)
    with shim.installed():                 # an install that misses it: the check says so
        left = bindings(modules + [probe], collectives)
    assert {(probe.__name__, "all_reduce", "all_reduce"),
            (probe.__name__, "broadcast", "broadcast")} <= set(left), left


def test_a_module_imported_during_the_install_is_covered(tmp_path, monkeypatch):
    (tmp_path / "_probe_late.py").write_text(
        "from torch.distributed.distributed_c10d import all_gather_into_tensor\n")
    monkeypatch.setattr(tdist, "__path__", [*tdist.__path__, str(tmp_path)])
    collectives = c10d_collectives()
    with shim.installed():
        late = importlib.import_module("torch.distributed._probe_late")
        assert bindings([late], collectives) == []
    sys.modules.pop("torch.distributed._probe_late", None)


def communicating_ops() -> list[tuple[str, str]]:
    """Every op of the functional-collective namespaces that takes a group."""
    import torch.distributed._functional_collectives  # noqa: F401 - registers the ops
    out = []
    for qualified in torch._C._dispatch_get_all_op_names():
        ns, _, name = qualified.partition("::")
        if not ns.startswith("_c10d_functional"):
            continue
        packet = getattr(getattr(torch.ops, ns), name)
        schemas = [getattr(packet, o)._schema for o in packet.overloads()]
        if any(a.name == "group_name" for s in schemas for a in s.arguments):
            out.append((ns, name))
    return sorted(out)


def test_every_functional_op_that_communicates_is_guarded():
    ops = communicating_ops()
    assert ("_c10d_functional", "all_reduce") in ops and len(ops) >= 15, ops
    with shim.installed():
        left = [(ns, name) for ns, name in ops
                if not isinstance(getattr(getattr(torch.ops, ns), name), funcol.GuardedOp)]
    assert left == [], f"functional ops not guarded: {left}"
    assert not isinstance(torch.ops._c10d_functional.all_reduce, funcol.GuardedOp)


@pytest.mark.slow
def test_one_program_makes_the_same_calls_on_inproc_and_gloo():
    args = ("dtensor_tp", (2, 2), None)
    inproc, gloo = (launch(P.with_census, b, *args) for b in ("inproc", "gloo"))
    for r in range(WORLD):
        assert inproc[r]["census"] == gloo[r]["census"], (r, inproc[r]["census"],
                                                         gloo[r]["census"])
