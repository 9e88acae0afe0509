"""GateBoard: the members' gates compared, one collective at a time, once all have entered it.

Each rank's ``GateWatch`` posts the gates it passed to reach its n-th call on a communicator;
when the last member of the group has posted, the board compares the gates every member
passed (by site):

- the same outcome with operands that differ (by ``gate_values``' rule: 3 tokens against 5
  under ``> 0``) makes the gate **latent**: one value away from a member not entering;
- different outcomes that still reached the same collective (TensorRT-LLM's root broadcast,
  ``if rank == 0: broadcast(x) else: broadcast(None)``) decide only the line: not latent;
- an outcome that changed at different iterations on different members is latent too.

One ``LatentGate`` per (site, group): the first iteration it showed. On inproc every rank
posts here directly (one process); a lock keeps the threads of an intercepted launch apart.
"""

from __future__ import annotations

import threading
from collections import Counter

from .latent_gate import LatentGate


class GateBoard:
    """The launch's comparison of gate observations; ``latent()`` the result."""

    def __init__(self):
        self._pending: dict[tuple, dict[int, list]] = {}
        self._found: dict[tuple, LatentGate] = {}         # (site, group) -> gate
        self._changes: dict[tuple, list] = {}             # (site, group, rank) -> [iteration]
        self._last: dict[tuple, tuple] = {}               # (site, group, rank) -> (outcome, seen)
        self._lock = threading.Lock()

    def post(self, rec, rank: int, seen: list) -> None:
        """Rank ``rank`` reached ``rec`` past ``seen`` (Seen, innermost frame first)."""
        members = rec.group_ranks
        key = (rec.group_kind, members, rec.comm, rec.seq)
        with self._lock:
            posts = self._pending.setdefault(key, {})
            posts[rank] = seen
            if len(posts) < len(members):
                return
            del self._pending[key]
            self._judge(rec, posts)

    def _judge(self, rec, posts: dict[int, list]) -> None:
        by_rank = {r: {} for r in posts}
        for r, seen in posts.items():
            for s in seen:
                by_rank[r].setdefault(s.site, s)
        group = tuple(sorted(posts))
        common = set.intersection(*(set(d) for d in by_rank.values())) if by_rank else set()
        for site in common:
            here = {r: by_rank[r][site] for r in group}
            self._track_changes(site, group, here, rec.call_name)
            if (site, group) in self._found:
                continue
            outcomes = {s.outcome for s in here.values()}
            if len(outcomes) == 1 and len({s.key for s in here.values()}) > 1:
                self._found[(site, group)] = _latent(here, rec, group)

    def _track_changes(self, site: str, group: tuple, here: dict, collective: str) -> None:
        for r, s in here.items():
            last = self._last.get((site, group, r))
            if last is not None and last[0] != s.outcome:
                self._changes.setdefault((site, group, r), []).append(s.iteration)
            if last is None or last[0] != s.outcome:
                self._last[(site, group, r)] = (s.outcome, s, collective)

    def latent(self) -> list[LatentGate]:
        """The latent gates, in the order they were first seen (outcome changes at
        different iterations added at the end)."""
        with self._lock:
            out = dict(self._found)
            groups = {(site, group) for site, group, _ in self._last}
            for site, group in sorted(groups):
                if (site, group) in out:
                    continue
                changes = {r: tuple(self._changes.get((site, group, r), ())) for r in group}
                if len(set(changes.values())) > 1:
                    out[(site, group)] = self._changed(site, group, changes)
            return list(out.values())

    def _changed(self, site: str, group: tuple, changes: dict) -> LatentGate:
        """A gate whose outcome changed at different iterations: named at the earliest."""
        first = min(min(c) for c in changes.values() if c)
        here = {r: self._last[(site, group, r)][1] for r in group}
        collective = self._last[(site, group, group[0])][2]
        early = [r for r in group if first in changes[r]]
        flip_rank = min(early)
        s0 = here[flip_rank]
        return LatentGate(site, s0.condition, collective, group, first,
                          {r: s.text for r, s in here.items()},
                          {r: s.outcome for r, s in here.items()},
                          flip_rank=flip_rank, evaluation=s0.evaluation, path=s0.path)


def _latent(here: dict, rec, group: tuple) -> LatentGate:
    """The gate as its members passed it; the member a flip flips: one whose operands differ
    from the commonest values, or the lowest rank when none is commoner."""
    counts = Counter(s.key for s in here.values())
    top = counts.most_common()
    if len(top) > 1 and top[0][1] > top[1][1]:
        flip_rank = min(r for r, s in here.items() if s.key != top[0][0])
    else:
        flip_rank = min(here)
    first = here[flip_rank]
    return LatentGate(first.site, first.condition, rec.call_name, group,
                      min(s.iteration for s in here.values()),
                      {r: s.text for r, s in here.items()},
                      {r: s.outcome for r, s in here.items()},
                      flip_rank=flip_rank, evaluation=first.evaluation, path=first.path)
