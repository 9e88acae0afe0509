"""LaunchConfig: how the ranks of a launch run (backend, guard, seed, timeout, interception,
rank-local modules, call logs), validated on construction, before any rank starts."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from ..checks import MAX_TIMEOUT_S, require_seconds
from ..timeline.clock import ClockModel
from ..guard.policy import GuardPolicy
from .launch_stamp import LaunchStamp
from .markers import resolve as resolve_marker

BACKENDS = ("inproc", "gloo", "nccl", "torchrun")   # torchrun: this process is one rank
INTERCEPTABLE = ("torch", "mpi")                    # the APIs a launch can guard unmodified
GATE_MODES = ("off", "observe", "flip")             # latent gates: none, listed, proved
# Code a flip never rewrites: torch's and trtsim's plumbing (the call's way down, not the
# program's decisions). trtsim's runtime wings (executor, disagg, spec, jobs) are program code.
NOT_GATED = ("torch", "trtsim.calls", "trtsim.guard", "trtsim.comm", "trtsim.intercept",
             "trtsim.backends", "trtsim.gates", "trtsim.launching", "trtsim.app")


def flip_refused(job: str, observe: str = "gates='observe'") -> str:
    """Why ``job`` (one another launcher starts: torchrun, mpirun) has no flip, and what it
    has instead (``observe``: how the caller spells it)."""
    return (f"a flip replays the launch, and {job} runs each rank's program once; {observe} "
            "lists the latent gates")


TORCHRUN_FLIP = f"gates='flip' under torchrun: {flip_refused('a torchrun job')} there"


@dataclass(frozen=True)
class LaunchConfig:
    """How to run the ranks: backend, guard mode, seed of the schedule, timeout in seconds."""

    backend: str = "inproc"
    guard: str = "strict"
    seed: int = 0
    timeout: float = 60.0
    delays: tuple[tuple[int, float], ...] = ()     # (global rank, seconds before each call)
    trace: bool = False                             # inproc: keep every call, for timelines
    clock_model: ClockModel | None = None           # what calls cost in virtual time
    iteration_marker: str | None = None             # "pkg.module:Class.method" (comm.markers)
    wrappers: tuple[str, ...] = ()                  # modules whose frames are no purpose
    intercept: tuple[str, ...] = ()                 # "torch", "mpi": APIs guarded in the ranks
    log_dir: str | None = None                      # processes: each rank's call log (call_log_format)
    rank_local: tuple[str, ...] = ()                # inproc: modules with per-rank globals
    launch: LaunchStamp | None = None               # the call logs' launch (run_ranks sets it)
    gates: str = "off"                              # latent gates (comm.gate_watch)
    gates_in: tuple[str, ...] = ()                  # packages whose gates a flip controls
    flip: object | None = None                      # a flip replay's aim (comm.gate_control)
    gate_dir: str | None = None                     # processes: where ranks write their gates

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend={self.backend!r}; expected one of {', '.join(BACKENDS)}")
        GuardPolicy(self.guard)
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ValueError(f"seed={self.seed!r} must be an integer")
        require_seconds("timeout", self.timeout)
        if self.iteration_marker is not None:
            resolve_marker(self.iteration_marker)     # fails here, before any rank starts
        if isinstance(self.wrappers, str) or not isinstance(self.wrappers, (tuple, list)) \
                or not all(isinstance(w, str) for w in self.wrappers):
            raise ValueError(f"wrappers={self.wrappers!r} must be a tuple of module names")
        object.__setattr__(self, "wrappers", tuple(self.wrappers))
        object.__setattr__(self, "intercept", check_intercept(self.intercept))
        object.__setattr__(self, "rank_local", check_rank_local(self.rank_local))
        if self.gates not in GATE_MODES:
            raise ValueError(f"gates={self.gates!r}; expected one of {', '.join(GATE_MODES)}")
        if self.gates == "flip" and self.backend == "torchrun" and self.flip is None:
            raise ValueError(TORCHRUN_FLIP)
        object.__setattr__(self, "gates_in", check_gates_in(self.gates_in))
        if self.log_dir is not None:
            if not isinstance(self.log_dir, (str, os.PathLike)) or self.backend == "inproc":
                raise ValueError(f"log_dir={self.log_dir!r}: a directory path, for the process "
                                 "backends (gloo, nccl, torchrun): inproc reports exactly")
            object.__setattr__(self, "log_dir", os.fspath(self.log_dir))
        if self.launch is not None and not isinstance(self.launch, LaunchStamp):
            raise ValueError(f"launch={self.launch!r} must be a LaunchStamp")
        for rank, seconds in self.delays:
            if not isinstance(rank, int) or rank < 0 or not 0 <= seconds <= MAX_TIMEOUT_S:
                raise ValueError(f"delays: {rank!r}: {seconds!r} must map a rank >= 0 to "
                                 f"seconds from 0 to {MAX_TIMEOUT_S:,}")

    @property
    def policy(self) -> GuardPolicy:
        return GuardPolicy(self.guard)



def check_intercept(names) -> tuple[str, ...]:
    """``intercept`` as a tuple of known API names; ValueError naming a bad one."""
    if isinstance(names, str) or not isinstance(names, (tuple, list)):
        raise ValueError(f"intercept={names!r} must be a tuple of {', '.join(INTERCEPTABLE)}")
    for name in names:
        if name not in INTERCEPTABLE:
            raise ValueError(f"intercept={tuple(names)!r}: {name!r} is not one of "
                             f"{', '.join(INTERCEPTABLE)}")
    return tuple(names)


def in_package(name: str, prefixes: tuple[str, ...]) -> bool:
    """Whether module ``name`` is one of ``prefixes`` or inside one of them."""
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def check_rank_local(prefixes) -> tuple[str, ...]:
    """``rank_local`` as a tuple of module names; ValueError naming a bad one."""
    if isinstance(prefixes, str) or not isinstance(prefixes, (tuple, list)):
        raise ValueError(f"rank_local={prefixes!r} must be a tuple of module or package names")
    for p in prefixes:
        if not isinstance(p, str) or not p or not all(x.isidentifier() for x in p.split(".")):
            raise ValueError(f"rank_local={tuple(prefixes)!r}: {p!r} is not a module name")
        if in_package("trtsim", (p,)) or in_package(p, ("trtsim",)) or p.split(".")[0] in (
                "torch", "greenlet", "numpy"):
            raise ValueError(f"rank_local={tuple(prefixes)!r}: {p!r} holds state trtsim or "
                             "torch shares between ranks; name the framework's own package")
    return tuple(prefixes)


def check_gates_in(prefixes) -> tuple[str, ...]:
    """``gates_in`` as a tuple of module or package names; ValueError naming a bad one."""
    if isinstance(prefixes, str) or not isinstance(prefixes, (tuple, list)):
        raise ValueError(f"gates_in={prefixes!r} must be a tuple of module or package names")
    for p in prefixes:
        if not isinstance(p, str) or not p or not all(x.isidentifier() for x in p.split(".")):
            raise ValueError(f"gates_in={tuple(prefixes)!r}: {p!r} is not a module name")
        if p == "trtsim" or in_package(p, NOT_GATED):
            raise ValueError(f"gates_in={tuple(prefixes)!r}: {p!r} is torch's or trtsim's "
                             "plumbing; name the program's packages")
    return tuple(prefixes)


def check_log_dir(path: str) -> None:
    """``ValueError("log_dir='...': why")`` unless call logs can be written in ``path``
    (made if missing): found here, not as ranks that die without a result."""
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".trtsim_probe", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ValueError(f"log_dir={path!r}: call logs cannot be written there ({why})") \
            from None
