"""Where every rank of a launch sits: its instance, its Mapping and its global number.

A launch runs one or more instances (a plain launch: one unnamed instance; a deployment: ``ctx``
then ``gen``). Ranks are numbered globally in instance order; records and reports carry global
ranks, and ``rank_label`` (``ranks_label`` for a set) is the one way a report names a rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from .mapping import Mapping
from .parallel import GROUP_KINDS, ParallelLayout


class Peer(NamedTuple):
    """A rank of another instance of the deployment (``instance`` by name)."""

    instance: str
    rank: int


def rank_label(instance: str, local_rank: int, global_rank: int | None = None) -> str:
    """How every report, trace and summary names a rank: ``rank 3`` in a plain launch (local
    and global numbers are one), ``gen rank 2 (global 10)`` in a deployment (the rank inside
    its instance, as its Mapping numbers it, then the launch-wide number that group lists,
    records and JSON carry)."""
    if not instance:
        return f"rank {local_rank}"
    if global_rank is None:
        return f"{instance} rank {local_rank}"
    return f"{instance} rank {local_rank} (global {global_rank})"


def ranks_label(instance: str, global_ranks, offset: int = 0, what: str = "ranks") -> str:
    """A set of ranks in ``rank_label``'s scheme: ``ranks [0, 4]`` in a plain launch,
    ``ctx ranks [3, 7] (global [3, 7])`` in a deployment (``offset``: the global number of
    the instance's rank 0); ``what="pp group"`` names a group: ``gen pp group [0, 2]
    (global [8, 10])``."""
    ranks = sorted(global_ranks)
    if not instance:
        return f"{what} {ranks}"
    return f"{instance} {what} {[r - offset for r in ranks]} (global {ranks})"


class GroupRanks(tuple):
    """A group's global ranks, ascending: a tuple that computes its hash once. Group keys
    are dict keys on every call, and a group may hold thousands of ranks (``group_ranks``
    makes one only for those: a small tuple hashes faster in C than through this method)."""

    def __new__(cls, ranks=()):
        self = super().__new__(cls, ranks)
        self._hash = tuple.__hash__(self)
        return self

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return (GroupRanks, (tuple(self),))


@dataclass(frozen=True)
class InstanceLayout:
    """One instance of a launch: its name (empty for a plain launch), role and layout."""

    name: str
    role: str
    spec: ParallelLayout


@dataclass(frozen=True)
class RankPlace:
    """Where one rank sits in a launch: its instance, mapping and global numbering.

    ``offsets`` maps every instance name to the global rank of its rank 0, so p2p peers in
    other instances can be addressed; global ranks are what records and reports carry.
    """

    mapping: Mapping
    instance: str = ""
    offset: int = 0
    offsets: tuple[tuple[str, int, int], ...] = ()   # (instance, offset, world_size)
    role: str = ""                                  # "ctx" | "gen" | "" (plain launch)
    delay: float = 0.0                              # seconds of extra work before each call
    # This rank's groups by kind, as global ranks: tuples shared by every member (rank_places
    # builds each group once, so a launch's places hold O(ranks) numbers, not O(ranks^2)).
    shared_groups: dict | None = field(default=None, compare=False, repr=False)

    @property
    def global_rank(self) -> int:
        return self.offset + self.mapping.rank

    @property
    def name(self) -> str:
        """``gen rank 3 (global 11)`` in a deployment, ``rank 3`` in a plain launch."""
        return rank_label(self.instance, self.mapping.rank, self.global_rank)

    def to_global(self, local_ranks) -> tuple[int, ...]:
        return tuple(self.offset + r for r in local_ranks)

    def groups(self) -> dict[str, tuple[int, ...]]:
        """This rank's groups by kind, as global ranks."""
        if self.shared_groups is not None:
            return dict(self.shared_groups)
        return {kind: self.to_global(self.mapping.group(kind)) for kind in GROUP_KINDS}

    def peer_global(self, peer: "int | Peer") -> int:
        if isinstance(peer, Peer):
            for name, offset, size in self.offsets:
                if name == peer.instance:
                    if not 0 <= peer.rank < size:
                        raise ValueError(f"{peer}: rank out of range for instance of {size} ranks")
                    return offset + peer.rank
            raise ValueError(f"unknown instance {peer.instance!r} in {peer}")
        if not isinstance(peer, int) or not 0 <= peer < self.mapping.world_size:
            raise ValueError(f"peer rank {peer!r} out of range for world_size="
                             f"{self.mapping.world_size}")
        return self.offset + peer


def rank_places(instances: list[InstanceLayout],
                delays: tuple[tuple[int, float], ...] = ()) -> list[RankPlace]:
    """Every rank of the launch, numbered globally in instance order."""
    offsets, start = [], 0
    for inst in instances:
        offsets.append((inst.name, start, inst.spec.world_size))
        start += inst.spec.world_size
    world = start
    for rank, _ in delays:
        if rank >= world:
            raise ValueError(f"delays: rank {rank} out of range for {world} ranks")
    delay_of = dict(delays)
    places = []
    for inst, (_, offset, size) in zip(instances, offsets):
        member_of = _groups_by_rank(inst.spec, offset)
        for r in range(size):
            places.append(RankPlace(inst.spec.mapping(r), inst.name, offset, tuple(offsets),
                                    inst.role, delay_of.get(offset + r, 0.0),
                                    {kind: member_of[kind][r] for kind in GROUP_KINDS}))
    return places


# Groups up to this size are plain tuples: hashing a handful of ints in C beats a call of
# ``GroupRanks.__hash__``; above it, hashing the members on every lookup would cost O(group).
SMALL_GROUP = 64


def group_ranks(ranks) -> tuple[int, ...]:
    """A group's global ranks as the hot paths key them: a plain tuple, or a ``GroupRanks``
    (hash computed once) for groups above ``SMALL_GROUP`` ranks. Both compare as tuples."""
    ranks = tuple(ranks)
    return GroupRanks(ranks) if len(ranks) > SMALL_GROUP else ranks


def _groups_by_rank(spec: ParallelLayout, offset: int) -> dict[str, list[tuple[int, ...]]]:
    """kind -> the global-rank group of each local rank, every group one shared tuple."""
    out = {}
    for kind in GROUP_KINDS:
        of_rank: list = [None] * spec.world_size
        for g in spec.groups(kind):
            shared = group_ranks(offset + r for r in g)
            for r in g:
                of_rank[r] = shared
        out[kind] = of_rank
    return out


def group_table(instances: list[InstanceLayout]) -> dict[tuple[str, str], list[tuple[int, ...]]]:
    """Every group of every kind, per instance: (instance, kind) -> sorted global-rank tuples.
    Built from the layouts, each group once: O(ranks) per kind."""
    table, offset = {}, 0
    for inst in instances:
        for kind in GROUP_KINDS:
            table[(inst.name, kind)] = sorted(tuple(offset + r for r in g)
                                              for g in inst.spec.groups(kind))
        offset += inst.spec.world_size
    return table
