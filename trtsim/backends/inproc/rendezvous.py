"""Collectives of the inproc backend: a rendezvous per (group, sequence).

Members post their record and payload at their group sequence; the guard policy judges each
post against the one that opened the sequence, so the first divergent call is reported at
once. The post that completes the group executes the collective (``semantics``), settles every
member's virtual clock and wakes them all.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from ...timeline.clock import ClockModel, RankClock, finish_collective
from ...guard.policy import GuardPolicy
from ...guard.rules import MATCH_FIELDS, purpose
from ...guard.waitgraph import CallKeys, WaitGraph
from ...calls.records import CallRecord
from ...calls.semantics import execute, nbytes
from .kernel import Kernel, Unwind


# What members must agree on besides the purpose, read in C (``rules.match_key``'s fields).
_match = operator.attrgetter(*MATCH_FIELDS)


class Rendezvous:
    """Pending collectives and, per rank, the last sequence it entered on each group."""

    def __init__(self, kernel: Kernel, policy: GuardPolicy, clocks: list[RankClock],
                 clock_model: ClockModel, on_post: Callable[[CallRecord], None],
                 waits: WaitGraph | None = None, openers_only: bool = False,
                 keys: CallKeys | None = None):
        self.kernel, self.policy, self.clocks, self.clock_model = kernel, policy, clocks, clock_model
        # ``openers_only``: ``on_post`` needs only the record that opens each sequence (the
        # lockstep tracker's rule), not every member's
        self.on_post, self.openers_only = on_post, openers_only
        self.waits = waits
        self.keys = keys or CallKeys()
        # (communicator id, seq) -> (rank -> (record, payload), the opener's match fields,
        # purpose); ids are ``keys``'
        self.pending: dict[tuple, tuple[dict[int, tuple[CallRecord, Any]], tuple,
                                        str | None]] = {}
        self.posted: list[dict[int, int]] = [{} for _ in clocks]   # communicator id -> seq
        self._object_cost: dict[tuple, float] = {}   # (op, size) -> a host-object call's cost

    def post(self, r: int, rec: CallRecord, payload: Any, run=None) -> Any:
        """Rank ``r`` enters ``rec``; returns its result once every member has entered.
        ``run``, an intercepted API's real call, is not needed: the result is computed here."""
        kernel = self.kernel
        if kernel.aborted:                # ``Kernel.check`` inlined: the launch is over
            raise Unwind()
        key = self.keys.of(rec)
        entry = self.pending.get(key)
        opens = entry is None
        if entry is None:
            # the opening record's match key, taken once: each later member compares its own
            # in C (``differences`` names the fields only when they disagree)
            posts: dict[int, tuple[CallRecord, Any]] = {}
            self.pending[key] = (posts, _match(rec), purpose(rec))
        else:
            posts = entry[0]
            if _match(rec) != entry[1] or purpose(rec) != entry[2]:
                first = next(iter(posts.values()))[0]
                records = {x: p[0] for x, p in posts.items()}
                records[r] = rec
                err = self.policy.judge(first, rec, records)
                if err is not None:
                    kernel.report(err)
        posts[r] = (rec, payload)
        self.posted[r][key[0]] = rec.seq
        if self.waits is not None:
            self.waits.enter(r, key, rec.group_ranks)
        if opens or not self.openers_only:
            self.on_post(rec)
        members = rec.group_ranks
        if kernel.error is not None or len(posts) < len(members):
            return kernel.block(r, rec)       # on a report, the hub stops: this rank unwinds
        del self.pending[key]
        self._settle_clocks(rec, posts)
        results = execute(rec.op, [posts[m][1] for m in members], rec.root, rec.reduce_op)
        wake = kernel.wake
        mine = None
        for m, value in zip(members, results):
            if m != r:
                wake(m, value)
            else:
                mine = value
        wake(r, mine)
        return kernel.yield_to_hub()

    def posted_by(self, r: int) -> dict[tuple, int]:
        """The last sequence rank ``r`` entered on each communicator, by group key."""
        groups = self.keys.groups
        return {groups[gid]: seq for gid, seq in self.posted[r].items()}

    def _settle_clocks(self, rec: CallRecord, posts: dict) -> None:
        arrivals = {m: p[0].clock for m, p in posts.items()}
        n = len(arrivals)
        if rec.signature == "object":     # no tensor: the price is a function of these
            key = (rec.op, n)
            cost = self._object_cost.get(key)
            if cost is None:
                cost = self._object_cost[key] = self.clock_model.collective_cost(
                    rec.op, n, rec.signature)
        else:
            cost = self.clock_model.collective_cost(rec.op, n, rec.signature,
                                                    nbytes(posts[rec.rank][1]))
        finish_collective(self.clocks, arrivals, arrivals, cost, rec.short())
