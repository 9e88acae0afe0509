"""GateBoard: the members' gates compared, one collective at a time, once all have entered it.

Each rank's ``GateWatch`` posts the gates it passed to reach its n-th call on a communicator;
when the last member of the group has posted, the board compares the gates every member
passed (by site):

- the same outcome with operands that differ (by ``gate_values``' rule: 3 tokens against 5
  under ``> 0``) makes the gate **latent**: one value away from a member not entering;
- different outcomes that still reached the same collective (TensorRT-LLM's root broadcast,
  ``if rank == 0: broadcast(x) else: broadcast(None)``) decide only the line: not latent;
- an outcome that changed at different iterations on different members is latent: the
  members agreed on it at earlier calls, and now reach the collective with different ones.

One ``LatentGate`` per (site, group): the first iteration it showed. On inproc every rank
posts here directly (one process); ``ThreadedGateBoard`` keeps the threads of an intercepted
launch apart (greenlets take turns: they need no lock).
The common case -- every member passed the same gates with the same outcomes and keys -- is
one comparison of their signatures.
"""

from __future__ import annotations

import threading
from collections import Counter

from .gate_seen import Seen, seen_of
from .latent_gate import LatentGate


class GateBoard:
    """The launch's comparison of gate observations; ``latent()`` the result."""

    def __init__(self):
        self._pending: dict[tuple, dict[int, tuple]] = {}
        self._found: dict[tuple, LatentGate] = {}         # ((site, condition), group) -> gate
        self._agreed: dict[tuple, bool] = {}              # the same -> first agreed outcome
        self._last_agreed: dict[tuple, tuple] = {}        # members -> last agreed signature

    def post(self, rec, rank: int, sig: tuple, seen: list) -> None:
        """Rank ``rank`` reached ``rec`` past the gates of ``sig`` ((gate identity, outcome,
        key) each; a gate is its site, condition and column: two may share a line) and
        ``seen`` (``gate_watch.observe``'s raw entries, or ``Seen``), innermost first."""
        members = rec.group_ranks
        key = (rec.group_kind, members, rec.comm, rec.seq)
        posts = self._pending.get(key)
        if posts is None:
            posts = self._pending[key] = {}
        posts[rank] = (sig, seen)
        if len(posts) < len(members):
            return
        del self._pending[key]
        for p in posts.values():
            if p[0] != sig:
                break
        else:                                   # the same gates, equal: done
            if sig and self._last_agreed.get(members) != sig:
                self._agree(members, sig)
            return
        self._judge(rec, {r: [s if isinstance(s, Seen) else seen_of(s) for s in p[1]]
                          for r, p in posts.items()})

    def _agree(self, members: tuple, sig: tuple) -> None:
        """Each gate's first outcome on which ``members`` agreed; the signature is kept to
        skip this while the group's next calls agree on the same one (the common case)."""
        agreed = self._agreed
        for ident, outcome, _ in sig:
            if (ident, members) not in agreed:
                agreed[(ident, members)] = outcome
        self._last_agreed[members] = sig

    def _judge(self, rec, posts: dict[int, list]) -> None:
        by_rank: dict[int, dict] = {r: {} for r in posts}
        for r, seen in posts.items():
            for s in seen:
                by_rank[r].setdefault((s.site, s.condition, s.col), s)
        group = tuple(sorted(posts))
        common = set.intersection(*(set(d) for d in by_rank.values()))
        for site in sorted(common):             # (site, condition, col)
            here = {r: by_rank[r][site] for r in group}
            outcomes = {s.outcome for s in here.values()}
            agreed = self._agreed.get((site, group))
            if len(outcomes) == 1 and agreed is None:
                self._agreed[(site, group)] = next(iter(outcomes))
            if (site, group) in self._found:
                continue
            if len(outcomes) == 1 and len({s.key for s in here.values()}) > 1 and \
                    not _decided(here):
                self._found[(site, group)] = _latent(here, rec, group, _odd_one(here))
            elif len(outcomes) > 1 and agreed is not None:
                changed = min(r for r, s in here.items() if s.outcome != agreed)
                self._found[(site, group)] = _latent(here, rec, group, changed)

    def latent(self) -> list[LatentGate]:
        """The latent gates, in the order they were first seen (after the ranks ran)."""
        return list(self._found.values())


class ThreadedGateBoard(GateBoard):
    """The board of a launch whose ranks are threads (intercepted torch): one post at a
    time (greenlets take turns: the plain board needs no lock)."""

    def __init__(self):
        super().__init__()
        self._lock = threading.Lock()

    def post(self, rec, rank: int, sig: tuple, seen: list) -> None:
        with self._lock:
            super().post(rec, rank, sig, seen)


def _decided(here: dict) -> bool:
    """An or/and test one of whose parts gives the outcome alone on every member, with the
    same operands: the parts whose operands differ decide nothing."""
    parts = [s.parts for s in here.values()]
    if not parts[0] or any(len(p) != len(parts[0]) for p in parts):
        return False
    want = parts[0][0] == "or"          # or: a part true everywhere; and: false everywhere
    for i in range(1, len(parts[0])):
        column = [p[i] for p in parts]
        if all(c[0] is want for c in column) and len({c[1] for c in column}) == 1:
            return True
    return False


def _odd_one(here: dict) -> int:
    """The member a flip flips: one whose operands differ from the commonest values, or the
    lowest rank when none is commoner."""
    top = Counter(s.key for s in here.values()).most_common()
    if len(top) > 1 and top[0][1] > top[1][1]:
        return min(r for r, s in here.items() if s.key != top[0][0])
    return min(here)


def _latent(here: dict, rec, group: tuple, flip_rank: int) -> LatentGate:
    first = here[flip_rank]
    return LatentGate(first.site, first.condition, rec.call_name, group,
                      min(s.iteration for s in here.values()),
                      {r: s.text for r, s in here.items()},
                      {r: s.outcome for r, s in here.items()},
                      flip_rank=flip_rank, evaluation=first.evaluation, path=first.path,
                      col=first.col)
