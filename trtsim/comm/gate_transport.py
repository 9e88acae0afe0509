"""GatedTransport: a rank's transport with its gate observer on the call's path.

A launch that asks for gates wraps each rank's transport in one (``gate_watch.watch_gates``
through ``Distributed.wrap_transport``); a launch with ``gates="off"`` (the default) never
does, so a guarded call's hot path holds no test for gates at all. Each collective's record
goes to the observer before the wrapped transport enters the call (the gates are read in the
caller's frames, as they are when it enters), each iteration the rank sets after the wrapped
transport has it. Everything else is the wrapped transport's, written out (as
``backends.process.logged`` does): the type checker holds the wrapper to the contract.
"""

from __future__ import annotations

from typing import Any

from ..calls.records import CallRecord
from ..timeline.clock import RankClock

# observe() reads the frames above this many: GatedTransport.collective, issue_collective
CALLER_DEPTH = 2


class GatedTransport:
    """``transport`` with ``watch`` (a ``GateWatch``) told of every collective and iteration."""

    def __init__(self, transport, watch):
        self._transport, self.watch = transport, watch
        # the rank's clock, read on every call: a plain attribute, not a property's call
        # (a transport keeps the clock it was made with)
        self.clock: RankClock = transport.clock

    def collective(self, rec: CallRecord, payload: Any, run=None) -> Any:
        self.watch.observe(rec, CALLER_DEPTH)
        if run is None:
            return self._transport.collective(rec, payload)
        return self._transport.collective(rec, payload, run)

    def set_iteration(self, iteration: int) -> None:
        self._transport.set_iteration(iteration)
        self.watch.on_iteration()

    def send(self, rec: CallRecord, payload: Any, blocking: bool, run=None) -> Any:
        extra = () if run is None else (run,)       # as Distributed passes it
        return self._transport.send(rec, payload, blocking, *extra)

    def recv(self, rec: CallRecord, buffer: Any, blocking: bool, run=None) -> Any:
        extra = () if run is None else (run,)
        return self._transport.recv(rec, buffer, blocking, *extra)

    def delay(self, seconds: float) -> None:
        self._transport.delay(seconds)

    @property
    def runs_real_calls(self) -> bool:
        return self._transport.runs_real_calls

    @property
    def device(self):
        return getattr(self._transport, "device", None)
