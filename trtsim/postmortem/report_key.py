"""What makes two reports the same report, as typed fields: a replay is judged by these,
never by its rendered text (which changes with wording, and holds a failed rank's traceback).

The key of a report is its type, its group (kind and ranks), the ranks it involves, a failed
rank's number, and, per rank, the call it names (op, label, sequence, iteration). The key of
no report (a consistent run) is ``ReportKey.NONE``. A replay file carries the key of the
report it reproduces (``expect``) as a JSON list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..calls.errors import CollectiveError

_CALL_FIELDS = 5         # rank, op, label, seq, iteration


@dataclass(frozen=True)
class ReportKey:
    """A report's identity (see the module text); ``type`` "" for no report."""

    type: str
    group_kind: str = ""
    group_ranks: tuple[int, ...] = ()
    ranks: tuple[int, ...] = ()
    rank: int | None = None
    calls: tuple[tuple[int, str, str | None, int, int], ...] = ()

    def __post_init__(self) -> None:
        for name in ("group_ranks", "ranks"):
            value = getattr(self, name)
            if not all(type(r) is int for r in value):
                raise ValueError(f"{name}: {value!r} is not a list of rank numbers")
            object.__setattr__(self, name, tuple(sorted(value)))
        if self.rank is not None and type(self.rank) is not int:
            raise ValueError(f"rank: {self.rank!r} is not a rank number")
        for call in self.calls:
            if not (len(call) == _CALL_FIELDS and type(call[0]) is int and isinstance(call[1], str)
                    and (call[2] is None or isinstance(call[2], str))
                    and type(call[3]) is int and type(call[4]) is int):
                raise ValueError(f"calls: {call!r} is not [rank, op, label, seq, iteration]")
        object.__setattr__(self, "calls", tuple(sorted(
            (tuple(c) for c in self.calls), key=lambda c: (c[0], c[1], c[2] is None, c[2] or "",
                                                           c[3], c[4]))))

    @classmethod
    def of(cls, err: CollectiveError | None) -> "ReportKey":
        """The key of report ``err`` (``NONE`` for no report)."""
        if err is None:
            return NONE
        rank = getattr(err, "rank", None)
        return cls(type(err).__name__, err.group_kind or "", tuple(err.group_ranks),
                   tuple(err.ranks), rank if type(rank) is int else None,
                   tuple((r, str(c.op), c.label, c.seq, c.iteration)
                         for r, c in err.calls.items()))

    def to_json(self) -> list:
        """The key as a replay file writes it."""
        return [self.type, self.group_kind, list(self.group_ranks), list(self.ranks), self.rank,
                [list(c) for c in self.calls]]

    @classmethod
    def from_json(cls, value: Any) -> "ReportKey":
        """``to_json``'s inverse; ValueError (one line) when ``value`` is not one."""
        if not (isinstance(value, list) and len(value) == 6 and isinstance(value[0], str)
                and isinstance(value[1], str) and isinstance(value[2], list)
                and isinstance(value[3], list) and isinstance(value[5], list)
                and all(isinstance(c, list) for c in value[5])):
            raise ValueError("not [type, group_kind, group_ranks, ranks, rank, calls]")
        return cls(value[0], value[1], tuple(value[2]), tuple(value[3]), value[4],
                   tuple(tuple(c) for c in value[5]))


NONE = ReportKey("")
