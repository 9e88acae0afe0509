"""Collectives of the inproc backend: a rendezvous per (group, sequence).

Members post their record and payload at their group sequence; the guard policy judges each
post against the one that opened the sequence, so the first divergent call is reported at
once. The post that completes the group executes the collective (``semantics``), settles every
member's virtual clock and wakes them all.
"""

from __future__ import annotations

from typing import Any, Callable

from ...timeline.clock import ClockModel, RankClock, finish_collective
from ..guard.policy import GuardPolicy
from ..guard.rules import differences
from ..guard.waitgraph import WaitGraph
from ..records import CallRecord
from ..semantics import execute, nbytes
from .kernel import Kernel


class Rendezvous:
    """Pending collectives and, per rank, the last sequence it entered on each group."""

    def __init__(self, kernel: Kernel, policy: GuardPolicy, clocks: list[RankClock],
                 clock_model: ClockModel, on_post: Callable[[CallRecord], None],
                 waits: WaitGraph | None = None):
        self.kernel, self.policy, self.clocks, self.clock_model = kernel, policy, clocks, clock_model
        self.on_post = on_post
        self.waits = waits
        self.pending: dict[tuple, dict[int, tuple[CallRecord, Any]]] = {}
        self.posted: list[dict] = [{} for _ in clocks]

    def post(self, r: int, rec: CallRecord, payload: Any) -> Any:
        """Rank ``r`` enters ``rec``; returns its result once every member has entered."""
        kernel = self.kernel
        key = (rec.group_key, rec.seq)
        posts = self.pending.setdefault(key, {})
        if posts:
            first = next(iter(posts.values()))[0]
            if differences(first, rec):          # rare: build the records only then
                records = {x: p[0] for x, p in posts.items()}
                records[r] = rec
                err = self.policy.judge(first, rec, records)
                if err is not None:
                    kernel.report(err)
        posts[r] = (rec, payload)
        self.posted[r][rec.group_key] = rec.seq
        if self.waits is not None:
            self.waits.enter(r, key, rec.group_ranks)
        self.on_post(rec)
        if kernel.error is not None:
            return kernel.block(r, rec)       # the hub stops; this rank is unwound
        if len(posts) < len(rec.group_ranks):
            return kernel.block(r, rec)
        del self.pending[key]
        members = rec.group_ranks
        self._settle_clocks(rec, posts)
        results = execute(rec.op, [posts[m][1] for m in members], rec.root, rec.reduce_op)
        for m, value in zip(members, results):
            if m != r:
                kernel.wake(m, value)
        kernel.wake(r, results[members.index(r)])
        return kernel.yield_to_hub()

    def _settle_clocks(self, rec: CallRecord, posts: dict) -> None:
        arrivals = {m: p[0].clock for m, p in posts.items()}
        cost = self.clock_model.collective_cost(rec.op, len(arrivals), rec.signature,
                                                nbytes(posts[rec.rank][1]))
        finish_collective(self.clocks, arrivals, arrivals, cost, rec.short())
