"""The stand-in's modules besides ``mpi4py.MPI``: the ``mpi4py`` package and every other
public module of mpi4py 4.1.2 (``mpi4py.util.pkl5``, ``mpi4py.futures``, ``mpi4py.typing``, ...),
so that whatever a program imports from mpi4py imports.

Covered there: ``mpi4py.rc`` (and ``Rc``), ``get_config``, ``__version__``;
``pkl5.Intracomm(comm)`` and ``pkl5.Comm(comm)`` (the communicator itself: the stand-in moves
objects of any size, which is what pkl5 adds), ``pkl5.Request`` and the names pkl5 takes from
``mpi4py.MPI``; in ``mpi4py.futures`` the names it takes from ``concurrent.futures`` (those
very objects). Every other name of them is a ``NotCovered`` (``names``): ``from
mpi4py.futures import MPIPoolExecutor`` works, and using it raises NotImplementedError naming
it, as ``pkl5.Message`` and ``mpi4py.get_include`` do.
"""

from __future__ import annotations

import concurrent.futures
import types
from typing import Any

from . import communicator
from .names import NAMES, not_covered

# What mpi4py.futures takes from concurrent.futures, and pkl5 from mpi4py.MPI.
_FROM_CONCURRENT = ("ALL_COMPLETED", "FIRST_COMPLETED", "FIRST_EXCEPTION", "BrokenExecutor",
                    "CancelledError", "Executor", "Future", "InvalidStateError", "TimeoutError",
                    "as_completed", "wait")
_PKL5_FROM_MPI = ("ANY_SOURCE", "ANY_TAG", "PROC_NULL", "ROOT", "Pickle", "Status", "Request",
                  "pickle")


class Rc:
    """``mpi4py.rc``: settable options, callable as ``mpi4py.rc(recv_mprobe=False)``. The
    stand-in reads none of them: a program may set them as it would for mpi4py."""

    initialize = threads = finalize = fast_reduce = True
    thread_level, recv_mprobe, irecv_bufsz, errors = "multiple", False, 32768, "exception"

    def __init__(self, **options) -> None:
        self(**options)

    def __call__(self, **options) -> None:
        for key, value in options.items():
            if not hasattr(type(self), key) or key.startswith("_"):
                raise TypeError(f"unexpected argument {key!r}")
            setattr(self, key, value)


def module(name: str, doc: str) -> Any:
    """A module whose missing names are mpi4py's not-covered ones (PEP 562); typed Any: its
    attributes are set one by one, as mpi4py's are made in C."""
    mod: Any = types.ModuleType(name, doc)
    mod.__getattr__ = lambda attr: not_covered("MPI" if name == "mpi4py.MPI" else name, attr)
    return mod


def _pkl5_comm(world) -> type:
    """``pkl5.Intracomm``: called, it gives the communicator (COMM_WORLD by default); read
    from the class, its names are the stand-in communicator's."""

    class Intracomm(communicator.Intracomm):
        def __new__(cls, comm=None):
            return comm if comm is not None else world

    return Intracomm


def package_modules(mpi) -> dict[str, types.ModuleType]:
    """The stand-in's ``mpi4py`` and its public modules by name, around ``mpi`` (the stand-in
    ``mpi4py.MPI``), each module an attribute of its package as after an import."""
    tree = {name: module(name, f"trtsim's stand-in for {name}")
            for name in NAMES if name.startswith("mpi4py")}
    tree["mpi4py.MPI"] = mpi
    for name, mod in tree.items():
        package, _, attr = name.rpartition(".")
        if package:
            tree[package].__path__ = []
            setattr(tree[package], attr, mod)
    root, futures, pkl5 = tree["mpi4py"], tree["mpi4py.futures"], tree["mpi4py.util.pkl5"]
    root.Rc, root.rc, root.__version__ = Rc, Rc(), "4.1.2"
    root.get_config = lambda: {}
    for attr in _FROM_CONCURRENT:
        setattr(futures, attr, getattr(concurrent.futures, attr))
    for attr in _PKL5_FROM_MPI:
        setattr(pkl5, attr, getattr(mpi, attr))
    pkl5.Intracomm = pkl5.Comm = _pkl5_comm(mpi.COMM_WORLD)
    return tree
