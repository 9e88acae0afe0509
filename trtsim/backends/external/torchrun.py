"""Running under torchrun: this process is one rank, the rendezvous comes from the environment.

``trtsim.launch`` called in a script started by ``torchrun`` (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR/PORT set) runs the rank program for this process's rank only, on a process group
initialised from ``env://``; the same program runs unchanged on one machine and across nodes.
There is no launcher-owned shared memory across nodes, so the call ledger lives in the
rendezvous store (``store_ledger``). The guard's
comparisons are the same; rank 0 runs the deadlock monitor on the store's view.

How a launch ends on a report. The rank that finds a mismatch, or rank 0's monitor that finds
a deadlock (and prints it), posts the report in the store; every rank whose main thread is
in one of trtsim's own waits sees it there and raises it from ``launch`` -- a rank that is
done included: it waits in the store for every rank to be done before the results' gather,
a real call that no report would reach. A rank stuck inside a real call (the program's own,
intercepted, or a receive) cannot raise: each rank's watch thread ends such a process
(status 1) once the report has been posted for ``GRACE_S``, and torchrun then ends the
job. A rank that fails with a peer's lost connection after a report raises the report.
"""

from __future__ import annotations

import gc
import os
from functools import partial
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.distributed as tdist

from ...layout.places import RankPlace
from ...guard.waitfor import BLOCKED, DONE, FAILED
from ...calls.errors import CollectiveError, RankFailed
from ...comm.outcome import LaunchOutcome
from ...comm.latent_gate import LatentGate
from ...comm.current import unbind
from ...comm.origin import program_traceback
from ..process.culprit import is_peer_loss
from ..process import call_log_writer
from ..process.rank_start import GroupPlan, build_groups, join_default_group, run_program, start_rank
from .job_ending import JobEnding, JobVerdict
from .store_gates import judged_gates, publish_gates
from .store_ledger import StoreLedger
from .store_watch import StoreWatch
from ..process.torch_ops import TorchGroup
from ..process.aborts import Aborted, Reported
from ..process.safe_env import SAFE_ENV

if TYPE_CHECKING:
    from ...comm.launch_config import LaunchConfig


ENV_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
ENDS, RAISES, RETURNS = "ends", "raises", "returns"   # run_this_rank's one_report: how a
                                                      # report (or the outcome) ends a job


def torchrun_mode(backend: str) -> str | None:
    """Whether this launch runs as one rank of a torchrun job, and the note that says why;
    None: the launcher spawns the ranks itself. Asked for with ``backend="torchrun"`` (any
    env:// launcher: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set), or detected from
    torchrun's own ``TORCHELASTIC_RUN_ID`` -- never from variables a batch system may set."""
    if backend == "torchrun":
        missing = [k for k in ENV_VARS if k not in os.environ]
        if missing:
            raise ValueError(f"backend='torchrun' needs a torchrun (env://) launch: "
                             f"{', '.join(missing)} not set")
        return "torchrun: asked for (backend='torchrun'): this process runs its own rank"
    if "TORCHELASTIC_RUN_ID" in os.environ:
        return (f"torchrun: detected (TORCHELASTIC_RUN_ID is set): this process runs its own "
                f"rank with backend={backend!r}; run the script without torchrun to have "
                "trtsim spawn every rank")
    return None


# How long a rank's watch waits, after the launch ended, for the main thread to raise the
# report and stop it: long enough for a main thread in trtsim's own waits to notice on a busy
# machine; one still inside a real call past it never will, and the watch ends the process.
GRACE_S = 10.0


def _group_plan(config: LaunchConfig, local_rank: int) -> GroupPlan:
    """How this rank's groups are made; a default group the script made already keeps its
    backend."""
    pg_backend, device, stage = "gloo", torch.device("cpu"), False
    if config.backend == "nccl":
        gpus = torch.cuda.device_count()
        if gpus == 0:
            raise ValueError("backend='nccl' needs CUDA GPUs, and torch sees none")
        device = torch.device("cuda", local_rank % gpus)
        pg_backend, stage = ("cpu:gloo,cuda:nccl", False) if local_rank < gpus else ("gloo", True)
    if tdist.is_initialized():
        pg_backend = str(tdist.get_backend())
    return GroupPlan(pg_backend, device, stage)


def run_this_rank(places: list[RankPlace], program: Callable, args: tuple,
                  config: LaunchConfig, group_table: dict, *, one_report: str | None = None,
                  verdict: Callable[[CollectiveError], JobVerdict] | None = None
                  ) -> LaunchOutcome:
    """Run the rank program for this process's rank (torchrun); every rank gets all results.
    ``one_report``: how a report ends the job once, as ``job_ending`` says (rank 0 prints it
    and leaves last, the others leave first, printing nothing) -- ``ENDS`` (``python -m
    trtsim.torchrun``): at once, here; ``RAISES`` (``trtsim.launch``): the report is raised
    here on every rank, for a caller to catch, and ends the job where nobody catches it;
    ``RETURNS`` (``trtsim run``, which judges the outcome): the outcome, report or results,
    is returned on rank 0 alone, once every other rank has left (``JobEnding.settle``), and
    where rank 0 cannot return, it ends with ``verdict`` of the report (``JobEnding.finish``);
    None: the report is raised on every rank, and the job ends as the caller has it.
    What it installs (the environment of ``SAFE_ENV``, the call log's signal handler, the
    watch thread, the stand-ins) is installed inside the ``try`` whose ``finally`` removes
    it; a default process group the script made is used and left as it was found."""
    saved = {key: os.environ.get(key) for key in SAFE_ENV}
    try:
        os.environ.update(SAFE_ENV)
        return _run_this_rank(places, program, args, config, group_table, one_report, verdict)
    finally:
        # The rank's groups, held in reference cycles (transport, stand-ins), are freed now:
        # left to the interpreter's finalization, a gloo group's threads can abort it there.
        gc.collect()
        for key, value in saved.items():          # after the groups: NCCL reads it at init
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _run_this_rank(places: list[RankPlace], program: Callable, args: tuple,
                   config: LaunchConfig, group_table: dict,
                   one_report: str | None,
                   verdict: Callable[[CollectiveError], JobVerdict] | None) -> LaunchOutcome:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if world != len(places):
        raise ValueError(f"torchrun started WORLD_SIZE={world} ranks but the launch lays out "
                         f"{len(places)} (tp*pp*cp of every instance)")
    status, failure = FAILED, ("", "")
    logger: call_log_writer.CallLogger | None = None
    watch: StoreWatch | None = None
    made, groups = False, dict[str, TorchGroup]()
    ending: JobEnding | None = None
    error: CollectiveError | None = None
    results: list[Any] = [None] * world
    latent: list[LatentGate] = []
    try:
        logger = call_log_writer.start(config, rank, places)     # its SIGTERM handler: main thread
        plan = _group_plan(config, local_rank)
        made = join_default_group(plan, config.timeout)
        # every rank's row exists before the handshake in start_rank: no peer reads a row
        # that is not there yet
        ledger = StoreLedger(tdist.distributed_c10d._get_default_store(), rank, world)  # noqa: SLF001
        groups = build_groups(group_table, plan.backend, plan.stage_cuda)
        dist = start_rank(rank, places, groups, plan, ledger, logger, config, ledger.abort).dist
        ending = (JobEnding(ledger, rank, world, logger, stays=False, verdict=verdict)
                  if one_report is not None else None)
        watch = StoreWatch(ledger, places, logger, finds=rank == 0, grace=GRACE_S, ending=ending)
        try:
            keep = partial(publish_gates, ledger) if config.gates == "observe" else None
            result = run_program(dist, config, lambda: (program, args), keep)
        except (Reported, Aborted):
            ledger.set_status(rank, FAILED)
            _raise_report(ledger, ending, one_report)
        except BaseException as exc:
            if is_peer_loss(exc, ledger.status(rank) == BLOCKED) and _ended(ledger):
                # a peer left because a report ended the launch: that report is the outcome
                ledger.set_status(rank, FAILED)
                _raise_report(ledger, ending, one_report)
            failure = (f"{type(exc).__name__}: {exc}", program_traceback(exc))
            if ending is not None and isinstance(exc, Exception):
                # the program's failure is the job's one report, printed by rank 0
                ledger.abort(RankFailed(f"rank {rank} raised {failure[0]}", rank=rank,
                                        traceback=failure[1]))
                _raise_report(ledger, ending, one_report)
            raise
        ledger.set_status(rank, DONE)
        status = DONE
        if logger is not None:
            logger.set_status(DONE)      # the results' gather below is trtsim's, not the program's
        _wait_all_done(ledger, ending, one_report)
        latent = judged_gates(ledger, world) if keep is not None else []
        results = _all_results(result, world, groups["world"])
    except CollectiveError as report:
        if one_report != RETURNS or ending is None:
            raise
        error = report                      # the outcome, for the caller to judge
    finally:
        # Every rank is past its program (or this one failed): the watch stops and is
        # joined before any teardown, so it is never inside a store call at exit.
        if watch is not None:
            watch.stop()
        if logger is not None:
            logger.close(status, *failure)
        # Communicators left to the interpreter's exit can still have gloo's threads running
        # as it ends (SIGABRT, "terminate called without an active exception"): trtsim shuts
        # down what it made (``_leave``) and lets go of the rank that holds the groups.
        _leave(groups, made)
        unbind()
    if one_report == RETURNS and ending is not None:
        ending.settle()                     # every rank but 0 leaves here
    census: list[dict] = [{} for _ in range(world)]
    census[rank] = dict(dist.census)
    outcome = LaunchOutcome(results, error, census, [],
                            [f"torchrun: rank {rank} of {world} (local rank {local_rank}), "
                             f"{plan.backend}" + ("" if made else ", the script's default "
                                                  "group"), *dist.notes])
    outcome.latent = latent
    return outcome


def _wait_all_done(ledger: StoreLedger, ending: JobEnding | None, one_report: str | None):
    """Wait until every rank is done. The results' gather that follows is a real call, which
    no report reaches: it starts only once every rank is done, and a launch that a report ends
    meanwhile raises it here too."""
    try:
        ledger.wait_all_done()
    except Aborted:
        _raise_report(ledger, ending, one_report)


def _all_results(result: Any, world: int, own: TorchGroup) -> list[Any]:
    """Every rank's result, on every rank. A world group is one instance's ranks: a launch
    of several instances (a scenario's ctx and gen) gathers over a gloo group of every rank,
    made (by every rank alike) and destroyed here."""
    results: list[Any] = [None] * world
    if len(own.ranks) == world:
        tdist.all_gather_object(results, result, group=own.obj)
        return results
    everyone = tdist.new_group(list(range(world)), backend="gloo")
    try:
        tdist.all_gather_object(results, result, group=everyone)
    finally:
        tdist.destroy_process_group(everyone)
    return results


def _raise_report(ledger: StoreLedger, ending: JobEnding | None, one_report: str | None):
    """The report that ended the launch: raised here (``RAISES``: ending the job where it is
    not caught; ``RETURNS``: to be returned), or (``ENDS``) this rank's way out of the job
    (``JobEnding.finish``, which does not return)."""
    report = ledger.abort_error()
    if ending is not None and one_report == ENDS:
        ending.finish(report)
    if ending is not None and one_report == RAISES:
        ending.finish_if_uncaught(report)
    raise report from None


def _ended(ledger: StoreLedger) -> bool:
    """Whether a report ended the launch (the store gone too: nothing to say it did)."""
    try:
        return ledger.aborted
    except Exception:  # noqa: BLE001 - the store went away with the job
        return False


def _leave(groups: dict, made: bool) -> None:
    """Destroy the process groups trtsim made for this rank (all of them when it made the
    default group too); the script's own default group is left as it was found."""
    if made:
        pgs = [None]            # the default group, and every group made over it
    else:
        pgs = [pg for pg in dict.fromkeys(p for g in groups.values() for p in (g.obj, g.tensor))
               if pg is not tdist.GroupMember.WORLD]
    for pg in pgs:
        try:
            tdist.destroy_process_group(pg)
        except Exception:  # noqa: BLE001 - leaving anyway; the program's error is the report
            pass
