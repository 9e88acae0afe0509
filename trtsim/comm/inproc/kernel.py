"""The scheduling kernel of the inproc backend: it only schedules and steps.

Every rank is a greenlet. A rank runs until it blocks in a resource (a collective rendezvous,
a p2p mailbox) or yields its turn; then the hub picks the next runnable rank with a seeded RNG,
so the interleaving is a pure function of the seed. Resources park ranks with ``block`` and
release them with ``wake``; the kernel knows nothing of what they wait for.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable

import greenlet

from ..errors import CollectiveError
from ..guard.waitfor import BLOCKED, DONE, FAILED, RUNNING
from ..records import CallRecord


class Unwind(BaseException):
    """Thrown into ranks that must stop because the launch is over."""


class Kernel:
    """Runnable set, seeded choice, block/wake, the first report, the deadline."""

    def __init__(self, num_ranks: int, seed: int, timeout: float):
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
        self.hub: greenlet.greenlet | None = None
        # Called as a rank stops being able to run (it blocked in a call, or finished), while
        # no report has stopped the launch yet: where the deadlock checks hook in.
        self.on_block: Callable[[int], None] | None = None
        self.on_finish: Callable[[int], None] | None = None

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

    def yield_to_hub(self) -> Any:
        return self.hub.switch()

    def step_aside(self, r: int) -> None:
        """Give up the turn: every other runnable rank may move first."""
        self.wake(r)
        self.yield_to_hub()

    def report(self, err: CollectiveError) -> None:
        """The first report stops the launch; later ones are consequences."""
        if self.error is None:
            self.error = err

    def finish(self, r: int, status: str = DONE) -> None:
        self.status[r] = status
        self.finished.add(r)
        if self.on_finish is not None and self.error is None:
            self.on_finish(r)

    # -- the hub ------------------------------------------------------------------------
    def run(self, mains: list[Callable[[], None]], every_64: Callable[[], None],
            on_idle: Callable[[], None]) -> None:
        """Run the rank mains one switch at a time until all finish or a report stops the
        launch. ``every_64`` runs after that many switches (the clock, progress);
        ``on_idle`` when no rank can run but some have not finished. They report through
        ``report``."""
        self.hub = greenlet.getcurrent()
        glets = [greenlet.greenlet(lambda *_, f=f: f(), parent=self.hub) for f in mains]
        self.runnable = list(range(len(glets)))
        try:
            while self.runnable and self.error is None:
                r = self.runnable.pop(self.rng.randrange(len(self.runnable)))
                self.steps += 1
                glets[r].switch(self.resume.pop(r, None))
                if self.steps & 63 == 0 and self.error is None:
                    every_64()
            if self.error is None and not self.all_finished:
                on_idle()
        finally:
            self.aborted = True
            for g in glets:
                if g and not g.dead:      # started and suspended: unwind its finally blocks
                    try:
                        g.throw(Unwind)
                    except Unwind:
                        pass

    @property
    def all_finished(self) -> bool:
        return len(self.finished) == len(self.status)

    def check(self) -> None:
        """Called by a rank before each communication: stop if the launch is over."""
        if self.aborted:
            raise Unwind()


__all__ = ["Kernel", "Unwind", "RUNNING", "BLOCKED", "DONE", "FAILED"]
