"""Judging aligned histories with the guard's rules: what a live run would have reported.

Three findings, each built by the guard's own function: members that disagree at one
group sequence (``policy.judge`` and ``rules.check_group_call``: op, root, reduce op,
signature, label, iteration, purpose), a rank that failed (``RankFailed``), and blocked
ranks that can never proceed (``waitfor.find_deadlock`` / ``deadlock_error`` over the ranks'
final states). A live run
stops at the first of them to happen, so of several the one whose evidence is oldest (entry
times) is reported; the others are consequences. Blocked ranks that wait only for ranks
still running when the files were written are reported as ranks that never arrived
(``waitfor.timeout_error``'s form): slow or hung, the files cannot tell.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..calls.errors import CollectiveError, RankFailed, verdict_of
from ..guard.policy import GuardPolicy
from ..guard.waitfor import (BLOCKED, DONE, FAILED, RankState, deadlock_error,
                                  find_deadlock, timeout_error, waits_for)
from .align import Alignment, align
from .history import CALL_LOG, gc_paused
from .inputs import Job
from .skips import behind


@dataclass(frozen=True)
class Analysis:
    """What the files of one job show: the report (None: consistent) and notes. ``error``
    is the report the live guard would have given (a replay reproduces it); ``likely``, when
    set, is what the whole histories say instead of its ``likely:`` line (``skips``)."""

    job: Job
    alignment: Alignment
    error: CollectiveError | None
    notes: tuple[str, ...]
    likely: str = ""               # the post-mortem's likely line, where the counts tell more

    @property
    def verdict(self) -> str:
        """ok, mismatch, deadlock or failed, as a run's verdict."""
        return verdict_of(self.error)

    @property
    def calls(self) -> int:
        """Calls read, all ranks."""
        return sum(len(h.calls) for h in self.job.histories)

    def summary(self) -> str:
        """The text ``trtsim analyze`` prints: what was read, the verdict, notes, the report."""
        hs = self.job.histories
        folder = sorted({os.path.dirname(h.source) or "." for h in hs})
        groups = len(self.alignment.groups)
        lines = [f"analyze: {_n(len(hs), 'rank')}, {self.job.form}, {_n(groups, 'group')}, "
                 f"{_n(self.calls, 'call')} ({', '.join(folder)})",
                 f"verdict: {self.verdict}"]
        lines += [f"note: {n}" for n in self.notes]
        if self.error is None and self.job.missing:     # the notes name the missing ranks
            lines.append("no violation among the ranks that left a file; the missing ranks "
                         "cannot be judged (exit status 1)")
        elif self.error is None:
            lines.append("consistent: at every group sequence the members' calls agree, and no "
                         "rank waits for one that cannot come")
        else:
            lines.append(self.report())
        return "\n".join(lines)

    def report(self) -> str:
        """The report as the live guard prints it, its ``likely:`` line the post-mortem's
        where that says more."""
        text = str(self.error) if self.error is not None else ""
        if self.likely and self.error.explanation:
            old = f"  likely: {self.error.explanation}"
            text = text[:text.rindex(old)] + f"  likely: {self.likely}" + \
                text[text.rindex(old) + len(old):]
        return text

    def to_dict(self) -> dict:
        """JSON-ready (docs/JSON.md, trtsim/analyze)."""
        return {"verdict": self.verdict, "ranks": len(self.job.histories),
                "form": self.job.form, "calls": self.calls,
                "files": [h.source for h in self.job.histories],
                "error": self.error.to_dict() if self.error else None,
                "notes": list(self.notes), "missing_ranks": list(self.job.missing),
                "groups": [{"name": g.name, "kind": g.key[0], "ranks": list(g.members),
                            "sequences": len(g.at), "start": g.start,
                            "last": {str(r): s for r, s in sorted(g.last.items())},
                            "truncated": list(g.truncated)} for g in self.alignment.groups],
                "histories": [{"rank": h.rank, "file": h.source, "form": h.form,
                               "status": h.status, "calls": len(h.calls), "dropped": h.dropped,
                               "blocked_in": h.blocked.record.short() if h.blocked else None}
                              for h in self.job.histories]}


def _n(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def _mismatch(alignment: Alignment):
    """(time, order, report) of the first divergent sequence of each group, judged as the
    live guard judges posts: in the order the members entered (entry times, then rank),
    each against the first; the report holds the records posted until the divergent one."""
    judge = GuardPolicy("strict").judge
    for order, g in enumerate(alignment.groups):
        for seq in sorted(g.at):
            calls = g.at[seq]
            if len(calls) < 2:
                continue
            posts = sorted(calls.items(), key=lambda rc: (rc[1].t_ns, rc[0]))
            first = posts[0][1].record
            records = {posts[0][0]: first}
            for rank, call in posts[1:]:
                records[rank] = call.record
                err = judge(first, call.record, records)
                if err is not None:
                    yield call.t_ns, order, err
                    break
            else:
                continue
            break


def states_of(alignment: Alignment) -> dict[int, RankState]:
    """Every rank's final state as the wait-for analysis reads it."""
    posted: dict[int, dict] = {h.rank: {} for h in alignment.histories}
    for g in alignment.groups:
        for r, seq in g.last.items():
            if seq and r in posted:
                posted[r][g.key] = seq
    return {h.rank: RankState(h.rank, h.status, h.blocked.record if h.blocked else None,
                              posted[h.rank], h.pending_sends, h.iteration, h.label)
            for h in alignment.histories}


def _failures(alignment: Alignment):
    for h in alignment.histories:
        if h.status == FAILED and h.failure:
            when = max((c.t_ns for c in h.calls), default=0)
            yield when, -1, RankFailed(f"{h.label} raised {h.failure}", rank=h.rank,
                                       traceback=h.traceback)


def _stuck(alignment: Alignment, states: dict[int, RankState]):
    stuck = find_deadlock(states)
    if stuck:
        blocked = {h.rank: h.blocked for h in alignment.histories if h.rank in stuck}
        yield max(c.t_ns for c in blocked.values()), len(alignment.groups), \
            deadlock_error(states, stuck)
        return
    waiting = [s for s in states.values() if s.status == BLOCKED and s.call is not None
               and (waits_for(s, states) or len(s.call.group_ranks) < 2)]
    if waiting:
        err = timeout_error(states, 0)
        names = ", ".join(s.label for s in waiting)
        err.summary = (f"{names} wait{'s' if len(waiting) == 1 else ''} for ranks that never "
                       "arrived (still running when the files were written, or outside them)")
        yield 0, len(alignment.groups) + 1, err


def analyze(job: Job) -> Analysis:
    """Apply the guard's rules to one job's histories."""
    with gc_paused():
        return _analyze(job)


def _analyze(job: Job) -> Analysis:
    alignment = align(job.histories)
    states = states_of(alignment)
    found = sorted([*_mismatch(alignment), *_failures(alignment), *_stuck(alignment, states)],
                   key=lambda x: (x[0] or float("inf"), x[1]))
    error = found[0][2] if found else None
    notes = list(job.notes) + list(alignment.notes)
    for h in alignment.histories:
        if h.form != CALL_LOG and h.status == DONE and error is not None \
                and error.kind != "mismatch" and h.rank in error.ranks:
            notes.append(f"{h.label}'s dump has no call in flight: it returned, or waits in "
                         "a call the Flight Recorder does not record (p2p on gloo)")
    if error is None and any(h.form != CALL_LOG for h in alignment.histories):
        notes.append("the Flight Recorder records no p2p call on gloo: ranks blocked in "
                     "send/recv leave no entry (trtsim's call logs record them)")
    return Analysis(job, alignment, error, tuple(notes), behind(alignment, error))
