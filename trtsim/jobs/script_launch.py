"""``trtsim launch``'s composition root: an unmodified torchrun script on every rank of a
layout, on one of trtsim's backends, with torch.distributed (and mpi4py) guarded.

torchrun's world is ``nproc_per_node`` x ``nnodes`` processes; trtsim's is a layout (TP x PP
x CP, or a deployment's two instances). The layout defaults to one TP group of the whole
world, and a layout that is given must have the world's ranks. Where the workers' stdout and
stderr go is torchrun's ``--log-dir``/``--redirects``/``--tee`` (``worker_logs``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from dataclasses import dataclass
from typing import Callable, Iterator

import torch.distributed as tdist

from ..backends.external.torchrun import ENDS, run_this_rank
from ..backends.run_ranks import run_ranks
from ..comm.launch_config import LaunchConfig, check_log_dir
from ..comm.outcome import LaunchOutcome
from ..launching import default_clock_model, instances_of
from ..layout.places import InstanceLayout, group_table, rank_places
from .rank_environ import rank_environ
from .script_job import ScriptProgram, ScriptTarget
from .worker_logs import StreamFlags, WorkerLogs, make_run_dir, plan
from .worker_streams import worker_output

LOOPBACK = "127.0.0.1"
PREFIX_TEMPLATE = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"   # torchrun's, for tee'd lines


@dataclass(frozen=True)
class ScriptLaunch:
    """A script launch as ``trtsim launch`` takes it. ``tp``/``pp``/``cp`` 0: not given (the
    layout is TP = the world); ``deployment``: a topology id, in place of them."""

    target: ScriptTarget
    nproc_per_node: int
    nnodes: int = 1
    tp: int = 0
    pp: int = 0
    cp: int = 0
    attention_dp: bool = False
    deployment: str | None = None
    backend: str = "inproc"
    intercept: tuple[str, ...] = ("torch",)
    rank_local: tuple[str, ...] = ()
    call_log_dir: str | None = None
    timeout: float = 300.0
    seed: int = 0
    guard: str = "strict"
    master_addr: str | None = None               # MASTER_ADDR the ranks see (loopback)
    master_port: int | None = None               # MASTER_PORT (a free port)
    log_dir: str | None = None                   # torchrun's: the workers' logs' base folder
    redirects: str = "0"                         # torchrun's: streams to files, not the console
    tee: str = "0"                               # torchrun's: streams to files and the console
    local_ranks_filter: str = ""                 # torchrun's: the local ranks on the console

    def __post_init__(self) -> None:
        for name in ("nproc_per_node", "nnodes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"--{name.replace('_', '-')} {value!r}: a count >= 1")
        if self.nnodes != 1:
            raise ValueError(f"--nnodes {self.nnodes}: trtsim launch runs one node's ranks "
                             "(run torchrun --nnodes N -m trtsim.torchrun across nodes)")
        if self.deployment is not None and (self.tp, self.pp, self.cp) != (0, 0, 0):
            raise ValueError("--deployment lays out the ranks itself: give it or --tp/--pp/"
                             "--cp, not both")
        self.config()                               # bad flags fail here, before any rank
        self.stream_flags()

    @property
    def world(self) -> int:
        """torchrun's world: ``--nproc-per-node`` x ``--nnodes``."""
        return self.nproc_per_node * self.nnodes

    def instances(self) -> list[InstanceLayout]:
        """The layout the ranks run in; ValueError when its ranks are not the world's."""
        if self.deployment is not None:
            instances = instances_of(self.deployment, 1, 1, 1, False)
            given = f"--deployment {self.deployment}"
        else:
            pp, cp = self.pp or 1, self.cp or 1
            tp = self.tp or max(1, self.world // (pp * cp))
            instances = instances_of(None, tp, pp, cp, self.attention_dp)
            given = f"--tp {tp} x --pp {pp} x --cp {cp}"
        ranks = sum(i.spec.world_size for i in instances)
        if ranks != self.world:
            raise ValueError(f"{given} lays out {ranks} ranks but --nproc-per-node "
                             f"{self.nproc_per_node} x --nnodes {self.nnodes} starts "
                             f"{self.world}")
        return instances

    def layout_name(self) -> str:
        """``tp 4``, ``tp 2 x pp 2``, or the deployment's id: how the summary names it."""
        if self.deployment is not None:
            return self.deployment
        spec = self.instances()[0].spec
        sizes = [("tp", spec.tp_size), ("pp", spec.pp_size), ("cp", spec.cp_size)]
        text = " x ".join(f"{k} {v}" for k, v in sizes if v > 1 or k == "tp")
        return text + (", attention DP" if self.attention_dp else "")

    def stream_flags(self) -> StreamFlags:
        """torchrun's stream flags, checked (ValueError naming the flag)."""
        return StreamFlags(self.nproc_per_node, self.log_dir, self.redirects, self.tee,
                           self.local_ranks_filter)

    def worker_logs(self) -> WorkerLogs | None:
        """Where each rank's stdout and stderr go; its folders are made now (None: the
        console, as without the flags)."""
        flags = self.stream_flags()
        if flags.inert:
            return None
        return plan(flags, make_run_dir(flags), os.environ.get(PREFIX_TEMPLATE))

    def config(self) -> LaunchConfig:
        return LaunchConfig(self.backend, self.guard, self.seed, self.timeout,
                            clock_model=default_clock_model(), wrappers=("runpy",),
                            intercept=self.intercept, log_dir=self.call_log_dir,
                            rank_local=self.rank_local)


def free_port() -> int:
    """A port nothing listens on now: ``MASTER_PORT`` for a script that opens its own store
    there (the script's ``init_process_group`` joins trtsim's world and needs none)."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _as_python_runs_it(launch: ScriptLaunch) -> Iterator[None]:
    """``sys.argv`` and ``sys.path[0]`` as ``python script.py`` has them, and on inproc each
    rank's own torchrun variables; all put back afterwards."""
    target = launch.target
    first = os.path.dirname(target.path) if target.path is not None else os.getcwd()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = target.argv
    sys.path.insert(0, first)
    try:
        with rank_environ() if launch.backend == "inproc" else contextlib.nullcontext():
            yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def run_script(launch: ScriptLaunch, progress: Callable[[str], None] | None = None,
               logs: WorkerLogs | None = None) -> LaunchOutcome:
    """Run the script on every rank, its stdout and stderr where ``logs`` says
    (``launch.worker_logs()``); the outcome holds the report, if any (``error``)."""
    instances = launch.instances()
    master = (launch.master_addr or LOOPBACK, launch.master_port or free_port())
    program = ScriptProgram(launch.target, launch.world, launch.nproc_per_node, master,
                            launch.backend, logs)
    with _as_python_runs_it(launch), worker_output(logs, launch.backend):
        return run_ranks(instances, program, (), launch.config(), progress)


def run_torchrun_rank(target: ScriptTarget, instances: list[InstanceLayout],
                      config: LaunchConfig) -> LaunchOutcome:
    """This torchrun worker's rank of the script (``python -m trtsim.torchrun``): torchrun's
    variables are already this process's; a report ends the process (``job_ending``: rank 0
    prints it and leaves last), the script's own exception is raised here."""
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    places = rank_places(instances, config.delays)
    if config.log_dir is not None:
        check_log_dir(config.log_dir)               # before the script starts
    program = ScriptProgram(target, world, local, (os.environ["MASTER_ADDR"],
                                                   int(os.environ["MASTER_PORT"])),
                            config.backend)
    try:
        return run_this_rank(places, program, (), config, group_table(instances),
                             one_report=ENDS)
    finally:
        # The script's own default group is left to the worker's exit otherwise, where gloo's
        # threads can still run as the interpreter ends (SIGABRT, "terminate called without
        # an active exception"): the script is done, and so is this process.
        if tdist.is_initialized():
            try:
                tdist.destroy_process_group()
            except Exception:  # noqa: BLE001 - leaving anyway; the outcome is decided
                pass
