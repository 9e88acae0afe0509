"""The entry point of one rank process spawned by the launcher (``spawn``): it joins the
launch, runs the rank program over its guarded transport and hands its result back."""


from __future__ import annotations

import gc
import os
import pickle
import time
from datetime import timedelta
from typing import TYPE_CHECKING

import torch
import torch.distributed as tdist

from ...layout.places import RankPlace
from ...calls.errors import RankFailed
from ...guard.waitfor import BLOCKED, DONE, FAILED, RankStatus
from ...comm.origin import program_traceback
from . import call_log_writer, lifeline, rank_group
from .rank_start import GroupPlan, build_groups, join_default_group, run_program, start_rank
from .aborts import Aborted, Reported
from .culprit import is_peer_loss
from .ledger import Ledger
from .rank_messages import GroupAnnounced, RankFinished, RankRaised, RankReported
from .safe_env import SAFE_ENV

if TYPE_CHECKING:
    from ...comm.launch_config import LaunchConfig

def rank_main(rank: int, places: list[RankPlace], group_table: dict, program_blob: bytes,
              args_blob: bytes, config: LaunchConfig, plan: dict, store_addr: tuple,
              ledger_name: str, queue, wakeups: list, server: int | None = None) -> None:
    """Entry point of one spawned rank process (``server``: the fork server's pid, its
    parent, whose exit must end it: see ``lifeline``)."""
    rank_group.lead_own_group()          # first: whatever the rank starts is in its group
    lifeline.arm(server)
    lifeline.leave_server()
    lifeline.ignore_interrupts()
    logger = call_log_writer.start(config, rank, places)     # its SIGTERM handler: main thread
    failure = ("", "")
    os.environ.update(SAFE_ENV)
    # Many ranks share few cores: one intra-op thread each, or OpenMP workers spin against
    # each other (and against gloo's threads).
    torch.set_num_threads(1)
    ledger = Ledger.attach(ledger_name, len(places), wakeups,
                           lambda digest, ranks: queue.put(GroupAnnounced(rank, digest, ranks)))
    timeout = config.timeout
    status = FAILED
    try:
        group_plan = GroupPlan(plan["pg_backend"], torch.device(plan["devices"][rank]),
                               plan["stage_cuda"])
        store = tdist.TCPStore(store_addr[0], store_addr[1], len(places), False,
                               timeout=timedelta(seconds=timeout + 30))
        join_default_group(group_plan, timeout, store, rank, len(places))
        groups = build_groups(group_table, group_plan.backend, group_plan.stage_cuda)
        started = start_rank(rank, places, groups, group_plan, ledger, logger, config,
                             lambda err: queue.put(RankReported(rank, pickle.dumps(err))))
        transport, dist = started.transport, started.dist
        # Everything built so far (torch, trtsim, the groups) lives as long as the rank: in
        # the permanent generation, the collections that the guard's per-call allocations
        # trigger scan only what the program makes. No collection first: it would touch
        # every object the fork server preloaded (copy-on-write faults: 4x the spawn time).
        gc.freeze()
        ledger.set_ready(rank, os.getpid())
        # The stand-ins go in before the program is unpickled: its modules import them.
        result = run_program(dist, config, lambda: (pickle.loads(program_blob),
                                                    pickle.loads(args_blob)))
        try:
            blob = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - any pickling failure is the rank's failure
            raise TypeError(f"the rank program's result cannot travel back to the launcher: "
                            f"{type(exc).__name__}: {exc}") from exc
        status = DONE
        # The log is written before the launcher hears of the end: what it hears can end the
        # launch, and its teardown this process.
        _close_log(logger, status)
        logger = None
        queue.put(RankFinished(rank, blob, dict(dist.census), transport.log,
                               transport.clock.events, dist.notes))
    except (Aborted, Reported):
        pass
    except BaseException as exc:  # noqa: BLE001 - reported to the launcher as RankFailed
        tb = program_traceback(exc)
        failure = (f"{type(exc).__name__}: {exc}", tb)
        _close_log(logger, FAILED, *failure)
        logger = None
        in_call = ledger.status(rank) == BLOCKED       # it raised inside a real call
        queue.put(RankRaised(rank, *failure, peer_loss=is_peer_loss(exc, in_call)))
    finally:
        ledger.set_status(rank, status)
        _close_log(logger, status, *failure)
        queue.close()
        queue.join_thread()
        # Stay until the launcher ends the launch: a rank that left would break its peers'
        # connections, turning a hang the monitor can explain into a socket error.
        while not ledger.aborted:
            time.sleep(0.005)
        ledger.close()
        # Skip interpreter teardown: destroying communicators whose peers are gone can hang.
        os._exit(0)


def _close_log(logger, status: RankStatus, *failure: str) -> None:
    """Write the rank's call log for the last time, if it keeps one."""
    if logger is not None:
        logger.close(status, *failure)


def failed_report(rank: int, places: list[RankPlace], message: str, tb: str) -> RankFailed:
    return RankFailed(f"{places[rank].name} raised {message}", rank=rank, traceback=tb)

