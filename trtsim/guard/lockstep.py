"""Lockstep checking: groups of one kind must issue the same calls in each iteration.

Strict mode checks each group on its own, which is what a real communicator needs. Lockstep
adds the assumption of a world-wide barrier: within one instance and one executor iteration,
every group of a kind (every PP group, every TP group) issues the same sequence of calls (op,
label, and for unlabelled calls the purpose key). A whole PP group that skips a gather
together is legal per group; under lockstep it is a divergence, reported as a mismatch. In
strict mode the same tracker collects such divergences as notes instead (``divergence``).

The tracker is run-time state fed by the backend: ``on_call`` for each group's records,
``on_progress`` when a rank moves to another iteration or finishes. A group's iteration is
*closed* once every member is past it. Once every group of a kind has closed an iteration,
each is compared with the first group of the table: their call lists are aligned (a
longest-common-subsequence diff), and the first call one of them has and the other lacks is
what the other *skipped*. Comparing position by
position would blame the wrong group: a group that skipped its first call enters its second
at the first position, where it looks like the extra one.
"""

from __future__ import annotations

import difflib
import operator
from dataclasses import dataclass, field
from typing import Any

from ..layout.places import ranks_label
from ..calls.errors import CollectiveMismatch
from ..calls.records import CallRecord
from .rules import purpose


@dataclass(frozen=True)
class Divergence:
    """One legal-per-group difference between two groups of a kind in one iteration: the
    call ``other_ranks`` left out, which ``group_ranks`` entered."""

    instance: str
    group_kind: str
    group_ranks: tuple[int, ...]       # the group that entered the call
    other_ranks: tuple[int, ...]       # the group that skipped it
    label: str | None
    op: str
    iteration: int                     # the first iteration it was seen in
    purpose: str = ""                  # the skipped call's purpose key (unlabelled calls)
    offset: int = 0                    # global number of the instance's rank 0

    def to_dict(self) -> dict:
        return {"instance": self.instance, "kind": self.group_kind,
                "group_ranks": list(self.group_ranks), "other_ranks": list(self.other_ranks),
                "label": self.label, "op": self.op, "iteration": self.iteration,
                "purpose": self.purpose, "offset": self.offset}

    def groups_text(self) -> tuple[str, str]:
        """The group that entered and the one that skipped, named as reports name ranks."""
        what = f"{self.group_kind} group"
        return (ranks_label(self.instance, self.group_ranks, self.offset, what),
                ranks_label(self.instance, self.other_ranks, self.offset, what))

    @property
    def call_text(self) -> str:
        """The skipped call: its label, or for an unlabelled call the function it came from."""
        name = f"{self.group_kind}_{self.op}"
        if self.label:
            return f"{name} {self.label!r}"
        return f"{name} (from {self.purpose.split(' < ')[0]})" if self.purpose else name


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
    return sorted(out.values(), key=lambda d: (d["iteration"], d["instance"], d["kind"],
                                               d["other_ranks"], d["group_ranks"]))


def _key(rec: CallRecord) -> tuple:
    return (rec.op, rec.label, purpose(rec))


# What ``_key`` is a function of, read in C: lists equal in these are equal in ``_key`` (the
# common case, compared without a call per record); unequal ones are compared by ``_key``.
_fields = operator.attrgetter("op", "label", "purpose")


@dataclass
class _Iteration:
    """One kind's calls in one iteration, per group: the records and their ``_fields``."""

    calls: dict[tuple[int, ...], list[CallRecord]] = field(default_factory=dict)
    keys: dict[tuple[int, ...], list[tuple]] = field(default_factory=dict)   # their _fields


class _Span:
    """The ranks that a kind's groups cover (one instance's ranks: each kind's groups
    partition them), how many unfinished ones are in each iteration (all start in 0), the
    lowest such iteration (None: all finished), and the kinds over these ranks.

    A kind's iteration is complete -- every group's call list final -- once each of its
    groups has left it, that is once every rank of the span has: then ``low`` is past it.
    One count per rank move, whatever the number of groups and kinds."""

    __slots__ = ("count", "low", "kinds")

    def __init__(self, members: int):
        self.count: dict[int, int] = {0: members}
        self.low: int | None = 0
        self.kinds: list[tuple[str, str]] = []


class LockstepTracker:
    """Compares the per-iteration call lists of the groups of each kind."""

    def __init__(self, groups: dict[tuple[str, str], list[tuple[int, ...]]]):
        # (instance, kind) -> every group of that kind; kinds with one group are never compared
        self._groups = {k: sorted(v) for k, v in groups.items() if len(v) > 1}
        # group key -> [(instance, kind), last sequence noted]: one lookup per call
        self._state: dict[tuple, list[Any]] = {(k[1], g, ""): [k, 0]
                                               for k, gs in self._groups.items() for g in gs}
        # rank -> its spans (one: its instance's); kinds over the same ranks share a span
        spans: dict[frozenset, _Span] = {}
        self._spans_of: dict[int, list[_Span]] = {}
        for key, gs in self._groups.items():
            members = frozenset(r for g in gs for r in g)
            span = spans.get(members)
            if span is None:
                span = spans[members] = _Span(len(members))
                for r in members:
                    self._spans_of.setdefault(r, []).append(span)
            span.kinds.append(key)
        self._open: dict[tuple[str, str], dict[int, _Iteration]] = {k: {} for k in self._groups}
        self._iterations: dict[int, int | None] = {}     # rank -> iteration (None: finished)
        self._evidence: dict[Divergence, list[CallRecord]] = {}
        self.divergences: list[Divergence] = []

    def on_call(self, rec: CallRecord) -> None:
        """Note a group's call (the first member's record of each sequence counts)."""
        state = self._state.get(rec.group_key)
        if state is None or state[1] >= rec.seq:
            return
        state[1] = rec.seq
        opened = self._open[state[0]]
        it = opened.get(rec.iteration)
        if it is None:
            it = opened[rec.iteration] = _Iteration()
        group = rec.group_ranks
        calls = it.calls.get(group)
        if calls is None:
            calls = it.calls[group] = []
            it.keys[group] = []
        calls.append(rec)
        it.keys[group].append(_fields(rec))

    def on_progress(self, rank: int, iteration: int | None) -> None:
        """Rank ``rank`` moved to ``iteration`` (None: it finished). When that raises its
        span's lowest iteration, every iteration below it is complete for the span's kinds:
        compare each kind's groups there."""
        iterations = self._iterations
        before = iterations.get(rank, 0)
        if before is None:
            return                          # a finished rank has left every iteration
        iterations[rank] = iteration
        for span in self._spans_of.get(rank, ()):
            low, count = span.low, span.count
            left = count[before] - 1
            if left:
                count[before] = left
            else:
                del count[before]
            if iteration is not None:
                count[iteration] = count.get(iteration, 0) + 1
            if not count:
                span.low = None
            elif before == low and not left or iteration is not None and low is not None \
                    and iteration < low:
                span.low = min(count)      # O(iterations in flight): a handful
            if span.low != low and (span.low is None or low is not None and span.low > low):
                self._complete(span)

    def _complete(self, span: _Span) -> None:
        """Compare the groups of each of ``span``'s kinds in every iteration below its
        lowest (every rank of the span has left those)."""
        for key in span.kinds:
            opened = self._open[key]
            for it_no in sorted(opened):
                if span.low is not None and span.low <= it_no:
                    break                   # not left yet by every rank
                # Every group of the kind left the iteration: compare each with the first
                # of the table, O(groups), in an order no schedule changes.
                it = opened.pop(it_no)
                ref, *rest = self._groups[key]
                for other in rest:
                    self._compare(key, it_no, it, ref, other)

    def _compare(self, key, it_no: int, it: _Iteration, a: tuple[int, ...],
                 b: tuple[int, ...]) -> None:
        """Note the first call one of two closed groups skipped (the first difference of
        their aligned call lists)."""
        if it.keys.get(a, []) == it.keys.get(b, []):     # the common case: in step
            return
        calls_a, calls_b = it.calls.get(a, []), it.calls.get(b, [])
        keys_a, keys_b = [_key(r) for r in calls_a], [_key(r) for r in calls_b]
        if keys_a == keys_b:                 # in step: they differ in purposes labels hide
            return
        matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
        for tag, i1, _i2, j1, _j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            if tag == "insert":            # b has calls a lacks: a skipped b's
                a, b, calls_a, calls_b, i1, j1 = b, a, calls_b, calls_a, j1, i1
            # a has calls b lacks (or both differ here): the evidence is a's call and, if b
            # made one at that point instead, b's
            evidence = [calls_a[i1]] + ([calls_b[j1]] if j1 < len(calls_b) else [])
            self._note(key, it_no, calls_a[i1], a, b, evidence)
            return

    def notes(self) -> list[Divergence]:
        """Every divergence, earliest first: by iteration, then instance, kind and groups in
        table order, so neither the schedule nor the backend changes the order."""
        order = {key: i for i, key in enumerate(self._groups)}
        return sorted(self.divergences, key=lambda d: (
            d.iteration, order[(d.instance, d.group_kind)], d.other_ranks, d.group_ranks))

    def first_mismatch(self) -> CollectiveMismatch | None:
        """The earliest divergence as a lockstep mismatch (None if none)."""
        notes = self.notes()
        return divergence_error(notes[0], self._evidence[notes[0]]) if notes else None

    def _note(self, key, it_no: int, skipped: CallRecord, has: tuple[int, ...],
              lacks: tuple[int, ...], evidence: list[CallRecord]) -> None:
        instance, kind = key
        offset = skipped.rank - skipped.local_rank if skipped.instance else 0
        div = Divergence(instance, kind, has, lacks, skipped.label, skipped.op, it_no,
                         purpose(skipped) or "", offset)
        self.divergences.append(div)
        self._evidence[div] = evidence


def divergence_error(div: Divergence, recs: list[CallRecord]) -> CollectiveMismatch:
    """A lockstep mismatch: the group that skipped a call, the call, the group that entered it.
    The report's group is the one that entered the call (a real group); the other is named
    beside it."""
    entered, skipped = div.groups_text()
    what = div.call_text
    summary = (f"{div.group_kind} groups diverge in iteration {div.iteration}: {skipped} "
               f"skipped {what}, which {entered} entered")
    # The explanation names the skipping ranks (as README and STICKY_SKIP quote it).
    skipped_ranks = ranks_label(div.instance, div.other_ranks, div.offset, "ranks")
    entered_ranks = ranks_label(div.instance, div.group_ranks, div.offset, "ranks")
    explanation = (f"{skipped_ranks} skipped {what} in iteration {div.iteration} while "
                   f"{entered_ranks} entered it: legal for each group on its own, but a "
                   "world-wide lockstep assumption (a barrier, a shared communicator) would "
                   "hang here")
    return CollectiveMismatch(summary, group_kind=div.group_kind, group_ranks=div.group_ranks,
                              ranks=div.other_ranks, calls={r.rank: r for r in recs},
                              explanation=explanation,
                              details=(f"other group: {skipped}, which did not enter {what}",))


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
    return tracker.notes(), tracker.first_mismatch()
