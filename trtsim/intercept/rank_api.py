"""Communicators of intercepted APIs, and the bridge from their calls to a rank's Distributed.

A ``Comm`` is one communicator as every member sees it: an id all members agree on (built
from the order of collective creation, which every member shares), its global ranks in
communicator order, and the kind a report names it by (``tp`` when its rank set is the
caller's TP group, ``world`` for the whole launch, else what made it: ``split`` for torch's
``new_group`` and MPI's ``Split``, ``mesh dp`` for a device mesh's ``dp`` dimension, or
``group``). ``RankAPI`` is one rank's entry point: it records and guards each intercepted
call through the rank's Distributed, so purposes, iterations, the census and the reports are
the same as for Distributed's own calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TypeVar

from ..comm.current import current
from ..comm.distributed import Distributed

T = TypeVar("T")


@dataclass(frozen=True)
class Comm:
    """One intercepted communicator (torch process group, MPI communicator)."""

    id: str
    ranks: tuple[int, ...]
    kind: str = "group"      # its name when its rank set is no group of the layout

    def __post_init__(self) -> None:
        if not self.kind or not isinstance(self.kind, str):
            raise ValueError(f"Comm {self.id!r}: kind={self.kind!r} must name what made it")

    def index(self, global_rank: int, what: str = "rank") -> int:
        """The group index of a global rank; ValueError when it is no member."""
        try:
            return self.ranks.index(global_rank)
        except ValueError:
            raise ValueError(f"{what} {global_rank} is not in the group {list(self.ranks)}") \
                from None


class RankAPI:
    """One rank's view for intercepted APIs: its Distributed and each API's rank state
    (``extension``: the torch stand-in's ``TorchRank``, the MPI stand-in's ``MPIRank``).
    ``RankAPI.of(dist)`` is the one way to get it: made on first use, kept on the
    Distributed (``Distributed.intercepted``)."""

    def __init__(self, dist: Distributed):
        self.dist = dist
        self._extensions: dict[type, object] = {}      # state class -> this rank's instance
        # (communicator ranks, its own kind) -> the kind reports name it by
        self._kinds: dict[tuple[tuple[int, ...], str], str] = {}

    @classmethod
    def of(cls, dist: Distributed) -> RankAPI:
        """``dist``'s RankAPI, made and kept on first use."""
        api = dist.intercepted
        if not isinstance(api, cls):
            api = cls(dist)
            dist.intercepted = api
        return api

    def attach(self, state: object) -> None:
        """Keep one API's state for this rank (one per class)."""
        self._extensions[type(state)] = state

    def extension(self, cls: type[T]) -> T | None:
        """This rank's state of class ``cls``, or None when that API is not intercepted."""
        state = self._extensions.get(cls)
        return state if isinstance(state, cls) else None

    @property
    def rank(self) -> int:
        return self.dist.global_rank

    @property
    def world(self) -> tuple[int, ...]:
        """Every global rank of the launch (what torch's and MPI's world is here)."""
        offsets = self.dist.place.offsets
        return tuple(range(sum(size for _, _, size in offsets) if offsets else
                           self.dist.world_size))

    @property
    def real(self) -> bool:
        """The backend runs real collectives (processes): calls run underneath the guard."""
        return self.dist.runs_real_calls

    def kind_of(self, ranks: tuple[int, ...], made_as: str = "group") -> str:
        """How reports name a communicator over ``ranks``: a group kind of the layout when the
        set is one of this rank's groups, ``world`` for the whole launch, else ``made_as``
        (the communicator's own kind)."""
        members = tuple(sorted(ranks))
        if members == self.world:
            return "world"
        for kind, group in self.dist.place.groups().items():
            if members == tuple(sorted(group)) and len(members) > 1:
                return kind                  # the first kind that fits: tp before tp_cp
        return made_as

    def collective(self, comm: Comm, op: str, payload: object, api: str,
                   root: int | None = None, reduce_op: str | None = None,
                   run: Callable[[], object] | None = None) -> object:
        key = (comm.ranks, comm.kind)
        kind = self._kinds.get(key)                # the same on every call: worked out once
        if kind is None:
            kind = self._kinds[key] = self.kind_of(comm.ranks, comm.kind)
        return self.dist.issue_collective(kind, op, payload, None, root, reduce_op,
                                          group=comm.ranks, comm=comm.id, api=api, run=run)

    def send(self, op: str, payload: object, peer: int, tag: int, api: str, blocking: bool,
             run: Callable[[], object] | None = None) -> object:
        return self.dist.issue_p2p(op, payload, peer, tag, None, blocking, global_peer=True,
                                   api=api, run=run)

    def recv(self, op: str, buffer: object, peer: int, tag: int, api: str, blocking: bool,
             run: Callable[[], object] | None = None) -> object:
        return self.dist.issue_p2p(op, buffer, peer, tag, None, blocking, global_peer=True,
                                   api=api, run=run)


def rank_api(what: str) -> RankAPI:
    """The current rank's RankAPI; RuntimeError outside a launched rank."""
    dist = current()
    if dist is None:
        raise RuntimeError(f"{what} was called outside a rank of trtsim.launch(..., intercept=...)")
    return RankAPI.of(dist)
