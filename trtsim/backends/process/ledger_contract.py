"""The ledger contract: what a process rank's transport and the deadlock monitor need from a
call ledger, whichever one backs it.

Three ledgers honour it: ``ledger.Ledger`` (shared memory, one host), ``store_ledger.StoreLedger``
(the c10d store, across nodes) and ``logged.LoggedLedger``, the call log's wrapper over either.
The transport trusts ``post``'s return value: it is the match hash of the record, compared
with each peer's published hash to take the fast path (equal hashes: no record is read back).
A ledger whose ``post`` returned nothing would turn that path off silently and make every call
unpickle its peers' records, so the contract is written down here and checked by the type
checker (mypy, ``setup.cfg``) wherever a ledger is handed on: every rank's start-up
(``rank_start.start_rank``, mpirun's) passes its ledger as a ``RankLedger`` through
``logged.logged_ledger`` to ``TorchTransport``, and these are annotated, so their bodies are
checked, and the wrapper writes every method out (no forwarding by name lookup).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ...layout.places import RankPlace
from ...guard.waitfor import RankState, RankStatus
from ...calls.records import CallRecord


class RankLedger(Protocol):
    """One rank's side of the ledger (``TorchTransport``'s)."""

    def post(self, r: int, rec: CallRecord) -> bytes:
        """Publish ``rec`` as rank r's current call; return its match hash."""
        ...

    def notify(self, ranks: list[int]) -> None: ...
    def wait_for_post(self, r: int, timeout: float) -> None: ...
    def read_seq_hash(self, r: int, rec: CallRecord) -> tuple[int, bytes]: ...
    def read_call(self, r: int, rec: CallRecord) -> CallRecord | None: ...
    def arrival(self, r: int, rec: CallRecord) -> float: ...
    def set_status(self, r: int, status: RankStatus) -> None: ...

    def message_done(self, r: int, rec: CallRecord, returned: bool) -> None:
        """Rank r's message ``rec`` completed (a receive's taken, a send's delivered: the
        peer's call no longer waits for r, whatever r's status still says); ``returned``:
        r's call returned with it, and r runs."""
        ...

    def set_ready(self, r: int, pid: int) -> None: ...
    def set_iteration(self, r: int, iteration: int) -> None: ...
    def set_pending_sends(self, r: int, sends: list[tuple[int, int]]) -> None: ...

    @property
    def aborted(self) -> bool: ...


class LedgerView(Protocol):
    """What the deadlock monitor reads: every rank's state, and a version per rank that
    changes with each write (a snapshot is consistent when no version moved under it)."""

    def versions(self) -> np.ndarray: ...
    def snapshot(self, places: list[RankPlace]) -> dict[int, RankState]: ...
