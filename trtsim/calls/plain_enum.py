"""PlainStrEnum: a closed set of names whose members are their plain strings everywhere.

A member hashes, prints, formats, repr()s and pickles as its value, and equals it, so dicts
keyed by the strings, call logs, JSON and pickles written before the enum read the same, and
a pickled member needs no Python code to load (the process backend's ledger and queues carry
them by the thousand). The op table (``ops.Op``) and rank statuses (``guard.waitfor``) use it.
"""

from __future__ import annotations

from enum import Enum


class PlainStrEnum(str, Enum):
    """A ``str`` enum whose members behave as their values in every serialised form."""

    __hash__ = str.__hash__
    __str__ = str.__str__

    def __format__(self, spec: str) -> str:
        return str.__format__(self.value, spec)

    def __repr__(self) -> str:
        return str.__repr__(self.value)

    def __reduce_ex__(self, protocol):
        return (str, (self.value,))
