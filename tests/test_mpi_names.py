"""Every name of mpi4py's API is there in the stand-in: covered, or refusing with
NotImplementedError that names it -- never an AttributeError, which reads as the program's
own bug. The name lists match the installed mpi4py's when there is one."""

import ast
import importlib.util
import os

import numpy as np
import pytest

import trtsim
from trtsim.comm.intercept import mpi_comm, mpi_datatypes, mpi_requests
from trtsim.comm.intercept.mpi_names import NAMES, NotCovered
from trtsim.comm.intercept.mpi_standin import standin_modules

pytestmark = pytest.mark.timeout(120)


def instances():
    """One stand-in object of each class mpi4py's names belong to."""
    return {"MPI": standin_modules()["mpi4py.MPI"], "Intracomm": mpi_comm.COMM_NULL,
            "Request": mpi_requests.Request(None), "Status": mpi_requests.Status(),
            "Datatype": mpi_datatypes.DATATYPES["INT"], "Op": mpi_datatypes.OPS["SUM"],
            "Group": mpi_comm.Group((0, 1))}


@pytest.mark.parametrize("owner", sorted(NAMES))
def test_no_name_of_mpi4py_is_missing(owner):
    obj = instances()[owner]
    missing = [n for n in sorted(NAMES[owner])
               if not hasattr(type(obj), n) and n not in vars(obj) and
               not isinstance(getattr(obj, n), NotCovered)]
    assert missing == []


def test_a_name_not_covered_refuses_every_use_naming_itself():
    mpi = standin_modules()["mpi4py.MPI"]
    for use, phrase in [(lambda: mpi.Win.Create(None), "MPI.Win (one-sided communication)"),
                        (lambda: mpi.File.Open(None, "f"), "MPI.File (MPI-IO)"),
                        (lambda: mpi.Intercomm(), "MPI.Intercomm (intercommunicators)"),
                        (lambda: mpi.ERR_ARG + 1, "MPI.ERR_ARG"),
                        (lambda: bool(mpi.TAG_UB), "MPI.TAG_UB"),
                        (lambda: mpi_comm.COMM_NULL.Ibcast(np.zeros(1)), "MPI.Intracomm.Ibcast"),
                        (lambda: mpi_requests.Request(None).Waitany([]), "MPI.Request.Waitany"),
                        (lambda: mpi_datatypes.DATATYPES["INT"].Create_vector(2, 1, 2),
                         "MPI.Datatype.Create_vector")]:
        with pytest.raises(NotImplementedError, match="is not covered by trtsim's MPI stand-in") \
                as info:
            use()
        assert phrase in str(info.value)


def test_names_mpi4py_lacks_are_attribute_errors_as_there():
    mpi = standin_modules()["mpi4py.MPI"]
    with pytest.raises(AttributeError, match="has no attribute 'COMM_WRLD'"):
        mpi.COMM_WRLD
    with pytest.raises(AttributeError):
        mpi_comm.COMM_NULL.allgatherr


def test_inside_a_launch_an_uncovered_call_fails_the_rank_naming_it():
    def prog():
        from mpi4py import MPI
        MPI.COMM_WORLD.Ialltoallw(None, None)
    with pytest.raises(trtsim.RankFailed, match="NotImplementedError") as info:
        trtsim.launch(prog, tp=2, intercept=("mpi",))
    assert "MPI.Intracomm.Ialltoallw is not covered" in str(info.value)


def _stub_names() -> dict[str, frozenset] | None:
    """The public names of the installed mpi4py's MPI.pyi, by owner (None: not installed)."""
    spec = importlib.util.find_spec("mpi4py")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "MPI.pyi")
    tree = ast.parse(open(path).read())

    def names(body):
        out = set()
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, ast.AnnAssign):
                out.add(node.target.id)
            elif isinstance(node, ast.Assign):
                out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        return frozenset(n for n in out if not n.startswith("_"))
    classes = {n.name: names(n.body) for n in tree.body if isinstance(n, ast.ClassDef)}
    return {"MPI": names(tree.body), "Intracomm": classes["Comm"] | classes["Intracomm"],
            **{k: classes[k] for k in ("Request", "Status", "Datatype", "Op", "Group")}}


def test_the_name_lists_are_the_installed_mpi4pys():
    stub = _stub_names()
    if stub is None:
        pytest.skip("mpi4py is not installed: nothing to compare the lists with")
    for owner, names in stub.items():
        assert names == NAMES[owner], owner
