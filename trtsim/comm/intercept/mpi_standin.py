"""A stand-in ``mpi4py`` inside launched ranks: ``from mpi4py import MPI`` gives trtsim's
communicators, on the launch's backend, guarded; no MPI library is needed.

Installed for the length of a launch in ``sys.modules`` (``mpi4py``, ``mpi4py.MPI``,
``mpi4py.util``, ``mpi4py.util.pkl5``), so it wins over a real mpi4py inside the ranks: on the
process backends the ranks import the rank program after the install; on inproc, a module
that bound ``MPI`` before the launch keeps what it bound. Under mpirun (``python -m
trtsim.mpi``) the same module fronts the real library: each call is guarded, then runs as the
real mpi4py call.

Covered: ``COMM_WORLD``, ``COMM_SELF``, ``COMM_NULL``; ``Split``/``Split_type``/``Dup``/
``Create``/``Create_group``/``Free``; the object collectives; the buffer collectives
``Bcast``, ``Gather(v)``, ``Scatter(v)``, ``Allgather(v)``, ``Alltoall(v)``, ``Reduce``,
``Allreduce``, ``Reduce_scatter(_block)``, ``Barrier`` over buffer specs of numpy arrays,
bytes, bytearrays and memoryviews with the predefined datatypes (``mpi_datatypes``); tagged
``send``/``recv``/``isend``/``irecv``/``sendrecv`` and ``Send``/``Recv``/``Isend``/``Irecv``;
``Probe``/``Iprobe``/``probe``/``iprobe``; ``Request`` (``wait``, ``test``, ``waitall``,
``testall``) and ``Status`` (source, tag, count); the ops ``SUM``, ``PROD``, ``MAX``, ``MIN``,
``BAND``, ``BOR``, ``BXOR``; ``pkl5.Intracomm``. Every other name of mpi4py raises
NotImplementedError naming itself (``mpi_names``), among them one-sided communication
(``Win``), MPI-IO (``File``), dynamic processes, intercommunicators and topologies,
persistent and matched messages, and receives or probes from ``ANY_SOURCE`` or ``ANY_TAG``.
"""

from __future__ import annotations

import contextlib
import sys
import time
import types
from typing import Any

from . import mpi_comm, mpi_datatypes, mpi_requests
from .comms import Comm, rank_api
from .mpi_names import not_covered
from .mpi_run import MPIRank

__all__ = ["MPIRank", "installed", "standin_modules"]


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

    def _real_comm(self, state: MPIRank):
        return state.real.COMM_WORLD


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

    def _real_comm(self, state: MPIRank):
        return state.real.COMM_SELF


class _RC:
    """``mpi4py.rc``: settable options, callable as ``mpi4py.rc(recv_mprobe=False)``."""

    def __init__(self):
        self.initialize = self.threads = self.finalize = True
        self.thread_level, self.recv_mprobe, self.errors = "multiple", False, "exception"

    def __call__(self, **options) -> None:
        for key, value in options.items():
            setattr(self, key, value)


def _module(name: str, doc: str, owner: str | None = None) -> Any:
    """A module whose missing names are mpi4py's not-covered ones (``owner``'s list); typed
    Any: its attributes are set one by one below, as mpi4py's are made in C."""
    mod: Any = types.ModuleType(name, doc)
    if owner is not None:
        mod.__getattr__ = lambda attr: not_covered(owner, attr)
    return mod


def standin_modules() -> dict[str, types.ModuleType]:
    """Fresh stand-in modules by name (what ``installed`` puts in sys.modules)."""
    mpi = _module("mpi4py.MPI", "trtsim's stand-in for mpi4py.MPI", "MPI")
    for table in (mpi_datatypes.DATATYPES, mpi_datatypes.OPS):
        for attr, value in table.items():
            setattr(mpi, attr, value)
    for name in ("IN_PLACE", "BOTTOM", "Datatype", "Op", "Exception", "ERR_BUFFER",
                 "ERR_COUNT", "ERR_TYPE", "ERR_COMM", "ERR_TRUNCATE", "ERR_OTHER"):
        setattr(mpi, name, getattr(mpi_datatypes, name))
    for name in ("ANY_SOURCE", "ANY_TAG", "PROC_NULL", "UNDEFINED", "Request", "Status"):
        setattr(mpi, name, getattr(mpi_requests, name))
    for name in ("COMM_NULL", "Intracomm", "Group"):
        setattr(mpi, name, getattr(mpi_comm, name))
    mpi.Comm = mpi_comm.Intracomm
    mpi.COMM_WORLD, mpi.COMM_SELF = _WorldComm(), _SelfComm()
    mpi.SUCCESS, mpi.COMM_TYPE_SHARED, mpi.INFO_NULL = 0, 0, None     # Open MPI's values
    mpi.REQUEST_NULL = mpi_requests.Request(None)
    mpi.THREAD_SINGLE, mpi.THREAD_FUNNELED, mpi.THREAD_SERIALIZED, mpi.THREAD_MULTIPLE = 0, 1, 2, 3
    mpi.Init = mpi.Finalize = lambda *a, **k: None
    mpi.Init_thread = lambda *a, **k: mpi.THREAD_MULTIPLE
    mpi.Query_thread = lambda: mpi.THREAD_MULTIPLE
    mpi.Is_thread_main = lambda: True
    mpi.Is_initialized, mpi.Is_finalized = (lambda: True), (lambda: False)
    mpi.Wtime, mpi.Wtick = time.perf_counter, (lambda: 1e-9)
    mpi.Get_processor_name = lambda: "trtsim"
    mpi.Get_version = lambda: (3, 1)
    mpi.Get_library_version = lambda: "trtsim MPI stand-in (mpi4py 4.1.2 API)"
    mpi.get_vendor = lambda: ("trtsim", (0, 1, 0))
    pkl5 = _module("mpi4py.util.pkl5", "trtsim's stand-in for mpi4py.util.pkl5")
    pkl5.Intracomm = pkl5.Comm = lambda comm=None: comm if comm is not None else mpi.COMM_WORLD
    pkl5.Request = mpi_requests.Request
    util = _module("mpi4py.util", "trtsim's stand-in for mpi4py.util")
    util.pkl5, util.__path__ = pkl5, []
    root = _module("mpi4py", "trtsim's stand-in for mpi4py")
    root.MPI, root.util, root.__path__ = mpi, util, []
    root.rc, root.__version__ = _RC(), "4.1.2"
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
