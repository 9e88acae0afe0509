"""The launcher side of the process backend: spawn one process per rank, watch, tear down.

The launcher owns the rendezvous store, the shared-memory ledger and a result queue. Its
loop takes results and reports from the queue, polls the deadlock monitor, notices ranks that
died without a word (a signal, or an exit before the result: see ``culprit``), and enforces
the timeout. Whatever ends the launch -- a report, a failure, the timeout, Ctrl-C -- the
teardown ends every rank process, releases the shared memory and the store, and only then
does the launcher raise. If the launcher itself dies, its ranks follow (``lifeline``).
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import queue as queue_mod
import time
from dataclasses import replace
from multiprocessing import forkserver, resource_tracker
from typing import Any, Callable

import torch

from ...layout.places import RankPlace
from ...calls.errors import CollectiveError, CollectiveTimeout, RankFailed
from ...guard.lockstep import replay_lockstep
from ...guard.waitfor import RankStatus, timeout_error
from ...comm.outcome import LaunchOutcome
from . import lifeline, rank_group
from .culprit import CAUSE_WAIT_S, exit_report, with_consequence
from .interrupts import DeferredInterrupts, interrupts_held
from .main_guard import refuse_unguarded_launch
from .ledger import ITERATION, READY_NS, Ledger
from .monitor import DeadlockMonitor
from .store import LOOPBACK, serve_store
from .rank_main import failed_report, rank_main
from .rank_messages import (GroupAnnounced, RankFinished, RankMessage, RankRaised,
                            RankReported)


def device_plan(backend: str, num_ranks: int) -> tuple[dict, list[str]]:
    """Which process-group backend and device each rank gets, and a note of any fallback."""
    if backend == "gloo":
        return {"pg_backend": "gloo", "stage_cuda": False, "devices": ["cpu"] * num_ranks}, []
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus == 0:
        raise ValueError("backend='nccl' needs CUDA GPUs, and torch sees none; use "
                         "backend='gloo' or 'inproc'")
    devices = [f"cuda:{r % gpus}" for r in range(num_ranks)]
    if gpus >= num_ranks:
        return {"pg_backend": "cpu:gloo,cuda:nccl", "stage_cuda": False, "devices": devices}, [
            f"nccl: {num_ranks} ranks on {gpus} GPUs, one GPU per rank; host objects over gloo"]
    return {"pg_backend": "gloo", "stage_cuda": True, "devices": devices}, [
        f"nccl: {num_ranks} ranks but {gpus} GPU(s): NCCL refuses two ranks on one GPU, so the "
        f"control plane and tensors go over gloo and ranks share the GPUs "
        f"(rank r -> cuda:r mod {gpus})"]


def _context():
    """Fork-server processes with torch imported once: each rank forks from a warm server
    instead of importing torch itself (seconds per rank on a small machine). The server never
    touches CUDA, so forked ranks may initialise it. Each rank imports the launching script
    again (as ``__mp_main__``), and a script imports trtsim's launch at its top: the server has
    it too (``trtsim.launching`` and what it pulls in, 62 modules: 40 ms a rank otherwise)."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed", "trtsim.backends.process.rank_main",
                                "trtsim.launching"])
    return ctx


def _picklable(what: str, obj: Any, backend: str) -> bytes:
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"backend={backend!r} runs ranks in spawned processes: the {what} must "
                         f"be picklable (a module-level function, plain data): "
                         f"{type(exc).__name__}: {exc}") from exc


def run_processes(places: list[RankPlace], program: Callable, args: tuple, config,
                  group_table: dict, progress=None) -> LaunchOutcome:
    """Run ``program(dist, *args)`` in one spawned process per rank."""
    refuse_unguarded_launch()
    program_blob = _picklable("rank program", program, config.backend)
    args_blob = _picklable("args", args, config.backend)
    n = len(places)
    plan, notes = device_plan(config.backend, n)
    ctx = _context()
    ledger = store = results_q = None
    procs: list = []
    start_ns = time.monotonic_ns()
    try:
        with DeferredInterrupts() as interrupts:     # Ctrl-C: raised at the block's end
            resource_tracker.ensure_running()    # CPython holds SIGINT while it starts
            with interrupts_held():                  # the fork server, here, so every rank
                forkserver.ensure_running()          # knows its parent
            server = lifeline.server_pid()
            wakeups = [ctx.Semaphore(0) for _ in range(n)]
            ledger = Ledger.create(n, wakeups)
            store = serve_store(n + 1, 60.0)         # 127.0.0.1 only: the ranks are here
            results_q = ctx.Queue()
            for r in range(n):
                if interrupts.seen:
                    break
                p = ctx.Process(target=rank_main, name=f"trtsim-rank{r}", daemon=True, args=(
                    r, places, group_table, program_blob, args_blob, config, plan,
                    (LOOPBACK, store.port), ledger.name, results_q, wakeups, server))
                p.start()
                procs.append(p)
        monitor = DeadlockMonitor(ledger, places)
        watch = _Watch(places, procs, results_q, ledger, monitor, config, group_table, progress)
        outcome = watch.run()
        outcome.extras = [{"pid": procs[r].pid,
                           "ready_s": (int(ledger.state[r, READY_NS]) - start_ns) / 1e9
                           if ledger.state[r, READY_NS] else None} for r in range(n)]
        outcome.notes = notes + outcome.notes
        return outcome
    finally:
        with DeferredInterrupts():                   # a teardown cut short leaves ranks
            _tear_down(ledger, procs, results_q)
            del store


def _tear_down(ledger, procs: list, results_q) -> None:
    """End the ranks, then release what they shared (whatever of it was made)."""
    if ledger is not None:
        ledger.abort()
    _end_all(procs)
    if results_q is not None:
        results_q.close()
        results_q.cancel_join_thread()
    if ledger is not None:
        ledger.close()


class _Watch:
    """The launcher's loop over results, reports, deaths, deadlocks and the clock."""

    def __init__(self, places, procs, results_q, ledger: Ledger, monitor: DeadlockMonitor,
                 config, groups: dict, progress=None):
        self.places, self.procs, self.q, self.monitor, self.config = places, procs, results_q, \
            monitor, config
        self.ledger = ledger                  # the launcher's own: progress and group digests
        self.groups = groups
        self.progress = progress
        n = len(places)
        self.results: list[Any] = [None] * n
        self.census: list[dict] = [{} for _ in range(n)]
        self.logs: list[list] = [[] for _ in range(n)]
        self.clocks: list[list] = [[] for _ in range(n)]
        self.done: set[int] = set()
        self.notes: list[str] = []                # the ranks' own (``Distributed.note``)
        self.error: CollectiveError | None = None
        self.held: RankFailed | None = None       # a lost connection, waiting for its cause
        self.held_until = 0.0

    def run(self) -> LaunchOutcome:
        deadline = time.monotonic() + self.config.timeout
        last_progress = time.monotonic()
        n = len(self.places)
        while len(self.done) < n and self.error is None:
            if not self._take(timeout=0.01):
                self.error = self._dead_rank() or self.monitor.poll()
            now = time.monotonic()
            if self.error is None and self.held is not None and now > self.held_until:
                self.error = self.held          # its cause never showed: report it as is
            if self.error is None and now > deadline:
                self.error = self._timeout()
            if self.progress is not None and now - last_progress >= 1.0:
                last_progress = now
                its = self.ledger.state[:, ITERATION]
                self.progress(f"iteration {int(its.max())}, {len(self.done)}/{n} ranks done")
        policy = self.config.policy
        divergences, lock_err = replay_lockstep(self.groups, self.logs) \
            if policy.tracks_groups else ([], None)
        if lock_err is not None and policy.divergence_fails:
            self.error = lock_err            # the root cause under the lockstep assumption
        return LaunchOutcome(self.results, self.error, self.census, divergences,
                             notes=self.notes, clocks=self.clocks)

    def _take(self, timeout: float) -> bool:
        try:
            msg: RankMessage = self.q.get(timeout=timeout)
        except queue_mod.Empty:
            return False
        match msg:
            case RankFinished(rank, result, census, log, clocks, notes):
                self.results[rank] = pickle.loads(result)
                self.census[rank], self.logs[rank], self.clocks[rank] = census, log, clocks
                self.notes.extend(n for n in notes if n not in self.notes)
                self.done.add(rank)
            case RankRaised(rank, message, tb, peer_loss):
                self._raised(failed_report(rank, self.places, message, tb), peer_loss)
            case RankReported(_, report):
                self.error = self.error or pickle.loads(report)
            case GroupAnnounced(_, digest, ranks):   # a group its slots name by digest only
                self.ledger.learn_group(digest, ranks)
            case _:
                raise TypeError(f"a rank sent {type(msg).__name__}, which is no rank message")
        return True

    def _raised(self, failure: RankFailed, peer_loss: bool) -> None:
        """A rank's program raised: the failure is the report, unless a rank already died
        (its cause) or it is a lost connection whose cause may yet show (held back)."""
        cause = self._exited()
        if cause is not None:
            self.error = self.error or with_consequence(cause, failure)
        elif peer_loss:
            if self.held is None:
                self.held, self.held_until = failure, time.monotonic() + CAUSE_WAIT_S
        else:
            self.error = self.error or failure

    def _exited(self) -> RankFailed | None:
        """A rank whose process already ended without a result, named as the cause."""
        for r, p in enumerate(self.procs):
            if r not in self.done and p.exitcode is not None:
                return exit_report(self.places[r].name, r, p.exitcode)
        return None

    def _dead_rank(self) -> CollectiveError | None:
        for r, p in enumerate(self.procs):
            if r in self.done or p.exitcode is None:
                continue
            # It may have exited right after sending its message: drain before judging.
            while self._take(timeout=0.0):      # what it wrote before it died is there now
                if self.error is not None or r in self.done:
                    return self.error if self.error is not None else None
            if r in self.done:
                continue
            return with_consequence(exit_report(self.places[r].name, r, p.exitcode), self.held)
        return None

    def _timeout(self) -> CollectiveTimeout:
        states = self.monitor.states()
        for r, p in enumerate(self.procs):     # the ledger cannot tell: the rank is not running
            if r in states and not states[r].is_finished and rank_group.is_stopped(p.pid):
                states[r] = replace(states[r], status=RankStatus.STOPPED)
        return timeout_error(states, self.config.timeout)


def _end_all(procs: list) -> None:
    """Terminate, then kill, every rank process still alive, and reap them all; then end
    what is left of each rank's process group (what the rank started: ``rank_group``)."""
    for p in procs:
        if p.is_alive():
            p.terminate()
            rank_group.wake(p.pid)          # a stopped rank must run to act on SIGTERM
    stop = time.monotonic() + 2.0
    for p in procs:
        p.join(max(0.0, stop - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join(2.0)
    for p in procs:
        if p.pid is not None:
            rank_group.end_group(p.pid)
