"""Aligning rank histories per communicator and sequence number.

A communicator pairs the n-th call of each member, so (group, sequence) is the one key that
lines calls up across ranks; positions in a buffer and per-process counters do not (a rank
that skipped a group's calls, or whose ring buffer dropped more, is shifted). A truncated
history is aligned from what survives: calls present at one (group, sequence) are compared
whatever is missing elsewhere, and each group says from which sequence on every member's
history is complete (``start``): a member whose buffer dropped entries may have made the
group's earlier calls, so only from there on is a member's absence evidence that it never
arrived.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .history import Call, RankHistory


@dataclass(frozen=True)
class GroupView:
    """One communicator's calls: ``at[seq][rank]``, each member's first and last sequence
    present (0 when it has none), and ``start`` (see the module note)."""

    key: tuple
    members: tuple[int, ...]
    at: dict[int, dict[int, Call]]
    first: dict[int, int]
    last: dict[int, int]
    start: int
    truncated: tuple[int, ...]

    @property
    def name(self) -> str:
        """``group [0, 1] (torch:1)``: the communicator's kind, ranks and id."""
        kind, ranks, comm = self.key
        return f"{kind} {list(ranks)}" + (f" ({comm})" if comm else "")


@dataclass(frozen=True)
class Alignment:
    """Every communicator's view, and the histories with what alignment settles filled in
    (the roots of gathers and scatters, from who received or sent)."""

    groups: tuple[GroupView, ...]
    histories: tuple[RankHistory, ...]
    notes: tuple[str, ...]


def _resolve_roots(calls: dict[int, Call], members: tuple[int, ...]) -> dict[int, Call]:
    """Roots of one gather/scatter sequence from the members' buffer shapes: a member that
    received (gather) or sent (scatter) the whole is the root in its own view."""
    claim = {r: c.claims_root for r, c in calls.items() if c.claims_root is not None}
    if not claim:
        return {}
    claimants = [r for r, is_root in claim.items() if is_root]
    out = {}
    for r in claim:
        if len(claimants) == 1:
            root = members.index(claimants[0])
        elif claim[r]:
            root = members.index(r)
        elif len(members) == 2:
            root = 1 - members.index(r)      # not itself: the other one
        else:
            root = None
        out[r] = replace(calls[r], record=calls[r].record._replace(root=root), claims_root=None)
    return out


def align(histories: tuple[RankHistory, ...]) -> Alignment:
    """Line every history's collectives up per (communicator, sequence)."""
    views: dict[tuple, dict[int, dict[int, Call]]] = {}
    index: dict[tuple, tuple[int, int]] = {}
    for h in histories:
        for i, call in enumerate(h.calls):
            rec = call.record
            if rec.is_p2p:
                continue
            views.setdefault(rec.group_key, {}).setdefault(rec.seq, {})[h.rank] = call
            index[(rec.group_key, rec.seq, h.rank)] = (h.rank, i)
    fixed: dict[tuple[int, int], Call] = {}
    truncated_ranks = {h.rank for h in histories if h.dropped}
    groups = []
    for key, at in views.items():
        members = key[1]
        first = {m: 0 for m in members}
        last = {m: 0 for m in members}
        for seq in sorted(at):
            calls = at[seq]
            for r in calls:
                first[r] = first[r] or seq
                last[r] = seq
            resolved = _resolve_roots(calls, members)
            for r, call in resolved.items():
                calls[r] = call
                fixed[index[(key, seq, r)]] = call
        cut = [m for m in members if m in truncated_ranks]
        unknown = [m for m in cut if not first[m]]
        start = max([first[m] for m in cut if first[m]] + [1])
        if unknown:
            start = max(last.values()) + 1        # a member's part of it is lost entirely
        groups.append(GroupView(key, members, at, first, last, start, tuple(cut)))
    if fixed:
        histories = tuple(replace(h, calls=tuple(fixed.get((h.rank, i), c)
                                                 for i, c in enumerate(h.calls)),
                                  blocked=_same(h, fixed)) for h in histories)
    return Alignment(tuple(sorted(groups, key=lambda g: (g.key[0] != "world", g.key))),
                     histories, _truncation_notes(histories, groups))


def _same(h: RankHistory, fixed: dict) -> Call | None:
    if h.blocked is None:
        return None
    i = next(i for i, c in enumerate(h.calls) if c is h.blocked)
    return fixed.get((h.rank, i), h.blocked)


def _truncation_notes(histories, groups) -> tuple[str, ...]:
    notes = []
    cut = [(h.label, h.dropped) for h in histories if h.dropped]
    if cut:
        what = "ring buffer" if histories[0].form != "trtsim call log" else "call log"
        counts = sorted({d for _, d in cut})
        many = f"{len(cut)} ranks' {what}s dropped their oldest entries ({counts[0]}" + \
            (f" to {counts[-1]}" if len(counts) > 1 else "") + " each)"
        few = ", ".join(f"{name}'s {what} dropped its {d} oldest entries" for name, d in cut)
        notes.append(f"{few if len(cut) <= 3 else many}: calls are aligned from what survives")
    late = sorted((g.start, g.key[2] or g.name) for g in groups if g.truncated and g.start > 1)
    if late:
        shown = ", ".join(f"{name} from #{start}" for start, name in late[:3]) + \
            (f" and {len(late) - 3} more groups" if len(late) > 3 else "")
        notes.append(f"every member's history is complete only later on: {shown}; earlier "
                     "calls are compared where two members still have them")
    return tuple(notes)
