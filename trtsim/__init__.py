"""trtsim: launch every rank of a disaggregated TP x PP x ADP deployment, run the real control
plane with real collectives, and check that every member of a group enters the same collective,
in the same order, for the same purpose."""

from .comm import (CallRecord, CollectiveDeadlock, CollectiveError, CollectiveMismatch,
                   CollectiveTimeout, Distributed, Peer, RankFailed)
from .comm.origin import collective_wrapper
from .comm.reduce_op import ReduceOp
from .launch import LaunchResults, launch
from .layout.mapping import Mapping
from .layout.topology import Deployment, InstanceSpec, topologies, topology

__all__ = ["Mapping", "Deployment", "InstanceSpec", "topologies", "topology", "Distributed",
           "Peer", "CallRecord", "ReduceOp", "launch", "LaunchResults", "collective_wrapper",
           "CollectiveError", "CollectiveMismatch", "CollectiveDeadlock", "CollectiveTimeout",
           "RankFailed", "run", "explore"]
__version__ = "0.1.0"


def __getattr__(name):
    # Heavy families load on first use: `trtsim.kernels.mtp_sample_and_accept(...)` works after
    # a plain `import trtsim`, without paying numba's import on every CLI start.
    import importlib
    if name in ("kernels", "spec"):
        return importlib.import_module(f".{name}", __name__)
    if name == "strategies":
        return importlib.import_module(".app.strategies", __name__)
    if name == "run":
        return importlib.import_module(".jobs.run", __name__).run
    if name == "explore":
        return importlib.import_module(".app.explore", __name__).explore
    raise AttributeError(f"module 'trtsim' has no attribute {name!r}")
