"""The scheduling kernel of the inproc backend: it only schedules and steps.

Every rank is a greenlet, or a thread holding a baton (``runners``). A rank runs until it
blocks in a resource (a collective rendezvous, a p2p mailbox) or yields its turn; then the hub
picks the next runnable rank with a seeded RNG, so the interleaving is a pure function of the
seed, whichever runner carries it. Resources park ranks with ``block`` and release them with
``wake``; the kernel knows nothing of what they wait for. ``on_switch`` runs in the hub before
a rank gets the turn (per-rank module state is swapped there).
"""

from __future__ import annotations

import contextlib
import gc
import random
import time
from typing import Any, Callable

from ...calls.errors import CollectiveError
from ...guard.waitfor import BLOCKED, DONE, FAILED, RUNNING, RankStatus
from ...calls.records import CallRecord
from .runners import GreenletRunner, ThreadRunner, ThreadStartFailed, Unwind


class Kernel:
    """Runnable set, seeded choice, block/wake, the first report, the deadline.
    ``threads``: ranks run as threads with a baton rather than greenlets (``runners``)."""

    def __init__(self, num_ranks: int, seed: int, timeout: float, threads: bool = False):
        self.rng = random.Random(seed)
        self.deadline = time.monotonic() + timeout
        self.status = [RUNNING] * num_ranks
        self.blocked_call: list[CallRecord | None] = [None] * num_ranks
        self.finished: set[int] = set()
        self.runnable: list[int] = []
        self.resume: dict[int, Any] = {}
        self.error: CollectiveError | None = None
        self.steps = 0
        self.aborted = False
        self.threads = threads
        self.runner: GreenletRunner | ThreadRunner | None = None
        self._turn_ended = False          # a rank passed the turn back to the hub itself
        self._expired = False             # the deadline fired while a rank passed the turn
        self._handoff: int | None = None  # a rank picked by ``_pass_turn`` for the hub to start
        self._fresh: set[int] = set()     # ranks never resumed yet
        # Give the turn back to the hub (a rank calls it); the runner's own suspend once
        # ``run`` has made it: one call less on every block.
        self.yield_to_hub: Callable[[], Any] = _not_running
        self.on_switch: Callable[[int], None] | None = None
        # Called as a rank stops being able to run (it blocked in a call, or finished), while
        # no report has stopped the launch yet: where the deadlock checks hook in.
        self.on_block: Callable[[int], None] | None = None
        self.on_finish: Callable[[int], None] | None = None
        # Called when a rank's thread cannot start (threads only): its failure is reported.
        self.on_start_failed: Callable[[int, BaseException], None] | None = None

    # -- what resources and ranks call --------------------------------------------------
    def block(self, r: int, rec: CallRecord) -> Any:
        """Park rank ``r`` in ``rec`` until a resource wakes it; returns the wake value."""
        self.status[r] = BLOCKED
        self.blocked_call[r] = rec
        if self.on_block is not None and self.error is None:
            self.on_block(r)
        return self.yield_to_hub()

    def wake(self, r: int, value: Any = None) -> None:
        self.status[r] = RUNNING
        self.blocked_call[r] = None
        self.resume[r] = value
        self.runnable.append(r)

    def step_aside(self, r: int) -> None:
        """Give up the turn: every other runnable rank may move first."""
        self.wake(r)
        self.yield_to_hub()

    def report(self, err: CollectiveError) -> None:
        """The first report stops the launch; later ones are consequences."""
        if self.error is None:
            self.error = err

    def finish(self, r: int, status: RankStatus = DONE) -> None:
        self.status[r] = status
        self.finished.add(r)
        if self.on_finish is not None and self.error is None:
            self.on_finish(r)

    # -- the hub ------------------------------------------------------------------------
    def run(self, mains: list[Callable[[], None]], every_64: Callable[[], None],
            on_idle: Callable[[], None], on_timeout: type[BaseException] = TimeoutError) -> None:
        """Run the rank mains one switch at a time until all finish or a report stops the
        launch. ``every_64`` runs after that many switches (the clock, progress);
        ``on_idle`` when no rank can run but some have not finished. They report through
        ``report``. ``on_timeout``: what a rank thread that holds the baton past the deadline
        is interrupted with."""
        if self.threads:
            self.runner = ThreadRunner(mains, self.deadline, on_timeout)
        else:
            self.runner = GreenletRunner(mains)
        self._resumers, self._every_64, self._on_timeout = (self.runner.resumers, every_64,
                                                            on_timeout)
        self._hub_switch = self.runner.suspend
        # Greenlets pass the turn from rank to rank (``_pass_turn``): one switch per turn, not
        # two through the hub. Threads go through the hub, which keeps the deadline.
        self.yield_to_hub = self.runner.suspend if self.threads else self._pass_turn
        self.runnable = list(range(len(mains)))
        self._getrandbits = self.rng.getrandbits
        self._fresh = set(self.runnable)
        try:
            with _collector_tuned(len(mains)):
                while True:
                    if self._handoff is not None:     # picked by a rank, started from here
                        r, self._handoff = self._handoff, None
                    elif self.runnable and self.error is None:
                        r = self._pick()
                    else:
                        break
                    self._fresh.discard(r)
                    try:
                        self._resumers[r](self.resume.pop(r, None))
                    except ThreadStartFailed as exc:    # the rank's failure, not the hub's
                        if self.on_start_failed is None:
                            raise
                        self.on_start_failed(r, exc)
                    if self._expired:
                        raise on_timeout()
                    if self._turn_ended:        # a rank ended the turn and came back here
                        self._turn_ended = False
                    elif self.steps & 63 == 0 and self.error is None:
                        every_64()              # a rank finished: its turn ends here
            if self.error is None and not self.all_finished:
                on_idle()
        finally:
            self.aborted = True
            self.runner.unwind(self.on_switch or _nothing)

    def _pick(self) -> int:
        """The next rank to run, taken off the runnable list by the seeded RNG (a switch)."""
        runnable = self.runnable
        # random.randrange(n), inlined (the same draws, so the same schedule)
        n = len(runnable)
        k = n.bit_length()
        i = self._getrandbits(k)
        while i >= n:
            i = self._getrandbits(k)
        r = runnable.pop(i)
        self.steps += 1
        if self.on_switch is not None:
            self.on_switch(r)
        return r

    def _pass_turn(self) -> Any:
        """A greenlet rank ends its turn: what the hub would do next -- the check every 64
        switches, the seeded choice of the next rank -- done here, and a switch straight to
        that rank (maybe this one). Returns the value this rank is resumed with. Back to the
        hub when no rank can run or a report stopped the launch."""
        try:
            if self.steps & 63 == 0 and self.error is None:
                self._every_64()
            if self.runnable and self.error is None:
                r = self._pick()
                if r not in self._fresh:
                    return self._resumers[r](self.resume.pop(r, None))
                # A greenlet's first turn starts from the hub: started from a rank, it would
                # run on top of that rank's frames (and count them towards the recursion
                # limit), and the next one on top of its own, and so on.
                self._handoff = r
        except self._on_timeout:        # the deadline fired here: the hub's, not this rank's
            self._expired = True
        self._turn_ended = True
        return self._hub_switch()

    @property
    def all_finished(self) -> bool:
        return len(self.finished) == len(self.status)

    def check(self) -> None:
        """Called by a rank before each communication: stop if the launch is over."""
        if self.aborted:
            raise Unwind()


# Young objects allowed per rank before a collection (the first generation's threshold).
YOUNG_PER_RANK = 8


@contextlib.contextmanager
def _collector_tuned(ranks: int):
    """The cyclic collector, sized for the run, while the ranks run; as it was afterwards.

    Everything alive when the ranks start (torch, the layout, the ranks' state) stays alive
    through the run: frozen (the permanent generation), full collections do not walk it; a
    full collection otherwise walked the whole heap, and at thousands of ranks that was half
    of the run. And a run keeps O(ranks) young objects in flight (each blocked rank's record,
    each member's gather result until its next call): with the default threshold of 700 the
    first generation is collected many times per round of calls, and every object that lives
    through a round is walked again each time (a third of a 4,096-rank run). A threshold
    that grows with the ranks keeps the collector's work per call flat. Left alone when
    someone else froze the heap or changed the thresholds meanwhile (theirs to restore)."""
    if gc.get_freeze_count() or not gc.isenabled():
        yield
        return
    before = gc.get_threshold()
    tuned = (max(before[0], YOUNG_PER_RANK * ranks),) + before[1:]
    gc.freeze()
    gc.set_threshold(*tuned)
    try:
        yield
    finally:
        if gc.get_threshold() == tuned:
            gc.set_threshold(*before)
        gc.unfreeze()


def _not_running() -> Any:
    raise RuntimeError("inproc kernel: a rank yielded before the hub started")


def _nothing(r: int) -> None:
    pass


__all__ = ["Kernel", "Unwind", "RUNNING", "BLOCKED", "DONE", "FAILED"]
