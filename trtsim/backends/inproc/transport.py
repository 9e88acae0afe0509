"""One rank's view of the inproc world: the Transport of its Distributed."""

from __future__ import annotations

import functools
from typing import Any, Callable

from ...timeline.clock import RankClock
from ...calls.records import CallRecord
from .kernel import Kernel
from .mailbox import Mailbox
from .rendezvous import Rendezvous


class InprocTransport:
    """Routes rank ``rank``'s calls to the world's resources."""

    runs_real_calls = False     # every rank is in this process: trtsim computes the results

    def __init__(self, rank: int, kernel: Kernel, rendezvous: Rendezvous, mailbox: Mailbox,
                 clock: RankClock, on_iteration: Callable[[int, int], None]):
        self.rank, self.kernel, self.rendezvous, self.mailbox = rank, kernel, rendezvous, mailbox
        self.clock = clock
        # collective(rec, payload, run=None): the rendezvous itself, bound to this rank (the
        # hot path: no frame of ours in between; the rendezvous checks the kernel first).
        # ``run`` (the real call of an intercepted API) is not needed here: every rank is in
        # this process, so the rendezvous and the mailbox compute the results themselves.
        self.collective: Callable[..., Any] = functools.partial(rendezvous.post, rank)
        # set_iteration(i): the world's hook, bound likewise (it checks the kernel first)
        self.set_iteration: Callable[[int], None] = functools.partial(on_iteration, rank)

    def send(self, rec: CallRecord, payload: Any, blocking: bool, run=None):
        self.kernel.check()
        return self.mailbox.send(self.rank, rec, payload, blocking)

    def recv(self, rec: CallRecord, buffer: Any, blocking: bool = True, run=None) -> Any:
        self.kernel.check()
        return self.mailbox.recv(self.rank, rec, buffer, blocking)

    def delay(self, seconds: float) -> None:
        """A slow rank: it gives up its turn one scheduling tick per millisecond, so every
        other runnable rank may move first (deterministic in the seed, no wall time)."""
        for _ in range(max(1, round(seconds * 1000))):
            self.kernel.check()
            self.kernel.step_aside(self.rank)
