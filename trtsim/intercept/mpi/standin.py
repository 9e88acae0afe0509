"""A stand-in ``mpi4py`` inside launched ranks: ``from mpi4py import MPI`` gives trtsim's
communicators, on the launch's backend, guarded; no MPI library is needed.

Installed for the length of a launch in ``sys.modules`` (``mpi4py``, ``mpi4py.MPI`` and
every other public module of mpi4py: ``modules``), so it wins over a real mpi4py inside
the ranks: on the process backends the ranks import the rank program after the install; on
inproc, a module that bound ``MPI`` before the launch keeps what it bound. Under mpirun
(``python -m trtsim.mpi``) the same module fronts the real library: each call is guarded,
then runs as the real mpi4py call. The install is counted (``scoped_install``): launches in
several threads share it, and the last one out puts back what was there. Outside any rank
the installed modules are the real mpi4py's (each name read from them is the real module's,
imported then if it was not; where mpi4py is not installed, the import's ImportError), as
torch.distributed's stand-ins call the real functions there. A module first imported during
a launch that bound a stand-in (``from mpi4py import MPI`` run inside a rank) holds the real
mpi4py's object once the last launch ends, or loses the name where mpi4py is not installed.

Covered: ``COMM_WORLD``, ``COMM_SELF``, ``COMM_NULL``; ``Split``/``Split_type``/``Dup``/
``Create``/``Create_group``/``Free``; the object collectives; the buffer collectives
``Bcast``, ``Gather(v)``, ``Scatter(v)``, ``Allgather(v)``, ``Alltoall(v)``, ``Reduce``,
``Allreduce``, ``Reduce_scatter(_block)``, ``Barrier`` over buffer specs of numpy arrays,
bytes, bytearrays and memoryviews with the predefined datatypes (``datatypes``); tagged
``send``/``recv``/``isend``/``irecv``/``sendrecv`` and ``Send``/``Recv``/``Isend``/``Irecv``;
``Probe``/``Iprobe``/``probe``/``iprobe``; ``Request`` (``wait``, ``test``, ``waitall``,
``testall``) and ``Status`` (source, tag, count); the ops ``SUM``, ``PROD``, ``MAX``, ``MIN``,
``BAND``, ``BOR``, ``BXOR``; ``pkl5.Intracomm``. Every other name of mpi4py -- on a module,
a class or an instance -- raises NotImplementedError naming itself when used (``names``),
among them ``mpi4py.futures``' pools, one-sided communication (``Win``), MPI-IO (``File``),
dynamic processes, intercommunicators and topologies, persistent and matched messages, and
receives or probes from ``ANY_SOURCE`` or ``ANY_TAG``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
import time
import types
from importlib import _bootstrap
from typing import Iterator

from ...comm.current import current
from ...comm.scoped_install import NO_ORIGINAL, Originals, holding, scoped

from . import communicator, datatypes as mpi_datatypes, requests as mpi_requests
from ..rank_api import Comm, rank_api
from .modules import module, package_modules
from .run import MPIRank

__all__ = ["MPIRank", "installed", "standin_modules"]


class _WorldComm(communicator.Intracomm):
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


class _SelfComm(communicator.Intracomm):
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


def standin_modules() -> dict[str, types.ModuleType]:
    """Fresh stand-in modules by name: what ``installed`` puts in sys.modules (there they
    answer outside a rank with the real mpi4py's names; these answer with their own)."""
    mpi = module("mpi4py.MPI", "trtsim's stand-in for mpi4py.MPI")
    for table in (mpi_datatypes.DATATYPES, mpi_datatypes.OPS):
        for attr, value in table.items():
            setattr(mpi, attr, value)
    for name in ("IN_PLACE", "BOTTOM", "Datatype", "Op", "Exception", "ERR_BUFFER",
                 "ERR_COUNT", "ERR_TYPE", "ERR_COMM", "ERR_TRUNCATE", "ERR_OTHER"):
        setattr(mpi, name, getattr(mpi_datatypes, name))
    for name in ("ANY_SOURCE", "ANY_TAG", "PROC_NULL", "UNDEFINED", "Request", "Status"):
        setattr(mpi, name, getattr(mpi_requests, name))
    for name in ("COMM_NULL", "Intracomm", "Group"):
        setattr(mpi, name, getattr(communicator, name))
    mpi.Comm = communicator.Intracomm
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
    return package_modules(mpi)


KEY = "mpi4py"                    # the install's key in ``scoped_install``

# importlib's lock of one module name, which an import takes when the name is not in
# sys.modules and then looks there again (every CPython this package supports has it)
_module_lock = _bootstrap._ModuleLockManager  # type: ignore[attr-defined]  # noqa: SLF001


class _Standin(types.ModuleType):
    """A stand-in module as ``sys.modules`` holds it during a launch: inside a rank, its own
    names; outside any rank (another thread, code that kept it after the launch), the real
    module's -- or, where mpi4py is not installed, the ImportError of its import. A name
    mpi4py lacks is an AttributeError everywhere, and imports nothing (``pickle`` and others
    look names up in every module of sys.modules)."""

    def __getattribute__(self, attr: str):
        own = super().__getattribute__(attr)
        if attr.startswith("__") or current() is not None:
            return own
        return getattr(_real(super().__getattribute__("__name__")), attr)


class _Install:
    """The install: the stand-ins, the modules they replaced, and the real modules imported
    meanwhile for code outside the ranks."""

    def __init__(self) -> None:
        self.standins = standin_modules()
        for mod in self.standins.values():
            mod.__class__ = _Standin
        self.saved = {name: sys.modules.get(name) for name in self.standins}
        self.real: dict[str, types.ModuleType] = {}

    def original(self, name: str) -> types.ModuleType | None:
        """The real module ``name`` as far as it was imported: before the install or since."""
        return self.saved[name] or self.real.get(name)

    def real_module(self, name: str) -> types.ModuleType:
        """The real module ``name``, imported now if it was not (call it holding the patches'
        lock: the install stays meanwhile). The import runs with the real modules (or none)
        in the stand-ins' places, holding the import system's locks of those names: an
        import of one of them in another thread meanwhile waits, then finds the stand-in."""
        found = self.original(name)
        if found is not None:
            return found
        with contextlib.ExitStack() as locks:
            for each in self.standins:
                locks.enter_context(_module_lock(each))
            self.place(self.original)
            try:
                importlib.import_module(name)
            finally:
                for each in self.standins:
                    got = sys.modules.get(each)
                    if got is not None and got is not self.saved[each]:
                        self.real[each] = got
                self.place(self.standins.get)
        return self.real[name]

    def place(self, source) -> None:
        """``sys.modules`` entries of the stand-ins' names from ``source(name)`` (None: none)."""
        for name in self.standins:
            mod = source(name)
            if mod is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod


def _real(name: str) -> types.ModuleType:
    """The real module for a stand-in used outside any rank: the install's while one is
    held, else the one an import gives (the stand-in outlived its launch)."""
    with holding(KEY) as install:
        if install is not None:
            return install.real_module(name)
        return importlib.import_module(name)


def _install() -> _Install:
    install = _Install()
    install.place(install.standins.get)
    return install


def _uninstall(install: _Install) -> None:
    install.place(install.original)


def _is_standins(value) -> bool:
    """A value of a stand-in module that is trtsim's own (its objects, functions, classes),
    not one it shares with other code (numbers, strings, ``time.perf_counter``)."""
    if isinstance(value, (types.FunctionType, type)):
        return value.__module__.startswith("trtsim.")
    if isinstance(value, (int, float, complex, str, bytes, tuple, frozenset, types.ModuleType,
                          types.BuiltinFunctionType)) or value is None:
        return False
    return type(value).__module__.startswith("trtsim.")


def _originals(install: _Install) -> Originals:
    """id(stand-in) -> (stand-in, its real counterpart): each stand-in module, and each of
    trtsim's own values it holds, for modules imported during the launch that bound one."""
    places: dict[int, list] = {}                # id -> (value, [(module, attr), ...])
    for name, mod in install.standins.items():
        places.setdefault(id(mod), [mod, []])[1].append((name, None))
        for attr, value in vars(mod).items():
            if not attr.startswith("__") and _is_standins(value):
                places.setdefault(id(value), [value, []])[1].append((name, attr))
    return {key: (value, functools.partial(_real_of, tuple(where)))
            for key, (value, where) in places.items()}


def _real_of(where: tuple, bound_as: str):
    """The real mpi4py's object for a stand-in found at ``where`` ((module, attr) pairs; attr
    None: the module itself): the one of the name it was bound under, else mpi4py.MPI's, else
    the first; NO_ORIGINAL where the real mpi4py has none (not installed, or a name it
    lacks)."""
    name, attr = min(where, key=lambda w: (w[1] != bound_as and w[0].rsplit(".", 1)[-1] !=
                                           bound_as, w[0] != "mpi4py.MPI"))
    try:
        mod = importlib.import_module(name)
    except ImportError:
        return NO_ORIGINAL
    return mod if attr is None else getattr(mod, attr, NO_ORIGINAL)


@contextlib.contextmanager
def installed() -> Iterator[types.ModuleType]:
    """The stand-in in sys.modules inside the block; whatever was there before, after the
    last holder leaves (counted: launches in several threads share one install). Yields the
    stand-in ``mpi4py.MPI``. Outside a rank the installed modules answer with the real
    mpi4py's names (``_Standin``); modules imported inside the block that bound a stand-in
    hold the real mpi4py's object after it, or lose the name where mpi4py is missing."""
    with scoped(KEY, _install, _uninstall, _originals) as install:
        yield install.standins["mpi4py.MPI"]
