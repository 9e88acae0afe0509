"""What a spawned rank tells its launcher over the result queue: one small picklable record
per kind of message, read with ``match`` (``spawn``), never by position.

Results and reports travel pickled inside the message (``bytes``): a rank's result is the
program's own object, which the launcher unpickles only when it takes it, so a result that
cannot be unpickled there fails that rank alone, with its name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


def _check_rank(rank: int) -> None:
    if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
        raise ValueError(f"rank message: rank {rank!r} is not a rank number")


@dataclass(frozen=True)
class RankFinished:
    """The rank's program returned: its pickled result, its census, its collectives (for the
    launcher's lockstep replay), its clock events and its notes."""

    rank: int
    result: bytes
    census: dict = field(default_factory=dict)
    log: list = field(default_factory=list)
    clocks: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def __post_init__(self) -> None:
        _check_rank(self.rank)


@dataclass(frozen=True)
class RankRaised:
    """The rank's program raised: the exception as one line, the traceback, and whether the
    exception says a peer's connection went away (``culprit.is_peer_loss``)."""

    rank: int
    message: str
    traceback: str
    peer_loss: bool = False

    def __post_init__(self) -> None:
        _check_rank(self.rank)


@dataclass(frozen=True)
class RankReported:
    """The rank's guard found a divergence: the pickled report that ends the launch."""

    rank: int
    report: bytes

    def __post_init__(self) -> None:
        _check_rank(self.rank)


@dataclass(frozen=True)
class GroupAnnounced:
    """A group the rank's ledger slots name by digest only (``record_codec``): its ranks."""

    rank: int
    digest: str
    ranks: tuple[int, ...]

    def __post_init__(self) -> None:
        _check_rank(self.rank)
        object.__setattr__(self, "ranks", tuple(self.ranks))


RankMessage = Union[RankFinished, RankRaised, RankReported, GroupAnnounced]

