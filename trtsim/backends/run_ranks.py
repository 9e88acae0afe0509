"""run_ranks: run one rank program on every rank of a launch, on the chosen backend."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from typing import Callable

from ..layout.places import InstanceLayout, group_table, rank_places
from ..comm.launch_config import TORCHRUN_FLIP, LaunchConfig, check_log_dir
from ..comm.gate_record import judge_recorded
from ..comm.launch_stamp import LaunchStamp
from .inproc.world import InprocWorld
from ..comm.outcome import LaunchOutcome
from ..calls.errors import CollectiveError
from .process.spawn import run_processes
from .external.job_ending import JobVerdict
from .external.torchrun import run_this_rank, torchrun_mode


def run_ranks(instances: list[InstanceLayout], program: Callable, args: tuple,
              config: LaunchConfig, progress: Callable[[str], None] | None = None, *,
              one_report: str | None = None,
              verdict: Callable[[CollectiveError], JobVerdict] | None = None) -> LaunchOutcome:
    """Run ``program(dist, *args)`` on every rank; the outcome carries results or the report.
    ``progress`` receives a line about once a second on long runs. ``one_report`` (and the
    ``verdict`` of a job that judges its report): under torchrun, how a report ends the job
    once (``external.torchrun.run_this_rank``)."""
    places = rank_places(instances, config.delays)
    groups = group_table(instances)
    if config.log_dir is not None:
        check_log_dir(config.log_dir)               # before any rank starts
    if config.backend == "inproc":
        world = InprocWorld(places, config, groups, progress)
        return world.run(program, tuple(args))
    mode = torchrun_mode(config.backend)
    if mode is not None:
        if config.gates == "flip" and config.flip is None:
            raise ValueError(TORCHRUN_FLIP)
        outcome = run_this_rank(places, program, tuple(args), config, groups,
                                one_report=one_report, verdict=verdict)
        outcome.notes.insert(0, mode)
        return outcome
    if config.log_dir is not None and config.launch is None:
        config = replace(config, launch=LaunchStamp.new())   # one stamp for every rank
    if config.gates == "off" or config.flip is not None:
        return run_processes(places, program, tuple(args), config, groups, progress)
    with tempfile.TemporaryDirectory(prefix="trtsim_gates_") as folder:
        outcome = run_processes(places, program, tuple(args), replace(config, gate_dir=folder),
                                groups, progress)
        if outcome.error is None:
            outcome.latent = judge_recorded(folder, len(places))
    return outcome

