"""The inproc world: every rank of a launch in this process, composed from a scheduling
kernel and two resources (the collective rendezvous, the p2p mailbox).

The world owns what the run observes (clocks, the call trace, the lockstep tracker, each
rank's iteration) and turns the kernel's state into reports: a deadlock is exact here, since
the wait graph sees every block and finish; the wait-for analysis explains it.

A launch that intercepts torch.distributed runs its ranks as threads with a baton (native
code may wait there, ``runners``) and gives each its own c10d world, with trtsim's backend
registered in torch (``c10d_world``, ``c10d_group``). ``rank_local`` modules get per-rank
globals, swapped at every hand-over (``rank_local``).
"""

from __future__ import annotations

import contextlib
import functools
import time
from typing import Any, Callable

from ...layout.places import RankPlace
from ...timeline.clock import ClockModel, RankClock
from ...comm.distributed import Distributed
from ...calls.errors import RankFailed, SchedulerStalled
from ...guard.lockstep import LockstepTracker
from ...guard.waitgraph import CallKeys, WaitGraph
from ...guard.waitfor import FAILED, RankState, deadlock_error, find_deadlock, timeout_error
from ... import intercept
from ...comm import markers
from ...comm.current import bind
from ...comm.gate_control import installed as gates_installed
from ...comm.gate_watch import watch_gates
from ...comm.origin import OriginFinder, call_rank_program, program_traceback, where_stopped
from ...comm.outcome import LaunchOutcome
from ...calls.records import CallRecord
from .kernel import Kernel, Unwind
from .mailbox import Mailbox
from . import rank_local
from .rendezvous import Rendezvous
from .transport import InprocTransport
from .watchdog import DeadlineExpired, Watchdog


# Switches the other ranks may still make between a stuck set forming and its report.
SETTLE_SWITCHES = 1024


def _ignore(rec: CallRecord) -> None:
    pass


def _shared(groups: dict, places: list[RankPlace]) -> dict:
    """The group table with each group as the one tuple its members' records carry: keys
    that hold the same object compare in O(1), equal copies element by element (O(group)
    on every lookup of a call's group)."""
    one: dict = {}
    for place in places:
        for g in (place.shared_groups or place.groups()).values():
            one.setdefault(g, g)
    return {k: [one.get(g, g) for g in gs] for k, gs in groups.items()}


class InprocWorld:
    """One inproc launch: build the ranks, run them, report."""

    def __init__(self, places: list[RankPlace], config, groups: dict, progress=None):
        self.places = places
        self.config = config
        self.policy = config.policy
        n = len(places)
        self.threads = "torch" in config.intercept
        self.kernel = Kernel(n, config.seed, config.timeout, threads=self.threads)
        self.clock_model = config.clock_model or ClockModel()
        self.clocks = [RankClock() for _ in range(n)]
        self.trace: list[tuple[int, CallRecord]] | None = [] if config.trace else None
        self.tracker = LockstepTracker(_shared(groups, places)) if self.policy.tracks_groups \
            else None
        if self.trace is not None:
            on_collective = self._on_collective
        else:                     # the hot path: the tracker's own method, or nothing
            on_collective = self.tracker.on_call if self.tracker else _ignore
        keys = CallKeys()
        self.waits = WaitGraph(self.kernel.status, self.kernel.blocked_call, keys.of)
        self.kernel.on_block = self._on_block
        self.kernel.on_finish = self._on_finish
        self.kernel.on_start_failed = self._start_failed
        self.rendezvous = Rendezvous(self.kernel, self.policy, self.clocks, self.clock_model,
                                     on_collective, self.waits,
                                     openers_only=self.trace is None, keys=keys)
        self.mailbox = Mailbox(self.kernel, self.clocks, self.clock_model, self._on_p2p)
        self.iterations = {r: 0 for r in range(n)}
        self.progress = progress
        self._last_progress = time.monotonic()
        self._stopped: dict[int, str] = {}   # rank -> where the deadline found it, outside
        self._stuck_at: int | None = None     # the switch at which a stuck set formed

    # -- observation hooks ---------------------------------------------------------------
    def _on_p2p(self, rec: CallRecord) -> None:
        if self.trace is not None:
            self.trace.append((self.kernel.steps, rec))

    def _on_collective(self, rec: CallRecord) -> None:
        if self.trace is not None:
            self.trace.append((self.kernel.steps, rec))
        if self.tracker is not None:
            self.tracker.on_call(rec)

    def _on_iteration(self, r: int, iteration: int | None) -> None:
        """Rank ``r`` set its iteration (None: it finished). Its transport's
        ``set_iteration``: a launch that is over stops the rank here (``Kernel.check``)."""
        if iteration is not None:
            if self.kernel.aborted:
                raise Unwind()
            if self.iterations[r] == iteration:
                return
            self.iterations[r] = iteration
        if self.tracker is not None:
            self.tracker.on_progress(r, iteration)

    # -- the run -------------------------------------------------------------------------
    def run(self, program: Callable, args: tuple) -> LaunchOutcome:
        kernel = self.kernel
        finders = [OriginFinder(self.config.wrappers) for _ in self.places]
        dists = [Distributed(p, InprocTransport(r, kernel, self.rendezvous, self.mailbox,
                                                self.clocks[r], self._on_iteration), finders[r])
                 for r, p in enumerate(self.places)]
        results: list[Any] = [None] * len(dists)

        def rank_main(r: int) -> None:
            bind(dists[r])                   # this greenlet's own context
            interception.attach(dists[r])
            try:
                results[r] = call_rank_program(program, dists[r], args)
            except (Unwind, KeyboardInterrupt):
                raise                        # Ctrl-C ends the launch; it is no rank's failure
            except DeadlineExpired as exc:   # stopped outside the communicator: blocked there
                self._stopped[r] = where_stopped(exc)
                self._at_deadline()
                return
            except BaseException as exc:  # a rank's failure is a report, not a crash
                self._fail(r, exc)
                return
            finally:
                finders[r].release()         # the frames it remembers end with the rank
            kernel.finish(r)
            self._on_iteration(r, None)

        with contextlib.ExitStack() as stack:
            # threads: the runner keeps the deadline itself, and interrupts the running rank
            if not self.threads:
                stack.enter_context(Watchdog(self.config.timeout))
            stack.enter_context(markers.installed(self.config.iteration_marker))
            board = watch_gates(dists, self.config,
                                stack.enter_context(gates_installed(self.config, program)))
            interception = stack.enter_context(
                intercept.installed(self.config.intercept, self._inproc_torch(stack)))
            modules = stack.enter_context(rank_local.installed(
                self.config.rank_local, len(dists), interception.standins()))
            kernel.on_switch = modules.switch_to if modules is not None else None
            try:
                kernel.run([functools.partial(rank_main, r) for r in range(len(dists))],
                           self._check_clock, self._idle, on_timeout=DeadlineExpired)
            except DeadlineExpired:
                self._at_deadline()
        error = kernel.error
        if self.tracker is not None and self.policy.divergence_fails \
                and self.tracker.divergences:
            # Under the lockstep assumption the earliest divergence is the root cause, even
            # when the run went on to fail per group.
            error = self.tracker.first_mismatch()
        return LaunchOutcome(results, error, [dict(d.census) for d in dists],
                             self.tracker.notes() if self.tracker else [],
                             notes=list(dict.fromkeys(n for d in dists for n in d.notes)),
                             trace=self.trace or [], clocks=[c.events for c in self.clocks],
                             latent=board.latent() if board is not None else [])

    def _inproc_torch(self, stack: contextlib.ExitStack):
        """What intercepted torch.distributed gets on inproc: real c10d groups of trtsim's
        backend in a c10d world per rank, and the launch's store (None without "torch")."""
        if not self.threads:
            return None
        from ...intercept import InprocTorch
        from . import c10d_group, c10d_store, c10d_world
        c10d_group.register()
        stack.enter_context(c10d_world.installed())
        kernel = self.kernel

        def wait_turn() -> None:
            from ...comm.current import current
            kernel.check()
            dist = current()
            if dist is None:
                raise RuntimeError("an inproc store wait outside a launched rank")
            kernel.step_aside(dist.global_rank)
        return InprocTorch(c10d_group.BACKEND, c10d_store.InprocStore(wait_turn, kernel),
                           c10d_world.RankWorld)

    # The wait graph notices a stuck set the moment it forms, whatever the other ranks do.
    # The report waits until they have run on -- until no rank can run, or SETTLE_SWITCHES
    # more switches -- so that the ranks about to join the set have joined it, and the report
    # does not depend on the schedule; a rank that spins, or a long tail of unrelated work,
    # delays it by no more than that.
    def _on_block(self, r: int) -> None:
        if self._stuck_at is None and self.waits.stuck_after_block(r):
            self._stuck_at = self.kernel.steps

    def _on_finish(self, r: int) -> None:
        if self._stuck_at is None and self.waits.stuck_after_finish(r):
            self._stuck_at = self.kernel.steps

    def _find_deadlock(self, states: dict[int, RankState]) -> dict[int, tuple[int, ...]]:
        return find_deadlock(states, lambda s: self.waits.waits_in(s, states))

    def _check_deadlock(self) -> None:
        states = self.snapshot()
        stuck = self._find_deadlock(states)
        if stuck:
            self.kernel.report(deadlock_error(states, stuck))
        else:                # never, if the graph and the analysis agree (tests/test_waitgraph.py)
            self._stuck_at = None

    def _check_clock(self) -> None:
        now = time.monotonic()
        if self._stuck_at is not None and self.kernel.steps - self._stuck_at >= SETTLE_SWITCHES:
            self._check_deadlock()
        elif now > self.kernel.deadline:
            self._at_deadline()
        elif self.progress is not None and now - self._last_progress >= 1.0:
            self._last_progress = now
            self.progress(f"iteration {max(self.iterations.values())}, "
                          f"{len(self.kernel.finished)}/{len(self.places)} ranks done, "
                          f"{self.kernel.steps} switches")

    def _at_deadline(self) -> None:
        """The deadline passed: a stuck set found before it is the report, else the timeout
        (the kernel keeps the first report)."""
        if self._stuck_at is not None:
            self._check_deadlock()
        self.kernel.report(self._timeout_error())

    def _idle(self) -> None:
        states = self.snapshot()
        stuck = self._find_deadlock(states)
        if not stuck:
            raise SchedulerStalled("inproc scheduler: no rank can run, yet none is stuck")
        self.kernel.report(deadlock_error(states, stuck))

    def _fail(self, r: int, exc: BaseException) -> None:
        tb = program_traceback(exc)
        self.kernel.report(RankFailed(f"{self.places[r].name} raised {type(exc).__name__}: {exc}",
                                      rank=r, traceback=tb))
        self.kernel.finish(r, FAILED)        # after the report: the failure is the cause

    def _start_failed(self, r: int, exc: BaseException) -> None:
        """Rank ``r``'s thread could not start: its failure, with no program frames to show."""
        self.kernel.report(RankFailed(f"{self.places[r].name}: {exc}", rank=r))
        self.kernel.finish(r, FAILED)

    def _timeout_error(self):
        return timeout_error(self.snapshot(), self.config.timeout, self._stopped)

    def snapshot(self) -> dict[int, RankState]:
        """Every rank's state as the wait-for analysis reads it."""
        kernel = self.kernel
        pending = self.mailbox.pending_sends()
        return {r: RankState(r, kernel.status[r], kernel.blocked_call[r],
                             self.rendezvous.posted_by(r), tuple(pending.get(r, ())),
                             self.iterations[r], self.places[r].name)
                for r in range(len(self.places))}
