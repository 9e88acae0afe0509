"""A stand-in ``mpi4py`` inside launched ranks: ``from mpi4py import MPI`` gives trtsim's
communicators, on the launch's backend, guarded; no MPI library is needed.

Installed for the length of a launch in ``sys.modules`` (``mpi4py``, ``mpi4py.MPI``,
``mpi4py.util``, ``mpi4py.util.pkl5``), so it wins over a real mpi4py inside the ranks: on the
process backends the ranks import the rank program after the install; on inproc, a module
that bound ``MPI`` before the launch keeps what it bound.

Covered: ``COMM_WORLD``, ``COMM_SELF``, ``COMM_NULL``; ``Split``/``Split_type``/``Dup``/
``Create``/``Create_group``; the object collectives, the numpy buffer collectives ``Bcast``,
``Allgather``, ``Allreduce``, ``Reduce``, ``Gather``, ``Barrier``; tagged ``send``/``recv``/
``isend``/``irecv``/``sendrecv`` and ``Send``/``Recv``/``Isend``/``Irecv`` with
``Request.wait``/``test``/``waitall``; ``Status``; the ops ``SUM``, ``PROD``, ``MAX``, ``MIN``,
``BAND``, ``BOR``, ``BXOR``; ``pkl5.Intracomm``. Not covered (each raises NotImplementedError
naming itself): one-sided communication (``Win``), MPI-IO (``File``), dynamic processes
(``Comm.Spawn``, ``Open_port``), intercommunicators and topologies, persistent and matched
messages, receives from ``ANY_SOURCE`` or with ``ANY_TAG``.
"""

from __future__ import annotations

import contextlib
import sys
import time
import types

from . import mpi_comm
from .comms import Comm, rank_api
from .mpi_run import MPIRank

NOT_COVERED = {"Win": "one-sided communication", "File": "MPI-IO",
               "Open_port": "dynamic processes", "Lookup_name": "dynamic processes",
               "Intercomm": "intercommunicators", "Cartcomm": "topologies",
               "Graphcomm": "topologies", "Distgraphcomm": "topologies",
               "Prequest": "persistent requests", "Message": "matched messages",
               "Session": "sessions"}

__all__ = ["MPIRank", "installed", "standin_modules"]


class Op:
    """A reduce op (``MPI.SUM``): its name decides, and it reduces two values when called."""

    def __init__(self, name: str, fn):
        self.name, self._fn = name, fn

    def __call__(self, a, b):
        return self._fn(a, b)

    def __repr__(self) -> str:
        return f"MPI.{self.name}"


class _WorldComm(mpi_comm.Intracomm):
    """COMM_WORLD: every rank of the launch, resolved at call time."""

    def __init__(self):
        super().__init__(Comm("mpi:world", ()), "MPI_COMM_WORLD")

    @property
    def _comm(self):
        return Comm("mpi:world", rank_api("MPI.COMM_WORLD").world)

    @_comm.setter
    def _comm(self, value):
        pass


class _SelfComm(mpi_comm.Intracomm):
    """COMM_SELF: the calling rank alone."""

    def __init__(self):
        super().__init__(Comm("mpi:self", ()), "MPI_COMM_SELF")

    @property
    def _comm(self):
        me = rank_api("MPI.COMM_SELF").rank
        return Comm(f"mpi:self{me}", (me,))

    @_comm.setter
    def _comm(self, value):
        pass


def _not_covered(name: str, why: str):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"MPI.{name} ({why}) is not covered by trtsim's MPI stand-in")
    return refuse


def standin_modules() -> dict[str, types.ModuleType]:
    """Fresh stand-in modules by name (what ``installed`` puts in sys.modules)."""
    import operator

    mpi = types.ModuleType("mpi4py.MPI", "trtsim's stand-in for mpi4py.MPI")
    ops = {"SUM": operator.add, "PROD": operator.mul, "MAX": max, "MIN": min,
           "BAND": operator.and_, "BOR": operator.or_, "BXOR": operator.xor}
    for name, fn in ops.items():
        setattr(mpi, name, Op(name, fn))
    for name in ("ANY_SOURCE", "ANY_TAG", "PROC_NULL", "UNDEFINED", "IN_PLACE", "COMM_NULL",
                 "Intracomm", "Request", "Status", "Group"):
        setattr(mpi, name, getattr(mpi_comm, name))
    mpi.Comm = mpi_comm.Intracomm
    mpi.COMM_WORLD, mpi.COMM_SELF = _WorldComm(), _SelfComm()
    mpi.COMM_TYPE_SHARED, mpi.INFO_NULL, mpi.REQUEST_NULL = 9, None, None
    mpi.THREAD_SINGLE, mpi.THREAD_FUNNELED, mpi.THREAD_SERIALIZED, mpi.THREAD_MULTIPLE = 0, 1, 2, 3
    mpi.Exception = RuntimeError
    mpi.Init = mpi.Finalize = lambda *a, **k: None
    mpi.Init_thread = lambda *a, **k: mpi.THREAD_MULTIPLE
    mpi.Query_thread = lambda: mpi.THREAD_MULTIPLE
    mpi.Is_initialized, mpi.Is_finalized = (lambda: True), (lambda: False)
    mpi.Wtime = time.perf_counter
    mpi.Get_processor_name = lambda: "trtsim"
    mpi.Get_version = lambda: (3, 1)
    mpi.get_vendor = lambda: ("trtsim", (0, 1, 0))
    for name, why in NOT_COVERED.items():
        setattr(mpi, name, _not_covered(name, why))
    pkl5 = types.ModuleType("mpi4py.util.pkl5", "trtsim's stand-in for mpi4py.util.pkl5")
    pkl5.Intracomm = pkl5.Comm = lambda comm=None: comm if comm is not None else mpi.COMM_WORLD
    pkl5.Request = mpi_comm.Request
    util = types.ModuleType("mpi4py.util")
    util.pkl5 = pkl5
    root = types.ModuleType("mpi4py", "trtsim's stand-in for mpi4py")
    root.MPI, root.util, root.__path__ = mpi, util, []
    root.rc = types.SimpleNamespace(initialize=True, threads=True, thread_level="multiple",
                                    finalize=None, recv_mprobe=False)
    root.get_config = lambda: {}
    return {"mpi4py": root, "mpi4py.MPI": mpi, "mpi4py.util": util, "mpi4py.util.pkl5": pkl5}


@contextlib.contextmanager
def installed():
    """The stand-in in sys.modules inside the block; whatever was there before, after."""
    modules = standin_modules()
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield modules["mpi4py.MPI"]
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
