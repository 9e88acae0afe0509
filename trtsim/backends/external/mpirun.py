"""Guarding an mpirun job: this process is one MPI rank of an unmodified mpi4py script.

``mpirun -n N python -m trtsim.mpi script.py`` starts N of these. Each initialises the real
MPI library, then puts trtsim's stand-in ``mpi4py`` in front of it (``intercept.mpi.standin``
in its mpirun mode), so the script's every call is recorded and checked by the guard first and
only then runs as the real mpi4py call, with the script's own arguments and buffers.

The guard's state lives where torchrun's does (``torchrun.StoreLedger``): a TCP store, which
rank 0 serves and whose address it broadcasts with a real ``MPI.bcast``. The store listens on
the loopback interface only when every rank runs on rank 0's host (their host names, from a
real ``MPI.allgather``), on every interface only when the job spans hosts. Those two and the
barrier after every rank has its ledger row are the MPI calls trtsim makes itself. Rank 0 runs
torchrun's deadlock monitor over the store, and the job's deadline. A report ends the job
once (``job_ending``): rank 0 prints it and leaves last with status 1 without finalising
MPI, once the other ranks have said in the store that they leave (they make no store call
after, so none has a connection torn under it), and mpirun ends them -- it does not wait,
as it would for a rank inside ``MPI_Finalize``. Every rank's watch sees a report its main
thread cannot (in the script's own code, or in a real MPI call). Each rank writes its
call log (``--log-dir``) on exit and on mpirun's SIGTERM, for ``trtsim analyze``
(``mpirun_exits``). Threads the script starts belong to its rank. With ``gates="observe"``
each rank keeps the gates its calls passed and puts them in the store when its script
returns; rank 0, once every rank is done, judges them all (``store_gates``).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import runpy
import socket
import sys
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

import torch

from ...guard.waitfor import DONE
from ...intercept.rank_api import RankAPI
from ...intercept.mpi.run import MPIRank
from ...intercept.mpi.standin import installed as standin_installed
from ...comm.launch_config import LaunchConfig
from ...comm.gate_record import GateRecorder
from ...comm.gate_watch import watch_gates
from ...comm.latent_gate import LatentGate
from ...comm.origin import call_rank_program
from ...comm import markers
from ...layout.places import RankPlace
from ..process import call_log_writer, logged
from .job_ending import JobEnding
from .mpirun_exits import EXIT_REPORT, Deadline, fail, job_ending, script_traceback
from ..process.rank_start import rank_distributed
from ..process.store import LOOPBACK, serve_store
from ..process.aborts import Aborted, Reported
from ..process.transport import TorchTransport
from .store_gates import job_flip_refused, judged_gates, publish_gates
from .store_ledger import StoreLedger
from .store_watch import StoreWatch
from .torchrun import GRACE_S


@dataclass(frozen=True)
class MpirunJob:
    """One rank's part of a guarded mpirun job: the script, its arguments, the launch's
    layout (every rank of it is one MPI rank) and configuration."""

    script: str
    args: tuple[str, ...]
    places: tuple[RankPlace, ...]
    config: LaunchConfig

    def __post_init__(self) -> None:
        if not os.path.isfile(self.script):
            raise ValueError(f"script={self.script!r}: no such file")
        if self.config.gates == "flip":
            raise ValueError(f"gates='flip': {job_flip_refused('mpirun')}")


@dataclass(frozen=True)
class RankEnd:
    """How this rank's script ended, where it ended normally: the exit status and, on rank 0
    of a job with ``gates="observe"``, the latent gates of every rank's posts (the other
    ranks judge none: rank 0 alone prints them)."""

    status: int
    latent: tuple[LatentGate, ...] = ()


def store_host(hostnames: list[str]) -> str:
    """Where the job's store listens, given every rank's host name: the loopback interface
    when they are one host (no other machine can reach the store and write into the job's
    ledger), every interface when the job spans hosts."""
    return LOOPBACK if len(set(hostnames)) == 1 else "0.0.0.0"


def rendezvous(world, rank: int, timeout: float):
    """The job's TCP store (real MPI calls on ``world``, every rank's part): rank 0 serves
    it where ``store_host`` says; its address travels by a real MPI bcast."""
    hostnames = world.allgather(socket.gethostname())
    if rank == 0:
        store = serve_store(world.Get_size(), timeout + 30, store_host(hostnames))
        world.bcast((hostnames[0], store.port), root=0)
        return store
    host, port = world.bcast(None, root=0)
    if host == hostnames[rank]:
        host = LOOPBACK
    return torch.distributed.TCPStore(host, port, world.Get_size(), False,
                                      timedelta(seconds=timeout + 30))


@contextlib.contextmanager
def _threads_share_the_rank(ends_job, on_report):
    """Threads the script starts run in a copy of its context, so they find this rank: the
    whole process is one rank (TensorRT-LLM's executor calls MPI from its worker thread).
    A report met in such a thread (``ends_job(exc)``) ends the rank as in the main one."""
    start = threading.Thread.start

    def start_in_context(thread, *args, **kwargs):
        run, ctx = thread.run, contextvars.copy_context()

        def run_in_context():
            try:
                ctx.run(run)
            except BaseException as exc:
                if not ends_job(exc):
                    raise                # the script's own: the thread dies of it, as it would
                on_report()
        thread.run = run_in_context
        return start(thread, *args, **kwargs)
    threading.Thread.start = start_in_context
    try:
        yield
    finally:
        threading.Thread.start = start


def run_rank(job: MpirunJob, real_mpi) -> RankEnd:
    """Run ``job``'s script on this MPI rank under the guard; how it ended, when it ends
    (a report or a failure ends the process here instead)."""
    world = real_mpi.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    places, config = list(job.places), job.config
    if size != len(places):
        print(f"trtsim.mpi: mpirun started {size} ranks but the layout has {len(places)} "
              f"(--tp x --pp x --cp)", file=sys.stderr, flush=True)
        os._exit(2)
    logger = call_log_writer.start(config, rank, places)
    ledger = StoreLedger(rendezvous(world, rank, config.timeout), rank, size,
                         prefix="trtsim-mpi")
    world.Barrier()                              # every ledger row exists before anyone reads
    found = []                                   # the report this rank found, if any

    def report(err) -> None:
        found.append(err)
        ledger.abort(err)

    transport = TorchTransport(rank, logged.logged_ledger(ledger, logger), {}, config.policy,
                               torch.device("cpu"), report, config.clock_model)
    # runpy's frames, between trtsim's entry and the script, are no part of a purpose
    dist = rank_distributed(places[rank], transport, logger, config, wrappers=("runpy",))
    api = RankAPI.of(dist)
    api.attach(MPIRank(api, real_mpi))
    recorder = GateRecorder() if config.gates == "observe" else None
    watch_gates([dist], config, None, recorder)
    ending = JobEnding(ledger, rank, size, logger, stays=True, stay_s=config.timeout + 30)
    # every rank's watch: a report reaches a rank whose main thread is in the script's own
    # code or in a real MPI call; rank 0's also finds deadlocks, and keeps the deadline
    guards: list[StoreWatch | Deadline] = [
        StoreWatch(ledger, places, logger, finds=rank == 0, grace=GRACE_S, ending=ending)]
    if rank == 0:
        guards.append(Deadline(config.timeout, ledger, places, logger, ending))
    script = os.path.abspath(job.script)

    def on_report() -> None:
        """A report (this rank's, or another's it saw): rank 0 prints the one posted and
        leaves last (``job_ending``)."""
        ending.finish(_posted(ledger, found))

    def ends_job(exc: BaseException) -> bool:
        """A report, or the store gone with the report that ends the job."""
        return isinstance(exc, (Reported, Aborted)) or (
            isinstance(exc, torch.distributed.DistError) and job_ending(ledger))

    try:
        with _threads_share_the_rank(ends_job, on_report):
            _run_script(job, script, dist)
    except (Reported, Aborted, torch.distributed.DistError) as exc:
        if ends_job(exc):
            on_report()
        fail(ledger, rank, logger, f"{type(exc).__name__}: {exc}",
              script_traceback(exc, script), EXIT_REPORT)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            fail(ledger, rank, logger, f"SystemExit: {exc.code}", "", exc.code)
    except BaseException as exc:  # noqa: BLE001 - the script's failure ends the job
        fail(ledger, rank, logger, f"{type(exc).__name__}: {exc}",
              script_traceback(exc, script), EXIT_REPORT)
    try:
        if recorder is not None:         # before DONE: every finished rank has posted
            publish_gates(ledger, recorder.rows)
        ledger.set_status(rank, DONE)
    except torch.distributed.DistError:
        on_report()                      # a worker thread's report ended the job meanwhile
    if logger is not None:
        logger.close(DONE)
    latent: list[LatentGate] = []
    if rank == 0:
        _wait_for_all(ledger, places)            # the store and the monitor serve them
        latent = judged_gates(ledger, size) if recorder is not None else []
    for guard in guards:
        guard.stop()
    return RankEnd(0, tuple(latent))


def _run_script(job: MpirunJob, script: str, dist) -> None:
    """``script`` as ``python script.py args`` runs it, with the stand-in mpi4py in front
    of the real one and the launch's iteration marker."""
    with standin_installed(), markers.installed(job.config.iteration_marker):
        sys.argv = [job.script, *job.args]         # as `python script.py args` has them
        sys.path[0] = os.path.dirname(script)
        call_rank_program(lambda _dist: runpy.run_path(script, run_name="__main__"), dist, ())


def _posted(ledger: StoreLedger, found: list):
    """The report that ends the job: the one posted in the store (the first finder's), else
    the one this rank found."""
    try:
        return ledger.abort_error()
    except torch.distributed.DistError:
        return found[0] if found else "trtsim: a report ended the job"


def _wait_for_all(ledger: StoreLedger, places, poll: float = 0.05) -> None:
    """Rank 0 stays until every rank is past its script (a deadlock among the others is
    still the monitor's to report, and the store is rank 0's)."""
    while not all(s.is_finished for s in ledger.snapshot(places).values()):
        time.sleep(poll)
