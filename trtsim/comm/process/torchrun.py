"""Running under torchrun: this process is one rank, the rendezvous comes from the environment.

``trtsim.launch`` called in a script started by ``torchrun`` (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR/PORT set) runs the rank program for this process's rank only, on a process group
initialised from ``env://``; the same program runs unchanged on one machine and across nodes.
There is no launcher-owned shared memory across nodes, so the call ledger lives in the
rendezvous store (one key per rank and group kind, plus one for the rank's state). The guard's
comparisons are the same; rank 0 runs the deadlock monitor on the store's view. A report is
raised in the rank that finds it (and printed); a deadlock makes rank 0 print the report and
exit with status 1, which torchrun turns into the end of every rank.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as tdist

from ..distributed import Distributed
from ..errors import CollectiveError
from ..guard.waitfor import BLOCKED, DONE, FAILED, RUNNING, RankState
from ..outcome import LaunchOutcome
from .. import intercept, markers
from ..current import bind
from ..origin import OriginFinder, call_rank_program, program_traceback
from ..records import CallRecord
from .ledger import STATUS_CODES, STATUS_NAMES, comm_key, match_hash
from . import call_log
from .monitor import DeadlockMonitor
from .torchdist import SAFE_ENV, Aborted, Reported, TorchTransport, build_groups


def under_torchrun() -> bool:
    """Whether this process was started by torchrun (or another env:// launcher)."""
    return "TORCHELASTIC_RUN_ID" in os.environ or all(
        k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


class StoreLedger:
    """The ledger interface of ``ledger.Ledger`` over a c10d store (works across nodes)."""

    def __init__(self, store, rank: int, num_ranks: int, prefix: str = "trtsim"):
        self.store, self.rank, self.num_ranks, self.prefix = store, rank, num_ranks, prefix
        self._state = [STATUS_CODES[RUNNING], 0, 0, ()]   # status, version, iteration, pending
        self._comms: list[int] = []                        # this rank's communicators, in use
        store.set(self._comms_key(rank), pickle.dumps([]))
        self._publish()

    def _slot_key(self, r: int, key: int) -> str:
        return f"{self.prefix}/slot/{r}/{key}"

    def _comms_key(self, r: int) -> str:
        return f"{self.prefix}/comms/{r}"

    def _state_key(self, r: int) -> str:
        return f"{self.prefix}/state/{r}"

    def _publish(self) -> None:
        self._state[1] += 1
        self.store.set(self._state_key(self.rank), pickle.dumps(tuple(self._state)))

    # -- rank side -----------------------------------------------------------------------
    def post(self, r: int, rec: CallRecord) -> None:
        if not rec.is_p2p:
            key = comm_key(rec)
            self.store.set(f"{self.prefix}/clk/{r}/{key}/{rec.seq % 64}", repr(rec.clock))
            self.store.set(self._slot_key(r, key), pickle.dumps((rec.seq, match_hash(rec), rec)))
            if key not in self._comms:
                self._comms.append(key)
                self.store.set(self._comms_key(r), pickle.dumps(self._comms))
        self.store.set(f"{self.prefix}/call/{r}", pickle.dumps(rec))
        self._state[0] = STATUS_CODES[BLOCKED]
        self._publish()

    def set_status(self, r: int, status: str) -> None:
        self._state[0] = STATUS_CODES[status]
        self._publish()

    def set_ready(self, r: int, pid: int) -> None:
        self.set_status(r, RUNNING)

    def set_iteration(self, r: int, iteration: int) -> None:
        self._state[2] = iteration
        self._publish()

    def set_pending_sends(self, r: int, sends: list[tuple[int, int]]) -> None:
        self._state[3] = tuple(sends)
        self._publish()

    def notify(self, ranks: list[int]) -> None:
        pass   # store writes are seen by the next read; waiting ranks poll

    def wait_for_post(self, r: int, timeout: float) -> None:
        time.sleep(min(timeout, 5e-4))

    # -- readers -------------------------------------------------------------------------
    def _slot(self, r: int, key: int) -> tuple:
        name = self._slot_key(r, key)
        if not self.store.check([name]):          # never called there: get() would wait
            return 0, b"", None
        return pickle.loads(self.store.get(name))

    def read_seq_hash(self, r: int, rec: CallRecord) -> tuple[int, bytes]:
        seq, h, _ = self._slot(r, comm_key(rec))
        return seq, h

    def read_call(self, r: int, rec: CallRecord) -> CallRecord | None:
        return self._slot(r, comm_key(rec))[2]

    def arrival(self, r: int, rec: CallRecord) -> float:
        return float(self.store.get(f"{self.prefix}/clk/{r}/{comm_key(rec)}/{rec.seq % 64}"))

    @property
    def aborted(self) -> bool:
        return self.store.check([f"{self.prefix}/abort"])

    def abort(self, err: CollectiveError | None = None) -> None:
        self.store.set(f"{self.prefix}/abort", pickle.dumps(err))

    def abort_error(self) -> CollectiveError | None:
        return pickle.loads(self.store.get(f"{self.prefix}/abort"))

    def versions(self) -> np.ndarray:
        return np.array([pickle.loads(self.store.get(self._state_key(r)))[1]
                         for r in range(self.num_ranks)])

    def snapshot(self, places) -> dict[int, RankState]:
        out = {}
        for r in range(self.num_ranks):
            status_code, _, iteration, pending = pickle.loads(self.store.get(self._state_key(r)))
            status = STATUS_NAMES.get(status_code, RUNNING)
            call = None
            if status == BLOCKED:
                call = pickle.loads(self.store.get(f"{self.prefix}/call/{r}"))
            posted = {}
            for key in pickle.loads(self.store.get(self._comms_key(r))):
                seq, _, last = self._slot(r, key)
                if last is not None:
                    posted[last.group_key] = seq
            out[r] = RankState(r, status, call, posted, tuple(pending), iteration,
                               places[r].name)
        return out


def run_this_rank(places, program, args, config, group_table) -> LaunchOutcome:
    """Run the rank program for this process's rank (torchrun); every rank gets all results."""
    os.environ.update(SAFE_ENV)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if world != len(places):
        raise ValueError(f"torchrun started WORLD_SIZE={world} ranks but the launch lays out "
                         f"{len(places)} (tp*pp*cp of every instance)")
    logger = call_log.start(config, rank, places)     # its SIGTERM handler: main thread
    pg_backend, device, stage = "gloo", torch.device("cpu"), False
    if config.backend == "nccl":
        gpus = torch.cuda.device_count()
        if gpus == 0:
            raise ValueError("backend='nccl' needs CUDA GPUs, and torch sees none")
        device = torch.device("cuda", local_rank % gpus)
        torch.cuda.set_device(device)
        pg_backend, stage = ("cpu:gloo,cuda:nccl", False) if local_rank < gpus else ("gloo", True)
    tdist.init_process_group(pg_backend, init_method="env://",
                             timeout=timedelta(seconds=config.timeout + 30))
    groups = build_groups(group_table, pg_backend, stage)
    ledger = StoreLedger(tdist.distributed_c10d._get_default_store(), rank, world)  # noqa: SLF001
    tdist.all_reduce(torch.zeros(1), group=groups["world"].obj)

    def report(err: CollectiveError) -> None:
        ledger.abort(err)

    transport = TorchTransport(rank, ledger, groups, config.policy, device, report,
                               config.clock_model)
    if logger is not None:
        transport = call_log.LoggedTransport(transport, logger)
    dist = Distributed(places[rank], transport, OriginFinder(config.wrappers))
    bind(dist)
    status, failure = FAILED, ("", "")
    monitor = _Monitor(ledger, places, logger) if rank == 0 else None   # stopped by the finally below
    try:
        try:
            with intercept.installed(config.intercept) as interception, \
                    markers.installed(config.iteration_marker):
                interception.attach(dist)
                result = call_rank_program(program, dist, args)
        except (Reported, Aborted):
            ledger.set_status(rank, FAILED)
            raise ledger.abort_error() from None
        except BaseException as exc:
            failure = (f"{type(exc).__name__}: {exc}", program_traceback(exc))
            raise
        ledger.set_status(rank, DONE)
        status = DONE
        if logger is not None:
            logger.set_status(DONE)      # the results' gather below is trtsim's, not the program's
        results = [None] * world
        tdist.all_gather_object(results, result, group=groups["world"].obj)
    finally:
        # Every rank is past its program (or this one failed): the monitor stops and is
        # joined before any teardown, so it is never inside a store call at exit.
        if monitor is not None:
            monitor.stop()
        if logger is not None:
            logger.close(status, *failure)
        if status != DONE:
            # A failing rank leaves with its communicators shut down: left to the
            # interpreter's exit, gloo's threads can still be running as it ends (SIGABRT,
            # "terminate called without an active exception").
            try:
                tdist.destroy_process_group()
            except Exception:  # noqa: BLE001 - leaving anyway; the program's error is the report
                pass
    census = [{} for _ in range(world)]
    census[rank] = dict(dist.census)
    tdist.destroy_process_group()
    return LaunchOutcome(results, None, census, [],
                         [f"torchrun: rank {rank} of {world} (local rank {local_rank}), {pg_backend}"])


class _Monitor:
    """Rank 0's deadlock monitor over the store, in a thread; a deadlock ends the job with
    the report. ``stop()`` ends the thread and waits for it."""

    def __init__(self, ledger: StoreLedger, places, logger=None):
        self._logger = logger                # this rank's call log, written before the end
        self._stop = threading.Event()
        self._monitor = DeadlockMonitor(ledger, places, interval=0.2)
        self._ledger = ledger
        self._thread = threading.Thread(target=self._run, name="trtsim-monitor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            try:
                err = self._monitor.poll()
            except Exception:  # noqa: BLE001 - the store went away: the job is ending
                return
            if err is not None:
                self._ledger.abort(err)
                print(str(err), file=sys.stderr, flush=True)
                if self._logger is not None:
                    self._logger.write("exit")
                os._exit(1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
