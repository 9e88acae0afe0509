"""launch(): run one rank program on every rank of a layout, collect results, raise reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .comm.distributed import RankPlace, group_table
from .comm.inproc import InprocWorld, LaunchOutcome
from .timeline.clock import ClockModel
from .topology import InstanceSpec

BACKENDS = ("inproc", "gloo", "nccl")
GUARDS = ("strict", "lockstep", "off")


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

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend={self.backend!r}; expected one of {', '.join(BACKENDS)}")
        if self.guard not in GUARDS:
            raise ValueError(f"guard={self.guard!r}; expected one of {', '.join(GUARDS)}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ValueError(f"seed={self.seed!r} must be an integer")
        if not isinstance(self.timeout, (int, float)) or not self.timeout > 0:
            raise ValueError(f"timeout={self.timeout!r} must be a positive number of seconds")
        for rank, seconds in self.delays:
            if not isinstance(rank, int) or rank < 0 or not seconds >= 0:
                raise ValueError(f"delays: {rank!r}: {seconds!r} must map a rank >= 0 to "
                                 "seconds >= 0")


@dataclass(frozen=True)
class InstanceLayout:
    """One instance of a launch: its name (empty for a plain launch), role and spec."""

    name: str
    role: str
    spec: InstanceSpec


def rank_places(instances: list[InstanceLayout],
                delays: tuple[tuple[int, float], ...] = ()) -> list[RankPlace]:
    """Every rank of the launch, numbered globally in instance order."""
    offsets, start = [], 0
    for inst in instances:
        offsets.append((inst.name, start, inst.spec.world_size))
        start += inst.spec.world_size
    places = []
    for inst, (_, offset, size) in zip(instances, offsets):
        for r in range(size):
            places.append(RankPlace(inst.spec.mapping(r), inst.name, offset, tuple(offsets),
                                    inst.role, dict(delays).get(offset + r, 0.0)))
    world = len(places)
    for rank, _ in delays:
        if rank >= world:
            raise ValueError(f"delays: rank {rank} out of range for {world} ranks")
    return places


def run_ranks(instances: list[InstanceLayout], program: Callable, args: tuple,
              config: LaunchConfig, progress: Callable[[str], None] | None = None) -> LaunchOutcome:
    """Run ``program(dist, *args)`` on every rank; the outcome carries results or the report.
    ``progress`` receives a line about once a second on long runs."""
    places = rank_places(instances, config.delays)
    if config.backend == "inproc":
        world = InprocWorld(places, config.guard, config.seed, config.timeout, group_table(places),
                            progress, config.trace, config.clock_model)
        return world.run(program, tuple(args))
    from .comm.torchrun import run_this_rank, under_torchrun
    if under_torchrun():
        return run_this_rank(places, program, tuple(args), config, group_table(places))
    from .comm.processes import run_processes
    return run_processes(places, program, tuple(args), config, group_table(places), progress)


def launch(prog: Callable, tp: int = 1, pp: int = 1, cp: int = 1, attention_dp: bool = False,
           backend: str = "inproc", args: tuple = (), timeout: float = 60.0,
           guard: str = "strict", seed: int = 0) -> list[Any]:
    """Run ``prog(dist, *args)`` on every rank of a tp x pp x cp instance.

    Returns ``results`` with ``results[r]`` rank r's return value, or raises the report:
    CollectiveMismatch, CollectiveDeadlock, RankFailed or CollectiveTimeout.
    """
    config = LaunchConfig(backend, guard, seed, timeout)
    spec = InstanceSpec(tp_size=tp, pp_size=pp, cp_size=cp, enable_attention_dp=attention_dp,
                        num_layers=max(pp, 1))
    outcome = run_ranks([InstanceLayout("", "", spec)], prog, args, config)
    if outcome.error is not None:
        raise outcome.error
    return outcome.results
