"""run_ranks: run one rank program on every rank of a launch, on the chosen backend."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from ..checks import MAX_TIMEOUT_S, require_seconds
from ..layout.places import InstanceLayout, group_table, rank_places
from ..timeline.clock import ClockModel
from .guard.policy import GuardPolicy
from .intercept import check_names as check_intercept
from .markers import resolve as resolve_marker
from .outcome import LaunchOutcome

BACKENDS = ("inproc", "gloo", "nccl")


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
        if self.log_dir is not None:
            if not isinstance(self.log_dir, (str, os.PathLike)) or self.backend == "inproc":
                raise ValueError(f"log_dir={self.log_dir!r}: a directory path, for the process "
                                 "backends (gloo, nccl, torchrun): inproc reports exactly")
            object.__setattr__(self, "log_dir", os.fspath(self.log_dir))
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
    if config.backend == "inproc":
        from .inproc.world import InprocWorld
        world = InprocWorld(places, config, groups, progress)
        return world.run(program, tuple(args))
    from .process.torchrun import run_this_rank, under_torchrun
    if under_torchrun():
        return run_this_rank(places, program, tuple(args), config, groups)
    from .process.launcher import run_processes
    return run_processes(places, program, tuple(args), config, groups, progress)
