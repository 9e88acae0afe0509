"""What each guard mode means, decided once for every backend.

- ``strict``: every group is checked on its own, as a real communicator pairs calls: members
  compare records before the real collective, and the first divergent call is reported.
  Legal cross-group divergence (a whole PP group skipping a gather under attention DP) is kept
  as notes.
- ``lockstep``: strict, and also groups of one kind must issue the same calls in each
  iteration (a world-wide barrier assumption): divergence between groups is a mismatch.
- ``off``: nothing is compared and nothing noted. A backend that must execute the calls itself
  (inproc) still reports calls no communicator could pair at all: they would crash or hang on
  a cluster too.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..calls.errors import CollectiveMismatch
from ..calls.records import CallRecord
from .rules import can_pair, check_group_call, differences

GUARDS = ("strict", "lockstep", "off")


@dataclass(frozen=True)
class GuardPolicy:
    """The meaning of one guard mode (see the module note)."""

    mode: str = "strict"

    def __post_init__(self) -> None:
        if self.mode not in GUARDS:
            raise ValueError(f"guard={self.mode!r}; expected one of {', '.join(GUARDS)}")

    @property
    def compares(self) -> bool:
        """Members compare their records before the real call."""
        return self.mode != "off"

    @property
    def tracks_groups(self) -> bool:
        """Per-iteration call lists of the groups of a kind are compared (notes or errors)."""
        return self.mode != "off"

    @property
    def divergence_fails(self) -> bool:
        """Cross-group divergence is a mismatch, not a note."""
        return self.mode == "lockstep"

    def judge(self, first: CallRecord, rec: CallRecord,
              records: dict[int, CallRecord]) -> CollectiveMismatch | None:
        """The report when ``rec`` joins a group sequence that ``first`` opened, or None.
        ``records`` holds every record posted there so far (global rank -> record)."""
        if not differences(first, rec):
            return None
        if self.compares:
            return check_group_call(records)
        if can_pair(first, rec):
            return None
        err = check_group_call(records)
        if err is None:                   # they differ, so the rule finds what differs
            raise AssertionError(f"calls that differ passed the group rule: {rec.short()}")
        err.summary += " (guard off: no communicator can pair these calls)"
        return err
