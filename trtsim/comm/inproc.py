"""The inproc backend: every rank of a launch in this process, one greenlet per rank.

Ranks switch cooperatively at every communication call: the rank posts its call and switches
to the hub, which picks the next rank to run among the runnable ones with a seeded RNG. The
interleaving is therefore a pure function of the seed, and so is everything a run reports.
A collective completes when every member has posted the same group sequence; the guard
compares records as they arrive, so the first divergent call is reported at once. When no rank
can run and some have not finished, the deadlock is exact: the wait-for analysis explains it.
"""

from __future__ import annotations

import random
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import greenlet
import torch

from .distributed import Distributed, RankPlace
from .errors import CollectiveError, CollectiveMismatch, CollectiveTimeout, RankFailed
from .guard import can_pair, check_group_call, differences
from .lockstep import LockstepTracker
from .records import CallRecord
from ..timeline.clock import ClockModel, RankClock, receive_time
from .semantics import execute, freeze, thaw
from .watchdog import DeadlineExpired, Watchdog
from .waitfor import BLOCKED, DONE, FAILED, RUNNING, RankState, deadlock_error, find_deadlock


@dataclass
class LaunchOutcome:
    """What a backend brings back from running every rank."""

    results: list[Any]
    error: CollectiveError | None = None
    census: list[dict] = field(default_factory=list)      # per rank: {(iter, kind, label): n}
    divergences: list = field(default_factory=list)        # lockstep.Divergence notes
    notes: list[str] = field(default_factory=list)         # what the backend chose and why
    extras: list[Any] = field(default_factory=list)        # per rank: backend-specific facts
    trace: list[tuple[int, CallRecord]] = field(default_factory=list)   # (step, record)
    clocks: list[list[tuple]] = field(default_factory=list)   # per rank: virtual-time events


class _Message:
    __slots__ = ("rec", "blob", "taken", "sender_waiting")

    def __init__(self, rec: CallRecord, blob: Any):
        self.rec, self.blob, self.taken, self.sender_waiting = rec, blob, False, False


class SendHandle:
    """The handle of a non-blocking send; ``wait()`` blocks until the receiver took it."""

    def __init__(self, transport: "_InprocTransport", msg: _Message):
        self._transport, self._msg = transport, msg

    def is_completed(self) -> bool:
        return self._msg.taken

    def wait(self) -> None:
        if not self._msg.taken:
            self._transport.wait_send(self._msg)


class _Receive:
    """A posted receive: matched with the next message of its channel, in posting order."""

    __slots__ = ("rank", "rec", "buffer", "done", "value", "waiting", "send_clock", "nbytes",
                 "is_tensor", "clocked")

    def __init__(self, rank: int, rec: CallRecord, buffer: Any):
        self.rank, self.rec, self.buffer = rank, rec, buffer
        self.done, self.value, self.waiting = False, None, False
        self.send_clock, self.nbytes, self.is_tensor, self.clocked = 0.0, 0, False, False


class RecvHandle:
    """The handle of a non-blocking receive; ``wait()`` blocks until the message arrived and
    returns it (the filled buffer for tensors)."""

    def __init__(self, transport: "_InprocTransport", recv: _Receive):
        self._transport, self._recv = transport, recv

    def is_completed(self) -> bool:
        return self._recv.done

    def wait(self) -> Any:
        value = self._transport.wait_recv(self._recv) if not self._recv.done else self._recv.value
        self._transport.clock_received(self._recv)
        return value


class _Unwind(BaseException):
    """Thrown into ranks that must stop because the launch is over."""


class InprocWorld:
    """Shared state of all ranks of one inproc launch, and the hub that schedules them."""

    def __init__(self, places: list[RankPlace], guard: str, seed: int, timeout: float,
                 lockstep_groups: dict, progress=None, trace: bool = False,
                 clock_model: ClockModel | None = None):
        self.places = places
        self.guard = guard
        self.rng = random.Random(seed)
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        n = len(places)
        self.status = [RUNNING] * n
        self.blocked_call: list[CallRecord | None] = [None] * n
        self.posted: list[dict] = [{} for _ in range(n)]
        self.iterations = {r: 0 for r in range(n)}
        self.finished: set[int] = set()
        self.pending: dict[tuple, dict[int, tuple[CallRecord, Any]]] = {}
        self.mailbox: dict[tuple, deque] = {}
        self.receivers: dict[tuple, tuple[int, CallRecord, Any]] = {}
        self.runnable: list[int] = []
        self.resume: dict[int, Any] = {}
        self.error: CollectiveError | None = None
        self.tracker = LockstepTracker(lockstep_groups) if guard != "off" else None
        self.steps = 0
        self.aborted = False
        self.progress = progress
        self.clock_model = clock_model or ClockModel()
        self.clocks = [RankClock() for _ in range(n)]
        self.trace: list[tuple[int, CallRecord]] | None = [] if trace else None
        self._last_progress = time.monotonic()

    # -- scheduling ----------------------------------------------------------------------
    def run(self, program: Callable, args: tuple) -> LaunchOutcome:
        hub = greenlet.getcurrent()
        self.hub = hub
        transports = [_InprocTransport(self, r) for r in range(len(self.places))]
        dists = [Distributed(p, t) for p, t in zip(self.places, transports)]
        results: list[Any] = [None] * len(dists)

        def rank_main(r: int):
            try:
                results[r] = program(dists[r], *args)
            except _Unwind:
                raise
            except DeadlineExpired:
                self.status[r] = FAILED
                self.error = self.error or self._timeout_error()
                return
            except BaseException as exc:  # a rank's failure is a report, not a crash
                self._fail(r, exc)
                return
            self.status[r] = DONE
            self.finished.add(r)
            self._progress(r, None)

        glets = [greenlet.greenlet(lambda *_, r=r: rank_main(r), parent=hub) for r in range(len(dists))]
        self.runnable = list(range(len(dists)))
        with Watchdog(self.timeout):
            try:
                self._schedule(glets)
            except DeadlineExpired:
                self.error = self.error or self._timeout_error()
            finally:
                self.aborted = True
                for g in glets:
                    if g and not g.dead:   # started and suspended: unwind its finally blocks
                        try:
                            g.throw(_Unwind)
                        except _Unwind:
                            pass
        return LaunchOutcome(results, self.error, [dict(d.census) for d in dists],
                             list(self.tracker.divergences) if self.tracker else [],
                             trace=self.trace or [], clocks=[c.events for c in self.clocks])

    def _schedule(self, glets: list) -> None:
        """Run ranks one switch at a time until all finish or a report stops the launch."""
        while self.runnable and self.error is None:
            r = self.runnable.pop(self.rng.randrange(len(self.runnable)))
            self.steps += 1
            glets[r].switch(self.resume.pop(r, None))
            if self.steps & 1023 == 0 and len(self.runnable) < len(glets) - len(self.finished):
                # Some ranks are blocked while others still run: a stuck set does not depend
                # on the running ranks, so it can be reported now instead of when they end.
                states = self.snapshot()
                stuck = find_deadlock(states)
                if stuck:
                    self.error = deadlock_error(states, stuck)
                    break
            if self.steps & 63 == 0:
                now = time.monotonic()
                if now > self.deadline:
                    self.error = self._timeout_error()
                elif self.progress is not None and now - self._last_progress >= 1.0:
                    self._last_progress = now
                    self.progress(f"iteration {max(self.iterations.values())}, "
                                  f"{len(self.finished)}/{len(glets)} ranks done, "
                                  f"{self.steps} switches")
        if self.error is None and len(self.finished) < len(glets):
            states = self.snapshot()
            stuck = find_deadlock(states)
            if not stuck:
                raise RuntimeError("inproc scheduler: no rank can run, yet none is stuck")
            self.error = deadlock_error(states, stuck)

    def _fail(self, r: int, exc: BaseException) -> None:
        self.status[r] = FAILED
        self.finished.add(r)
        if self.error is None:
            # The first frame is rank_main; the report starts at the rank program.
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next))
            name = self.places[r]
            who = f"{name.instance} rank {name.mapping.rank}" if name.instance else f"rank {r}"
            self.error = RankFailed(f"{who} raised {type(exc).__name__}: {exc}", rank=r,
                                    traceback=tb)

    def _timeout_error(self) -> CollectiveTimeout:
        states = self.snapshot()
        details = []
        for r, s in states.items():
            where = f" in {s.call.short()} at {s.call.callsite}" if s.call else ""
            details.append(f"rank {r}: {s.status}{where}")
        return CollectiveTimeout(f"launch timed out after {self.timeout:g} s",
                                 ranks=tuple(r for r, s in states.items() if not s.is_finished),
                                 details=tuple(details))

    def snapshot(self) -> dict[int, RankState]:
        pending_sends: dict[int, list] = {}
        for (src, dst, tag), queue in self.mailbox.items():
            for msg in queue:
                pending_sends.setdefault(src, []).append((dst, tag))
        return {r: RankState(r, self.status[r], self.blocked_call[r], self.posted[r],
                             tuple(pending_sends.get(r, ())), self.iterations[r],
                             self.places[r].name)
                for r in range(len(self.places))}

    def block(self, r: int, rec: CallRecord) -> Any:
        """Park rank ``r`` in ``rec`` until the call completes; returns the call's result."""
        self.status[r] = BLOCKED
        self.blocked_call[r] = rec
        return self.yield_to_hub()

    def yield_to_hub(self) -> Any:
        return self.hub.switch()

    def wake(self, r: int, value: Any) -> None:
        self.status[r] = RUNNING
        self.blocked_call[r] = None
        self.resume[r] = value
        self.runnable.append(r)

    def _progress(self, r: int, iteration: int | None) -> None:
        if self.tracker is not None:
            self.tracker.on_progress(r, iteration)
            self._lockstep_verdict()

    def _lockstep_verdict(self) -> None:
        if self.guard == "lockstep" and self.error is None and self.tracker.divergences:
            self.error = self.tracker.first_mismatch()

    # -- collectives ---------------------------------------------------------------------
    def post_collective(self, r: int, rec: CallRecord, payload: Any) -> Any:
        key = (rec.group_key, rec.seq)
        posts = self.pending.setdefault(key, {})
        if posts:
            first_rec = next(iter(posts.values()))[0]
            diff = differences(first_rec, rec)
            if diff and (self.guard != "off" or not can_pair(first_rec, rec)):
                records = {x: p[0] for x, p in posts.items()}
                records[r] = rec
                self.error = check_group_call(records)   # lowest rank as the reference
                if self.guard == "off":
                    self.error.summary += " (guard off: no communicator can pair these calls)"
        posts[r] = (rec, payload)
        if self.trace is not None:
            self.trace.append((self.steps, rec))
        self.posted[r][rec.group_key] = rec.seq
        if self.tracker is not None:
            self.tracker.on_call(rec)
            self._lockstep_verdict()
        if self.error is not None:
            return self.block(r, rec)     # the hub stops; this rank is unwound
        if len(posts) == len(rec.group_ranks):
            del self.pending[key]
            members = rec.group_ranks
            self._complete_clocks(rec, posts)
            results = execute(rec.op, [posts[m][1] for m in members], rec.root, rec.reduce_op)
            for m, value in zip(members, results):
                if m != r:
                    self.wake(m, value)
            self.wake(r, results[members.index(r)])
            return self.yield_to_hub()
        return self.block(r, rec)

    def _complete_clocks(self, rec: CallRecord, posts: dict) -> None:
        """Every member leaves the collective at the latest arrival plus its cost."""
        arrivals = {m: p[0].clock for m, p in posts.items()}
        payload = posts[rec.rank][1]
        nbytes = payload.numel() * payload.element_size() if hasattr(payload, "numel") else 0
        cost = self.clock_model.collective_cost(rec.op, len(arrivals), rec.signature, nbytes)
        last_rank = max(sorted(arrivals), key=lambda m: arrivals[m])
        end = arrivals[last_rank] + cost
        call = rec.short()
        for m, arrival in arrivals.items():
            self.clocks[m].finish_call(arrival, end, call, last_rank if m != last_rank
                                       else None, end - cost)

    def received(self, r: int, recv: "_Receive") -> None:
        """The receiver's clock after a p2p message: the later of its own arrival and the
        send plus the transfer."""
        clock = self.clocks[r]
        arrival = clock.now
        ready = recv.send_clock + self.clock_model.transfer_time(recv.nbytes, recv.is_tensor)
        end = receive_time(arrival, recv.send_clock, ready - recv.send_clock)
        clock.finish_call(arrival, end, recv.rec.short(), recv.rec.peer if ready > arrival else None,
                          end, kind="p2p")

    # -- point to point ------------------------------------------------------------------
    def post_send(self, r: int, rec: CallRecord, payload: Any, blocking: bool,
                  transport: "_InprocTransport"):
        channel = (r, rec.peer, rec.tag)
        msg = _Message(rec, freeze(payload))
        if self.trace is not None:
            self.trace.append((self.steps, rec))
        receivers = self.receivers.get(channel)
        if receivers:
            recv = receivers.popleft()
            if not receivers:
                del self.receivers[channel]
            self._deliver(msg, recv)
        else:
            self.mailbox.setdefault(channel, deque()).append(msg)
        if self.error is not None:
            return self.block(r, rec)
        if not blocking:
            self.wake(r, SendHandle(transport, msg))
            return self.yield_to_hub()
        if msg.taken:
            self.wake(r, None)
            return self.yield_to_hub()
        msg.sender_waiting = True
        return self.block(r, rec)

    def wait_send(self, r: int, msg: _Message) -> None:
        msg.sender_waiting = True
        self.block(r, msg.rec)

    def post_recv(self, r: int, rec: CallRecord, buffer: Any, blocking: bool,
                  transport: "_InprocTransport") -> Any:
        recv = _Receive(r, rec, buffer)
        transport._last_recv = recv
        channel = (rec.peer, r, rec.tag)
        if self.trace is not None:
            self.trace.append((self.steps, rec))
        queue = self.mailbox.get(channel)
        if queue:
            msg = queue.popleft()
            if not queue:
                del self.mailbox[channel]
            self._deliver(msg, recv)
        else:
            self.receivers.setdefault(channel, deque()).append(recv)
        if self.error is not None:
            return self.block(r, rec)
        if not blocking:
            self.wake(r, RecvHandle(transport, recv))
            return self.yield_to_hub()
        if recv.done:
            self.wake(r, recv.value)
            return self.yield_to_hub()
        return self.wait_recv(r, recv)

    def wait_recv(self, r: int, recv: "_Receive") -> Any:
        recv.waiting = True
        return self.block(r, recv.rec)

    def _deliver(self, msg: _Message, recv: "_Receive") -> None:
        """Hand ``msg`` to a posted receive and release whoever waits on either side."""
        msg.taken = True
        rec = recv.rec
        if msg.rec.signature != rec.signature:
            self.error = CollectiveMismatch(
                f"p2p {msg.rec.op} -> {rec.op}: the payloads differ ({msg.rec.signature} sent, "
                f"{rec.signature} expected)", group_kind="p2p", group_ranks=rec.group_ranks,
                ranks=(msg.rec.rank, recv.rank), calls={msg.rec.rank: msg.rec, recv.rank: rec},
                explanation="the receive buffer does not fit the sent tensor")
            return
        value = thaw(msg.blob)
        recv.send_clock = msg.rec.clock
        recv.is_tensor = isinstance(value, torch.Tensor)
        recv.nbytes = value.numel() * value.element_size() if recv.is_tensor else 0
        if recv.buffer is not None and rec.op.endswith("tensor"):
            recv.buffer.copy_(value)
            value = recv.buffer
        recv.done, recv.value = True, value
        if recv.waiting:
            self.wake(recv.rank, value)
        if msg.sender_waiting:
            self.wake(msg.rec.rank, None)

    def set_iteration(self, r: int, iteration: int) -> None:
        if self.iterations[r] != iteration:
            self.iterations[r] = iteration
            self._progress(r, iteration)


class _InprocTransport:
    """One rank's view of the world (the Transport of its Distributed)."""

    def __init__(self, world: InprocWorld, rank: int):
        self.world, self.rank = world, rank
        self._last_recv: _Receive | None = None    # the receive a blocking recv just posted

    def _check(self) -> None:
        if self.world.aborted:
            raise _Unwind()

    def collective(self, rec: CallRecord, payload: Any) -> Any:
        self._check()
        return self.world.post_collective(self.rank, rec, payload)

    def send(self, rec: CallRecord, payload: Any, blocking: bool):
        self._check()
        return self.world.post_send(self.rank, rec, payload, blocking, self)

    def wait_send(self, msg: _Message) -> None:
        self._check()
        self.world.wait_send(self.rank, msg)

    @property
    def clock(self) -> RankClock:
        return self.world.clocks[self.rank]

    def recv(self, rec: CallRecord, buffer: Any, blocking: bool = True) -> Any:
        self._check()
        value = self.world.post_recv(self.rank, rec, buffer, blocking, self)
        if blocking:
            self.clock_received(self._last_recv)
        return value

    def clock_received(self, recv: _Receive) -> None:
        if not recv.clocked:
            recv.clocked = True
            self.world.received(self.rank, recv)

    def wait_recv(self, recv: _Receive) -> Any:
        self._check()
        return self.world.wait_recv(self.rank, recv)

    def set_iteration(self, iteration: int) -> None:
        self._check()
        self.world.set_iteration(self.rank, iteration)

    def delay(self, seconds: float) -> None:
        """A slow rank: it gives up its turn one scheduling tick per millisecond, so every
        other runnable rank may move first (deterministic in the seed, no wall time)."""
        for _ in range(max(1, round(seconds * 1000))):
            self._check()
            self.world.wake(self.rank, None)
            self.world.yield_to_hub()
