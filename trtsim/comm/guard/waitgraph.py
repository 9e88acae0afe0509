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

from typing import Iterable, Sequence

from ..records import CallRecord
from .waitfor import BLOCKED, RUNNING, waits_for


class WaitGraph:
    """Open collectives and who they still wait for. ``status`` and ``calls`` are the
    scheduler's own per-rank lists (status, and the call a blocked rank is in), read live."""

    def __init__(self, status: Sequence[str], calls: Sequence[CallRecord | None]):
        self.status, self.calls = status, calls
        n = len(status)
        self.missing: dict[tuple, set[int]] = {}            # (group key, seq) -> not entered
        self.absent: list[set[tuple]] = [set() for _ in range(n)]   # rank -> keys it owes
        self.p2p_waiters: list[set[int]] = [set() for _ in range(n)]
        # (group key, seq) -> a member not entered that was running when last looked at: a
        # later block there checks it first, so a search costs O(1) while it still runs,
        # rather than a scan of the members that are blocked elsewhere (O(group)).
        self.witness: dict[tuple, int] = {}
        self.touched = 0          # ranks looked at by the searches (tests count the work)
        self._order: dict[int, tuple] = {}  # id(group) -> (group, member -> position)

    def enter(self, r: int, key: tuple, members: Iterable[int]) -> None:
        """Rank ``r`` entered the collective ``key`` (group key, sequence) of ``members``."""
        miss = self.missing.get(key)
        if miss is None:
            miss = self.missing[key] = set(members)
            for m in miss:
                self.absent[m].add(key)
        miss.discard(r)
        self.absent[r].discard(key)
        if not miss:
            del self.missing[key]
            self.witness.pop(key, None)

    def waits_of(self, rec: CallRecord) -> Iterable[int]:
        """The ranks a rank blocked in ``rec`` waits for."""
        if rec.is_p2p:
            return (rec.route[0],)
        return self.missing.get((rec.group_key, rec.seq), ())

    def stuck_after_block(self, r: int) -> bool:
        """Rank ``r`` just blocked: whether it can no longer proceed."""
        rec = self.calls[r]
        if rec is None:
            return False
        if rec.group_kind == "p2p":       # rec.is_p2p, without the property's call
            assert rec.peer is not None     # rec.route[0], likewise
            self.p2p_waiters[rec.peer].add(r)
            return not self._reaches_running([r])
        key = (rec.group_key, rec.seq)
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
        miss = None if call.is_p2p else self.missing.get((call.group_key, call.seq))
        if miss is None:
            return waits_for(state, states)
        order = self._order.get(id(call.group_ranks))
        if order is None or order[0] is not call.group_ranks:
            order = self._order[id(call.group_ranks)] = (
                call.group_ranks, {m: i for i, m in enumerate(call.group_ranks)})
        return tuple(sorted((m for m in miss if m in states), key=order[1].__getitem__))
