"""The launcher's deadlock monitor for the process backend.

It reads the ledger every poll and runs the wait-for analysis. A snapshot of many rows is not
atomic, so a deadlock is reported only when two snapshots taken one poll apart find the same
stuck set and no stuck or finished rank changed its version in between: those ranks then held
still for the whole interval, so the set was really stuck (running ranks may change freely;
the stuck set does not depend on them). With a 20 ms poll the report comes about 40-60 ms
after the last rank blocks. The confirming poll guards against a torn snapshot, not against a
rank whose call is done but whose Python has not resumed (under load that lasts longer than
any poll interval): the ledger's completed messages answer that (``RankState.received``).
"""

from __future__ import annotations

import time

from ...layout.places import RankPlace
from ...calls.errors import CollectiveDeadlock
from ...guard.waitfor import deadlock_error, find_deadlock
from .ledger_contract import LedgerView


class DeadlockMonitor:
    """``poll()`` returns a CollectiveDeadlock once one is certain, else None."""

    def __init__(self, ledger: LedgerView, places: list[RankPlace], interval: float = 0.02):
        self.ledger = ledger
        self.places = places
        self.interval = interval
        self._last_poll = 0.0
        self._candidate: tuple[frozenset, dict] | None = None   # (stuck ranks, their versions)
        self.num_polls = 0

    def poll(self, now: float | None = None) -> CollectiveDeadlock | None:
        now = time.monotonic() if now is None else now
        if now - self._last_poll < self.interval:
            return None
        self._last_poll = now
        self.num_polls += 1
        versions = self.ledger.versions()
        states = self.ledger.snapshot(self.places)
        if any(versions != self.ledger.versions()):
            self._candidate = None            # rows moved during the read: look again later
            return None
        stuck = find_deadlock(states)
        if not stuck:
            self._candidate = None
            return None
        involved = set(stuck) | {r for r, s in states.items() if s.is_finished}
        key = frozenset(stuck)
        held = {r: int(versions[r]) for r in involved}
        if self._candidate is not None and self._candidate[0] == key and self._candidate[1] == held:
            return deadlock_error(states, stuck)
        self._candidate = (key, held)
        return None

    def states(self):
        return self.ledger.snapshot(self.places)
