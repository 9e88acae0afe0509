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

import gc
import os
import pickle
import sys
import threading
import time
from datetime import timedelta

from typing import Any

import numpy as np
import torch
import torch.distributed as tdist

from ..errors import CollectiveError
from ..guard.waitfor import BLOCKED, DONE, FAILED, RUNNING, RankState
from ..outcome import LaunchOutcome
from ..origin import program_traceback
from ..records import CallRecord
from .ledger import STATUS_CODES, STATUS_NAMES, comm_key
from .record_codec import match_hash
from . import call_log
from .rank_start import rank_distributed, run_program
from .monitor import DeadlockMonitor
from .torchdist import SAFE_ENV, Aborted, Reported, TorchTransport, build_groups


class StoreLedger:
    """The ledger interface of ``ledger.Ledger`` over a c10d store (works across nodes)."""

    def __init__(self, store, rank: int, num_ranks: int, prefix: str = "trtsim"):
        self.store, self.rank, self.num_ranks, self.prefix = store, rank, num_ranks, prefix
        # status, version, iteration, pending sends
        self._state: list[Any] = [STATUS_CODES[RUNNING], 0, 0, ()]
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
    def post(self, r: int, rec: CallRecord) -> bytes:
        """Publish ``rec`` as rank r's current call; its match hash (``Ledger.post``'s
        contract: the transport compares it with its peers')."""
        digest = match_hash(rec)
        if not rec.is_p2p:
            key = comm_key(rec)
            self.store.set(f"{self.prefix}/clk/{r}/{key}/{rec.seq % 64}", repr(rec.clock))
            self.store.set(self._slot_key(r, key), pickle.dumps((rec.seq, digest, rec)))
            if key not in self._comms:
                self._comms.append(key)
                self.store.set(self._comms_key(r), pickle.dumps(self._comms))
        self.store.set(f"{self.prefix}/call/{r}", pickle.dumps(rec))
        self._state[0] = STATUS_CODES[BLOCKED]
        self._publish()
        return digest

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
        if rec.is_p2p:        # r's current call, when it is a p2p one (Ledger's p2p slot)
            name = f"{self.prefix}/call/{r}"
            call = pickle.loads(self.store.get(name)) if self.store.check([name]) else None
            return call if call is not None and call.is_p2p else None
        return self._slot(r, comm_key(rec))[2]

    def arrival(self, r: int, rec: CallRecord) -> float:
        return float(self.store.get(f"{self.prefix}/clk/{r}/{comm_key(rec)}/{rec.seq % 64}"))

    @property
    def aborted(self) -> bool:
        return self.store.check([f"{self.prefix}/abort"])

    def abort(self, err: CollectiveError | None = None) -> None:
        """End the launch; ``err`` is the report every rank raises."""
        self.store.set(f"{self.prefix}/abort", pickle.dumps(err))

    def abort_error(self) -> CollectiveError:
        """The report that ended the launch (a rank that failed outside a collective ends it
        with none: a generic one then)."""
        err = pickle.loads(self.store.get(f"{self.prefix}/abort"))
        return err if err is not None else CollectiveError("another rank ended the launch")

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


ENV_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def _default_group(config, local_rank: int, timeout: float):
    """(process-group backend, device, stage CUDA through the host, whether trtsim made the
    default group): a default group the script made already is used as it is."""
    pg_backend, device, stage = "gloo", torch.device("cpu"), False
    if config.backend == "nccl":
        gpus = torch.cuda.device_count()
        if gpus == 0:
            raise ValueError("backend='nccl' needs CUDA GPUs, and torch sees none")
        device = torch.device("cuda", local_rank % gpus)
        torch.cuda.set_device(device)
        pg_backend, stage = ("cpu:gloo,cuda:nccl", False) if local_rank < gpus else ("gloo", True)
    if tdist.is_initialized():
        return str(tdist.get_backend()), device, stage, False
    tdist.init_process_group(pg_backend, init_method="env://",
                             timeout=timedelta(seconds=timeout + 30))
    return pg_backend, device, stage, True


def run_this_rank(places, program, args, config, group_table) -> LaunchOutcome:
    """Run the rank program for this process's rank (torchrun); every rank gets all results.
    What it installs (the call log's signal handler, the monitor thread, the stand-ins) is
    installed inside the ``try`` whose ``finally`` removes it; a default process group the
    script made is used and left as it was found."""
    try:
        return _run_this_rank(places, program, args, config, group_table)
    finally:
        # The rank's groups, held in reference cycles (transport, stand-ins), are freed now:
        # left to the interpreter's finalization, a gloo group's threads can abort it there.
        gc.collect()


def _run_this_rank(places, program, args, config, group_table) -> LaunchOutcome:
    os.environ.update(SAFE_ENV)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if world != len(places):
        raise ValueError(f"torchrun started WORLD_SIZE={world} ranks but the launch lays out "
                         f"{len(places)} (tp*pp*cp of every instance)")
    status, failure = FAILED, ("", "")
    logger = monitor = None
    made = False
    groups: dict = {}
    try:
        logger = call_log.start(config, rank, places)     # its SIGTERM handler: main thread
        pg_backend, device, stage, made = _default_group(config, local_rank, config.timeout)
        groups = build_groups(group_table, pg_backend, stage)
        ledger = StoreLedger(tdist.distributed_c10d._get_default_store(), rank, world)  # noqa: SLF001
        tdist.all_reduce(torch.zeros(1), group=groups["world"].obj)
        transport = TorchTransport(rank, call_log.logged_ledger(ledger, logger), groups,
                                   config.policy, device, ledger.abort, config.clock_model)
        dist = rank_distributed(places[rank], transport, logger, config)
        monitor = _Monitor(ledger, places, logger) if rank == 0 else None
        try:
            result = run_program(dist, config, lambda: (program, args))
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
        # Communicators left to the interpreter's exit can still have gloo's threads running
        # as it ends (SIGABRT, "terminate called without an active exception"): trtsim shuts
        # down what it made -- the default group, or only its own groups over the script's.
        _leave(groups, made)
    census: list[dict] = [{} for _ in range(world)]
    census[rank] = dict(dist.census)
    return LaunchOutcome(results, None, census, [],
                         [f"torchrun: rank {rank} of {world} (local rank {local_rank}), "
                          f"{pg_backend}" + ("" if made else ", the script's default group"),
                          *dist.notes])


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
