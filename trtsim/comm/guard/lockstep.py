"""Lockstep checking: groups of one kind must issue the same calls in each iteration.

Strict mode checks each group on its own, which is what a real communicator needs. Lockstep
adds the assumption of a world-wide barrier: within one instance and one executor iteration,
every group of a kind (every PP group, every TP group) issues the same sequence of (op, label).
A whole PP group that skips a gather together is legal per group; under lockstep it is a
divergence, reported as a mismatch. In strict mode the same tracker collects such divergences
as notes instead (``RunResult.divergence``).

The tracker is run-time state fed by the backend: ``on_call`` for each group's records,
``on_progress`` when a rank moves to another iteration or finishes. A group's
iteration is *closed* once every member is past it; a closed group with fewer calls than
another group of its kind skipped the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...layout.places import ranks_label
from ..errors import CollectiveMismatch
from ..records import CallRecord


@dataclass(frozen=True)
class Divergence:
    """One legal-per-group difference between two groups of a kind in one iteration."""

    instance: str
    group_kind: str
    group_ranks: tuple[int, ...]       # the group that entered the call
    other_ranks: tuple[int, ...]       # the group that did not
    label: str | None
    op: str
    iteration: int                     # the first iteration it was seen in
    offset: int = 0                    # global number of the instance's rank 0

    def to_dict(self) -> dict:
        return {"instance": self.instance, "kind": self.group_kind,
                "group_ranks": list(self.group_ranks), "other_ranks": list(self.other_ranks),
                "label": self.label, "op": self.op, "iteration": self.iteration,
                "offset": self.offset}

    def groups_text(self) -> tuple[str, str]:
        """The group that entered and the one that did not, named as reports name ranks."""
        what = f"{self.group_kind} group"
        return (ranks_label(self.instance, self.group_ranks, self.offset, what),
                ranks_label(self.instance, self.other_ranks, self.offset, what))


def summarize(divergences: list[Divergence]) -> list[dict]:
    """One entry per (instance, kind, group pair, label, op): the first iteration and in how
    many iterations it recurred (PP loops diverge by design every iteration)."""
    out: dict[tuple, dict] = {}
    for d in divergences:
        key = (d.instance, d.group_kind, d.group_ranks, d.other_ranks, d.label, d.op)
        entry = out.get(key)
        if entry is None:
            out[key] = dict(d.to_dict(), iterations=1)
        else:
            entry["iterations"] += 1
    return list(out.values())


@dataclass
class _Iteration:
    calls: dict[tuple[int, ...], list[CallRecord]] = field(default_factory=dict)
    closed: set[tuple[int, ...]] = field(default_factory=set)


class LockstepTracker:
    """Compares the per-iteration call lists of the groups of each kind."""

    def __init__(self, groups: dict[tuple[str, str], list[tuple[int, ...]]]):
        # (instance, kind) -> every group of that kind; kinds with one group are never compared
        self._groups = {k: sorted(v) for k, v in groups.items() if len(v) > 1}
        self._kind_of = {(k[1], g): k for k, gs in self._groups.items() for g in gs}
        self._member_of: dict[int, list[tuple[tuple[str, str], tuple[int, ...]]]] = {}
        for key, gs in self._groups.items():
            for g in gs:
                for r in g:
                    self._member_of.setdefault(r, []).append((key, g))
        self._open: dict[tuple[str, str], dict[int, _Iteration]] = {k: {} for k in self._groups}
        self._last_seq: dict[tuple, int] = {}
        self._iterations: dict[int, int] = {}
        self._finished: set[int] = set()
        self._evidence: dict[Divergence, list[CallRecord]] = {}
        self._noted: set[tuple] = set()
        self.divergences: list[Divergence] = []

    def on_call(self, rec: CallRecord) -> None:
        """Note a group's call (the first member's record of each sequence counts) and
        compare it with the same position of the other groups of its kind."""
        key = self._kind_of.get(rec.group_key)
        if key is None or self._last_seq.get(rec.group_key, 0) >= rec.seq:
            return
        self._last_seq[rec.group_key] = rec.seq
        it = self._open[key].get(rec.iteration)
        if it is None:
            it = self._open[key][rec.iteration] = _Iteration()
            # Groups already past this iteration closed it before anyone called in it.
            it.closed.update(g for g in self._groups[key] if self._has_left(g, rec.iteration))
        mine = it.calls.setdefault(rec.group_ranks, [])
        mine.append(rec)
        j = len(mine) - 1
        for other in self._groups[key]:
            if other == rec.group_ranks:
                continue
            theirs = it.calls.get(other, ())
            if j < len(theirs):
                if (theirs[j].op, theirs[j].label) != (rec.op, rec.label):
                    self._note(rec, other, [theirs[j], rec])
            elif other in it.closed:
                self._note(rec, other, [rec])

    def on_progress(self, rank: int, iteration: int | None) -> None:
        """Rank ``rank`` moved to ``iteration`` (None: it finished). Close the iterations
        every member of its groups has left; a group that closes with fewer calls than
        another of its kind skipped the others' next call."""
        if iteration is None:
            self._finished.add(rank)
        else:
            self._iterations[rank] = iteration
        for key, group in self._member_of.get(rank, ()):
            opened = self._open[key]
            for it_no in sorted(opened):
                it = opened[it_no]
                if group in it.closed or not self._has_left(group, it_no):
                    continue
                it.closed.add(group)
                n = len(it.calls.get(group, ()))
                for other in self._groups[key]:
                    theirs = it.calls.get(other, ())
                    if len(theirs) > n:
                        self._note(theirs[n], group, [theirs[n]])
                if len(it.closed) == len(self._groups[key]):
                    del opened[it_no]

    def _has_left(self, group: tuple[int, ...], iteration: int) -> bool:
        return all(r in self._finished or self._iterations.get(r, 0) > iteration for r in group)

    def first_mismatch(self) -> CollectiveMismatch | None:
        """The first divergence seen, as a lockstep mismatch (None if none)."""
        if not self.divergences:
            return None
        first = self.divergences[0]
        return divergence_error(first, self._evidence[first])

    def _note(self, has: CallRecord, lacks: tuple[int, ...], evidence: list[CallRecord]) -> None:
        instance, kind = self._kind_of[has.group_key]
        pair = (instance, kind, has.iteration, frozenset((has.group_ranks, lacks)))
        if pair in self._noted:
            return  # one note per pair of groups and iteration
        self._noted.add(pair)
        offset = has.rank - has.local_rank if has.instance else 0
        div = Divergence(instance, kind, has.group_ranks, lacks, has.label, has.op, has.iteration,
                         offset)
        self.divergences.append(div)
        self._evidence[div] = evidence


def divergence_error(div: Divergence, recs: list[CallRecord]) -> CollectiveMismatch:
    """A lockstep mismatch naming both groups, the call and the iteration. The report's
    group is the one that entered the call (a real group); the other is named beside it."""
    entered, skipped = div.groups_text()
    name = f"{div.group_kind}_{div.op}"
    summary = (f"{div.group_kind} groups diverge in iteration {div.iteration}: {entered} "
               f"entered {name} {div.label!r}, {skipped} did not")
    # The explanation names the skipping ranks (as README and STICKY_SKIP quote it).
    offset, what = div.offset, "ranks"
    skipped_ranks = ranks_label(div.instance, div.other_ranks, offset, what)
    entered_ranks = ranks_label(div.instance, div.group_ranks, offset, what)
    explanation = (f"{skipped_ranks} skipped {name} {div.label!r} in iteration "
                   f"{div.iteration} while {entered_ranks} entered it: legal for each group on its own, but a "
                   "world-wide lockstep assumption (a barrier, a shared communicator) would "
                   "hang here")
    return CollectiveMismatch(summary, group_kind=div.group_kind, group_ranks=div.group_ranks,
                              ranks=div.other_ranks, calls={r.rank: r for r in recs},
                              explanation=explanation,
                              details=(f"other group: {skipped}, which did not enter "
                                       f"{name} {div.label!r}",))


def replay_lockstep(groups: dict[tuple[str, str], list[tuple[int, ...]]],
                    logs: list[list[CallRecord]]):
    """Feed per-rank call logs of a finished launch to a tracker, iteration by iteration.

    ``groups`` is the launch's group table; ``logs[r]`` holds rank r's collective records in
    order. Returns (divergences, the first as a lockstep mismatch or None).
    """
    tracker = LockstepTracker(groups)
    by_iteration: dict[int, list[CallRecord]] = {}
    for log in logs:
        for rec in log:
            by_iteration.setdefault(rec.iteration, []).append(rec)
    iterations = sorted(by_iteration)
    for i, it in enumerate(iterations):
        for rec in by_iteration[it]:
            tracker.on_call(rec)
        nxt = iterations[i + 1] if i + 1 < len(iterations) else None
        for rank in range(len(logs)):
            tracker.on_progress(rank, nxt)
    return tracker.divergences, tracker.first_mismatch()
