"""Wait-for analysis: which blocked ranks can never proceed (pure functions).

A blocked rank waits for the members of its group that have not yet entered its call (for a
p2p receive: the sender, unless it delivered the message already; for a blocking send: the
receiver, unless it took the message already: see ``RankState.received``). It can still proceed if any rank
it waits for is running (a slow rank may yet arrive) or is blocked but may itself proceed. The
deadlocked set is therefore the greatest set S of blocked ranks such that every rank each
member of S waits for is finished or in S. A rank merely slower than its peers is running, so
it is never in S: slowness is told apart from deadlock by construction, not by a timeout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..layout.places import rank_label
from ..calls.errors import CollectiveDeadlock, CollectiveTimeout, rank_name
from ..calls.ops import RECEIVES
from ..calls.plain_enum import PlainStrEnum
from ..calls.records import CallRecord


class RankStatus(PlainStrEnum):
    """What a rank is doing, as the wait-for analysis, the ledgers and the call logs name it.
    A member is its value in every serialised form (JSON, call logs, pickles) and equal to it,
    so a log written before reads the same."""

    STARTING = "starting"     # spawned, not yet running the program (read as running)
    RUNNING = "running"
    BLOCKED = "blocked"
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"       # the process is stopped (state T); only a timeout report says so

    @property
    def text(self) -> str:
        """How a report names the status."""
        if self is RankStatus.STOPPED:
            return "stopped (process state T: SIGSTOP, Ctrl-Z or a debugger)"
        return self.value


RUNNING, BLOCKED, DONE, FAILED = (RankStatus.RUNNING, RankStatus.BLOCKED, RankStatus.DONE,
                                  RankStatus.FAILED)


@dataclass(frozen=True)
class RankState:
    """A snapshot of one rank: its status, the call it is blocked in, the last sequence it
    entered on each group, its sends not yet taken by their receivers, and the messages it
    completed: ``received[(src, tag)]`` is the sequence of the last message from global rank
    ``src`` with ``tag`` whose receive completed, ``delivered[(dst, tag)]`` the last one to
    ``dst`` whose send completed (messages on one channel complete in order). A rank shows
    blocked in its call until its Python resumes after the real one: a sender in a send whose
    message the receiver took, a receiver in a receive whose message the sender delivered.
    These tell such a call from a waiting one."""

    rank: int
    status: RankStatus
    call: CallRecord | None = None
    posted: dict[tuple, int] = field(default_factory=dict)
    pending_sends: tuple[tuple[int, int], ...] = ()   # (dst global rank, tag)
    iteration: int = 0                                # the rank's executor iteration now
    name: str = ""                            # "gen rank 3 (global 11)" in a deployment
    received: dict[tuple[int, int], int] = field(default_factory=dict)
    delivered: dict[tuple[int, int], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.status, RankStatus):
            # ValueError naming the value when it is no status
            object.__setattr__(self, "status", RankStatus(self.status))

    @property
    def label(self) -> str:
        """How reports name this rank."""
        if self.name:
            return self.name
        return rank_name(self.call) if self.call is not None else rank_label("", self.rank)

    @property
    def blocked_call(self) -> CallRecord:
        """The call of a blocked rank (every rank a wait-for analysis names is one)."""
        if self.call is None:
            raise ValueError(f"{self.label} is {self.status.text}, in no call")
        return self.call

    @property
    def is_finished(self) -> bool:
        return self.status in (DONE, FAILED)


def waits_for(state: RankState, states: dict[int, RankState]) -> tuple[int, ...]:
    """The ranks ``state``'s blocked call still needs; empty when it can complete."""
    call = state.call
    if state.status != BLOCKED or call is None:
        return ()
    if call.is_p2p:
        peer_rank, tag = call.route
        peer = states.get(peer_rank)
        if peer is None:
            return ()
        if call.op in RECEIVES:
            matched = ((state.rank, tag) in peer.pending_sends
                       or peer.delivered.get((state.rank, tag), -1) >= call.seq)
        else:
            matched = send_matched(call, peer)
        return () if matched else (peer_rank,)
    return tuple(m for m in call.group_ranks if m != state.rank and m in states
                 and states[m].posted.get(call.group_key, 0) < call.seq)


def send_matched(call: CallRecord, peer: RankState) -> bool:
    """Whether blocking send ``call`` can complete as far as its receiver ``peer`` goes:
    the receiver has taken this message already, or sits in the matching receive now."""
    if peer.received.get((call.rank, call.route[1]), -1) >= call.seq:
        return True
    return (peer.status == BLOCKED and peer.call is not None and peer.call.is_p2p
            and peer.call.op in RECEIVES and peer.call.peer == call.rank
            and peer.call.tag == call.tag)


def find_deadlock(states: dict[int, RankState],
                  waits_of: Callable[[RankState], tuple[int, ...]] | None = None,
                  ) -> dict[int, tuple[int, ...]]:
    """Blocked ranks that can never proceed, each with the ranks it waits for; {} if none.
    ``waits_of``: what ``waits_for`` returns for a blocked rank, from a scheduler that keeps
    it already (``waitfor`` itself reads every member's posts: O(group) per blocked rank)."""
    if waits_of is None:
        waits = {r: waits_for(s, states) for r, s in states.items() if s.status == BLOCKED}
    else:
        waits = {r: waits_of(s) for r, s in states.items() if s.status == BLOCKED}
    stuck = {r for r, w in waits.items() if w}
    changed = True
    while changed:
        changed = False
        for r in sorted(stuck):
            if any(w not in stuck and not states[w].is_finished for w in waits[r]):
                stuck.discard(r)
                changed = True
    return {r: waits[r] for r in sorted(stuck)}


def deadlock_error(states: dict[int, RankState],
                   stuck: dict[int, tuple[int, ...]]) -> CollectiveDeadlock:
    """The report for a deadlocked set: who waits in which call for whom, and why."""
    calls = {r: states[r].blocked_call for r in stuck}
    first = min(stuck)
    explanation, focus = _explain(states, stuck)
    call = calls[focus]
    details = []
    for r, waited in stuck.items():
        who = ", ".join(f"{states[w].label} ({states[w].status.text})" for w in waited)
        details.append(f"{rank_name(calls[r])} waits in {calls[r].short()} for {who}")
    involved = set(stuck) | {w for ws in stuck.values() for w in ws}
    # Only the finished ranks the stuck set waits for: which others have finished yet depends
    # on the schedule (a stuck set is reported while unrelated ranks may still run), not on
    # the deadlock.
    finished = sorted(r for r in involved if states[r].status == DONE)
    if finished:
        details.append("finished: " + ", ".join(states[r].label for r in finished))
    summary = (f"{len(stuck)} rank{'s' if len(stuck) > 1 else ''} blocked with no way to proceed "
               f"(first: {rank_name(calls[first])} in {calls[first].short()})")
    return CollectiveDeadlock(summary, group_kind=call.group_kind, group_ranks=call.group_ranks,
                              ranks=tuple(sorted(involved)), calls=calls, details=tuple(details),
                              explanation=explanation)


def timeout_error(states: dict[int, RankState], seconds: float,
                  outside: dict[int, str] | None = None) -> CollectiveTimeout:
    """The report when the launch's timeout passed: every rank's state and blocked call.
    ``outside``: ranks the deadline found blocked outside any communication call (in C code,
    a sleep, a busy loop), with where."""
    outside = outside or {}

    def line(s: RankState) -> str:
        if s.rank in outside:
            return f"{s.label}: blocked outside any collective {outside[s.rank]}"
        return f"{s.label}: {s.status.text}" + (f" in {s.call.short()} at {s.call.callsite}"
                                            if s.call else "")
    details = tuple(line(s) for s in states.values())
    return CollectiveTimeout(f"launch timed out after {seconds:g} s",
                             ranks=tuple(r for r, s in states.items() if not s.is_finished),
                             details=details)


def _explain(states: dict[int, RankState], stuck: dict[int, tuple[int, ...]]) -> tuple[str, int]:
    """One line of diagnosis and the rank whose call it is about."""
    # 0. A rank already in a later iteration than a call it never entered: it skipped it.
    for r, waited in stuck.items():
        call = states[r].blocked_call
        for w in waited:
            if not call.is_p2p and states[w].iteration > call.iteration:
                return (f"{states[w].label} left iteration {call.iteration} "
                        f"without entering {call.short()} (it is in iteration "
                        f"{states[w].iteration} now): it skipped the call its peers wait in", r)
    # 1. A receive whose sender sends with another tag.
    for r, waited in stuck.items():
        call = states[r].blocked_call
        if call.is_p2p and call.op in RECEIVES:
            peer = states[call.route[0]]
            tags = [t for dst, t in peer.pending_sends if dst == r]
            if peer.call is not None and peer.call.is_p2p and peer.call.peer == r \
                    and peer.call.op not in RECEIVES:
                tags.append(peer.call.route[1])
            if tags:
                return (f"{rank_name(call)} waits for tag {call.tag} from "
                        f"{peer.label}, which sends tag {tags[0]}: "
                        "p2p tag mismatch", r)
    # 2. Waiting on a rank that already returned: an early exit (or skipped final calls).
    for r, waited in stuck.items():
        gone = [w for w in waited if states[w].is_finished]
        if gone:
            call = states[r].blocked_call
            waiting = [x for x, ws in stuck.items() if set(gone) & set(ws)]
            names = ", ".join(rank_name(states[x].blocked_call) for x in waiting)
            verb = "failed" if states[gone[0]].status == FAILED else "returned"
            return (f"{states[gone[0]].label} {verb} while {names} "
                    f"wait{'s' if len(waiting) == 1 else ''} in {call.short()} it never "
                    f"entered: it exited early or skipped its last calls", r)
    # 3. A cycle in the wait-for graph.
    cycle = _find_cycle(stuck)
    if cycle:
        steps = [f"{rank_name(states[a].blocked_call)} waits in {states[a].blocked_call.short()} "
                 f"for {rank_name(states[b].blocked_call)}"
                 for a, b in zip(cycle, cycle[1:] + cycle[:1])]
        what = "cross-group wait cycle" if len({states[a].blocked_call.group_key
                                                for a in cycle}) > 1 \
            else "wait cycle"
        text = f"{what}: " + "; ".join(steps)
        if len(cycle) == 2:
            text += (" -- the two ranks issue these calls in opposite orders, or one of them "
                     "skipped the other's call")
        return text, cycle[0]
    call = states[min(stuck)].blocked_call
    return f"{rank_name(call)} waits in {call.short()} for ranks that never arrive", min(stuck)


def _find_cycle(stuck: dict[int, tuple[int, ...]]) -> list[int]:
    """A cycle among the stuck ranks' wait edges (lowest start first), or []."""
    for start in sorted(stuck):
        path, seen = [start], {start: 0}
        node = start
        while True:
            nxt = next((w for w in stuck.get(node, ()) if w in stuck), None)
            if nxt is None:
                break
            if nxt in seen:
                return path[seen[nxt]:]
            seen[nxt] = len(path)
            path.append(nxt)
            node = nxt
    return []
