"""Incremental wait-for analysis, for a scheduler that sees every entry, block and finish
(the inproc backend). Pure bookkeeping: no I/O, no clock.

``waitfor.find_deadlock`` reads a snapshot of every rank, O(ranks x group) per look: at
thousands of ranks it cannot run often. ``WaitGraph`` instead keeps, for every open
collective (group, sequence), the members that have not entered it yet, and is asked only at
the moments a stuck set can form: when a rank stops being able to run.

Why those moments suffice. A blocked rank can proceed exactly when it reaches a running rank
along wait edges (a blocked rank -> the ranks it waits for; a finished rank leads nowhere).
While a rank stays blocked its edges only go away (members enter its collective), so a rank
that could proceed loses that only when some rank on its paths stops running. When rank x
blocks, either x still reaches a running rank -- and then so does every rank that reached x,
and nothing new is stuck -- or x is stuck. When x finishes, the ranks that waited for x
directly must each be checked the same way. So each event costs one search that stops at the
first running rank it meets, and the full analysis runs only once, to name the stuck set.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from ..calls.records import CallRecord
from .waitfor import BLOCKED, RUNNING, waits_for


class CallKeys:
    """Keys of collectives, ``(communicator id, sequence)``: each communicator (group key)
    gets a small int the first time it is seen, so the hot path's dictionaries hash two ints
    instead of a tuple holding the group's ranks, several times per call."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.groups: list[tuple] = []        # id -> group key

    def of(self, rec: CallRecord) -> tuple[int, int]:
        group = rec.group_key
        gid = self.ids.get(group)
        if gid is None:
            gid = self.ids[group] = len(self.groups)
            self.groups.append(group)
        return gid, rec.seq


def _plain_key(rec: CallRecord) -> tuple:
    return rec.group_key, rec.seq


class WaitGraph:
    """Open collectives and who they still wait for. ``status`` and ``calls`` are the
    scheduler's own per-rank lists (status, and the call a blocked rank is in), read live;
    ``key_of`` gives a collective record's key, as the scheduler passes it to ``enter``
    (``CallKeys.of``, or ``(group key, seq)``)."""

    def __init__(self, status: Sequence[str], calls: Sequence[CallRecord | None],
                 key_of: Callable[[CallRecord], tuple] = _plain_key):
        self.status, self.calls, self.key_of = status, calls, key_of
        n = len(status)
        self.missing: dict[tuple, set[int]] = {}            # (group key, seq) -> not entered
        self.absent: list[set[tuple]] = [set() for _ in range(n)]   # rank -> keys it owes
        self.p2p_waiters: list[set[int]] = [set() for _ in range(n)]
        # (group key, seq) -> a member not entered that was running when last looked at: a
        # later block there checks it first, so a search costs O(1) while it still runs,
        # rather than a scan of the members that are blocked elsewhere (O(group)).
        self.witness: dict[tuple, int] = {}
        self.touched = 0          # ranks looked at by the searches (tests count the work)
        self.entered: list[tuple | None] = [None] * n   # rank -> key of its last entry
        self._order: dict[int, tuple] = {}  # id(group) -> (group, member -> position)

    def enter(self, r: int, key: tuple, members: Iterable[int]) -> None:
        """Rank ``r`` entered the collective ``key`` (group key, sequence) of ``members``."""
        self.entered[r] = key
        missing = self.missing
        miss = missing.get(key)
        if miss is None:                  # the first to enter: everyone else is missing
            miss = set(members)
            miss.discard(r)
            if miss:
                missing[key] = miss
                absent = self.absent
                for m in miss:
                    absent[m].add(key)
            return
        miss.discard(r)
        self.absent[r].discard(key)
        if not miss:
            del missing[key]
            self.witness.pop(key, None)

    def waits_of(self, rec: CallRecord) -> Iterable[int]:
        """The ranks a rank blocked in ``rec`` waits for."""
        if rec.is_p2p:
            return (rec.route[0],)
        return self.missing.get(self.key_of(rec), ())

    def stuck_after_block(self, r: int) -> bool:
        """Rank ``r`` just blocked: whether it can no longer proceed."""
        rec = self.calls[r]
        if rec is None:
            return False
        if rec.group_kind == "p2p":       # rec.is_p2p, without the property's call
            assert rec.peer is not None     # rec.route[0], likewise
            self.p2p_waiters[rec.peer].add(r)
            return not self._reaches_running([r])
        key = self.entered[r]             # the collective it blocks in: its last entry
        if key is None:
            return False                  # entered nothing the graph knows
        miss = self.missing.get(key)
        if not miss:
            return False                  # nothing to wait for: it completes
        status = self.status
        w = self.witness.get(key)
        if w is not None and status[w] == RUNNING:
            self.touched += 1
            return False
        for w in miss:                    # the common case: a member still on its way
            self.touched += 1
            if status[w] == RUNNING:
                self.witness[key] = w
                return False
        return not self._reaches_running(miss)

    def stuck_after_finish(self, r: int) -> bool:
        """Rank ``r`` just finished: whether some rank that waited for it is now stuck."""
        for key in self.absent[r]:
            if not self._reaches_running(self.missing[key]):
                return True
        waiters = self.p2p_waiters[r]
        self.p2p_waiters[r] = set()
        for w in waiters:
            rec = self.calls[w]
            if self.status[w] == BLOCKED and rec is not None and rec.is_p2p and rec.peer == r \
                    and not self._reaches_running([w]):
                return True
        return False

    def _reaches_running(self, start: Iterable[int]) -> bool:
        """Whether some rank of ``start`` is running or, blocked, reaches a running rank."""
        status, calls = self.status, self.calls
        stack, seen = list(start), set()
        while stack:
            m = stack.pop()
            if m in seen:
                continue
            seen.add(m)
            self.touched += 1
            state = status[m]
            if state == RUNNING:
                return True
            if state != BLOCKED:
                continue                      # finished: it will never enter anything
            rec = calls[m]
            if rec is None:
                return True                   # blocked in nothing the graph knows: may go on
            waits = self.waits_of(rec)
            if not waits:
                return True
            for w in waits:
                if status[w] == RUNNING:      # the common case: found without descending
                    return True
                if w not in seen:
                    stack.append(w)
        return False

    def waits_in(self, state, states: dict) -> tuple[int, ...]:
        """``waitfor.waits_for`` of a blocked rank's snapshot, read from the open collectives
        (O(ranks waited for), not O(group)); p2p calls and calls the graph never saw are
        left to ``waits_for``."""
        call = state.call
        if state.status != BLOCKED or call is None:
            return ()
        miss = None if call.is_p2p else self.missing.get(self.key_of(call))
        if miss is None:
            return waits_for(state, states)
        order = self._order.get(id(call.group_ranks))
        if order is None or order[0] is not call.group_ranks:
            order = self._order[id(call.group_ranks)] = (
                call.group_ranks, {m: i for i, m in enumerate(call.group_ranks)})
        return tuple(sorted((m for m in miss if m in states), key=order[1].__getitem__))
