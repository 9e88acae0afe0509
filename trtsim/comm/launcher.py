"""run_ranks: run one rank program on every rank of a launch, on the chosen backend."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, replace
from typing import Callable

from ..checks import MAX_TIMEOUT_S, require_seconds
from ..layout.places import InstanceLayout, group_table, rank_places
from ..timeline.clock import ClockModel
from .guard.policy import GuardPolicy
from .launch_stamp import LaunchStamp
from .inproc.rank_local import check_prefixes as check_rank_local
from .intercept import check_names as check_intercept
from .markers import resolve as resolve_marker
from .outcome import LaunchOutcome

BACKENDS = ("inproc", "gloo", "nccl", "torchrun")   # torchrun: this process is one rank


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
    log_dir: str | None = None                      # processes: each rank's call log (calllog)
    rank_local: tuple[str, ...] = ()                # inproc: modules with per-rank globals
    launch: LaunchStamp | None = None               # the call logs' launch (run_ranks sets it)

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


def run_ranks(instances: list[InstanceLayout], program: Callable, args: tuple,
              config: LaunchConfig, progress: Callable[[str], None] | None = None) -> LaunchOutcome:
    """Run ``program(dist, *args)`` on every rank; the outcome carries results or the report.
    ``progress`` receives a line about once a second on long runs."""
    places = rank_places(instances, config.delays)
    groups = group_table(instances)
    if config.log_dir is not None:
        check_log_dir(config.log_dir)               # before any rank starts
    if config.backend == "inproc":
        from .inproc.world import InprocWorld
        world = InprocWorld(places, config, groups, progress)
        return world.run(program, tuple(args))
    from .process.torchrun import run_this_rank, torchrun_mode
    mode = torchrun_mode(config.backend)
    if mode is not None:
        outcome = run_this_rank(places, program, tuple(args), config, groups)
        outcome.notes.insert(0, mode)
        return outcome
    from .process.launcher import run_processes
    if config.log_dir is not None and config.launch is None:
        config = replace(config, launch=LaunchStamp.new())   # one stamp for every rank
    return run_processes(places, program, tuple(args), config, groups, progress)


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
