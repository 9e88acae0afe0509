"""A rank's ledger and transport, telling its call log what they do (``call_log_writer``): wrappers
that keep the contracts of what they wrap (``ledger_contract.RankLedger``, the Transport of
``comm.distributed``) and change nothing in it. Every method is written out, none forwarded
by name lookup, so the type checker holds each wrapper to its contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import torch

from ...timeline.clock import RankClock
from ...calls.records import CallRecord
from ...guard.waitfor import RUNNING, RankStatus
from .ledger_contract import RankLedger

if TYPE_CHECKING:
    from .call_log_writer import CallLogger
    from .transport import TorchTransport


class LoggedLedger:
    """The rank's ledger, telling the logger what the monitor learns: the ledger methods that
    change a rank's state tell it first; the others are the ledger's. ``post`` returns the
    record's match hash, which the transport compares with its peers' to skip reading their
    records (the fast path)."""

    def __init__(self, ledger: RankLedger, logger: CallLogger):
        self._ledger, self._logger = ledger, logger

    def post(self, r: int, rec: CallRecord) -> bytes:
        self._logger.posted(rec)
        return self._ledger.post(r, rec)

    def set_status(self, r: int, status: RankStatus) -> None:
        self._logger.set_status(status)
        self._ledger.set_status(r, status)

    def message_done(self, r: int, rec: CallRecord, returned: bool) -> None:
        if returned:
            self._logger.set_status(RUNNING)
        self._ledger.message_done(r, rec, returned)

    def set_iteration(self, r: int, iteration: int) -> None:
        self._logger.iteration = iteration
        self._ledger.set_iteration(r, iteration)

    def set_pending_sends(self, r: int, sends: list[tuple[int, int]]) -> None:
        self._logger.pending = tuple(tuple(s) for s in sends)
        self._ledger.set_pending_sends(r, sends)

    def set_ready(self, r: int, pid: int) -> None:
        self._ledger.set_ready(r, pid)

    def notify(self, ranks: list[int]) -> None:
        self._ledger.notify(ranks)

    def wait_for_post(self, r: int, timeout: float) -> None:
        self._ledger.wait_for_post(r, timeout)

    def read_seq_hash(self, r: int, rec: CallRecord) -> tuple[int, bytes]:
        return self._ledger.read_seq_hash(r, rec)

    def read_call(self, r: int, rec: CallRecord) -> CallRecord | None:
        return self._ledger.read_call(r, rec)

    def arrival(self, r: int, rec: CallRecord) -> float:
        return self._ledger.arrival(r, rec)

    @property
    def aborted(self) -> bool:
        return self._ledger.aborted


def logged_ledger(ledger: RankLedger, logger: CallLogger | None) -> RankLedger:
    """The ledger a rank's transport is built with: ``ledger`` itself, or, when the rank
    keeps a call log, ``ledger`` telling the log what it learns. (Built in, not patched in
    afterwards: a wrapper swapped into a built transport is how a ``post`` that lost its
    return value went unnoticed.)"""
    return ledger if logger is None else LoggedLedger(ledger, logger)


class LoggedTransport:
    """A rank's transport whose calls go into its call log first (the Transport of
    ``comm.distributed``, written out; the attributes readers of a rank's transport ask for
    are the wrapped one's). It wraps the transport and changes nothing in it; the
    blocked/returned state comes from the ledger the transport was built with
    (``logged_ledger``)."""

    def __init__(self, transport: TorchTransport, logger: CallLogger):
        self._transport, self._logger = transport, logger

    def _through(self, method: Callable[..., Any], rec: CallRecord, *args: Any) -> Any:
        entry = self._logger.entered(rec)
        result = method(rec, *args)
        self._logger.returned(entry)
        return result

    def collective(self, rec: CallRecord, payload: Any, run: Any = None) -> Any:
        return self._through(self._transport.collective, rec, payload, run)

    def send(self, rec: CallRecord, payload: Any, blocking: bool, run: Any = None) -> Any:
        return self._through(self._transport.send, rec, payload, blocking, run)

    def recv(self, rec: CallRecord, buffer: Any, blocking: bool = True, run: Any = None) -> Any:
        return self._through(self._transport.recv, rec, buffer, blocking, run)

    def set_iteration(self, iteration: int) -> None:
        self._transport.set_iteration(iteration)

    def delay(self, seconds: float) -> None:
        self._transport.delay(seconds)

    @property
    def clock(self) -> RankClock:
        return self._transport.clock

    @clock.setter
    def clock(self, value: RankClock) -> None:
        self._transport.clock = value

    @property
    def runs_real_calls(self) -> bool:
        return self._transport.runs_real_calls

    @property
    def device(self) -> torch.device:
        return self._transport.device

    @property
    def rank(self) -> int:
        return self._transport.rank

    @property
    def ledger(self) -> RankLedger:
        return self._transport.ledger
