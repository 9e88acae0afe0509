"""trtsim: launch every rank of a disaggregated TP x PP x ADP deployment, run the real control
plane with real collectives, and check that every member of a group enters the same collective,
in the same order, for the same purpose."""

__all__ = ["Mapping", "Deployment", "InstanceSpec", "topologies", "topology", "Distributed",
           "Peer", "CallRecord", "ReduceOp", "launch", "LaunchResults", "collective_wrapper",
           "CollectiveError", "CollectiveMismatch", "CollectiveDeadlock", "CollectiveTimeout",
           "RankFailed", "run", "explore", "LatentGate"]
__version__ = "0.1.0"

# Every public name loads on first use: `import trtsim` (and so the pytest plugin, which every
# pytest run of the environment loads) costs nothing until a name is touched; the
# communication names pull in torch, the kernels numba.
_HOMES = {
    "Mapping": ".layout.mapping", "Deployment": ".layout.topology",
    "InstanceSpec": ".layout.topology", "topologies": ".layout.topology",
    "topology": ".layout.topology", "Peer": ".layout.places", "Distributed": ".comm",
    "CallRecord": ".calls.records", "CollectiveError": ".calls.errors",
    "CollectiveMismatch": ".calls.errors",
    "CollectiveDeadlock": ".calls.errors", "CollectiveTimeout": ".calls.errors",
    "RankFailed": ".calls.errors",
    "ReduceOp": ".calls.reduce_op", "collective_wrapper": ".comm.origin",
    "launch": ".launching", "LaunchResults": ".launching", "run": ".jobs.run",
    "explore": ".app.explore", "LatentGate": ".comm.latent_gate",
}
_MODULES = {"kernels": ".kernels", "spec": ".spec", "strategies": ".strategies"}


def __getattr__(name):
    import importlib
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name], __name__), name)
    if name in _MODULES:
        return importlib.import_module(_MODULES[name], __name__)
    raise AttributeError(f"module 'trtsim' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOMES) | set(_MODULES))
