"""Writing one rank's call log (``launch(..., log_dir=DIR)``; format: ``comm.calllog``).

The log must outlive a hang, so it is written when the rank leaves (``close``), when the
launch's timeout passes while the rank still runs, and when the rank is ended by SIGTERM
(what the launcher's teardown, torchrun and cluster schedulers send) -- also while the rank
is blocked inside a real collective, where a Python signal handler would never run. For that
SIGTERM is blocked in the rank's main thread before any other thread starts (every later
thread inherits the mask) and a watcher thread takes it with ``sigtimedwait``: it writes the
log, then lets SIGTERM end the process as it would have.

What the log says comes from two places: the transport (every call the rank entered, in
order, non-blocking ones included) and the ledger (whether the rank is blocked in a call,
which calls returned, its pending sends and iteration: what the deadlock monitor reads).
"""

from __future__ import annotations

import collections
import json
import os
import signal
import threading
import time
from typing import Any

from ..calllog import CALL_LOG_FORMAT, CALL_LOG_SIZE, CALL_LOG_VERSION, FIELDS, encode_call, \
    log_name
from ..guard.waitfor import BLOCKED, FAILED, RUNNING
from ..records import CallRecord

_TERM = {signal.SIGTERM}


class CallLogger:
    """One rank's call log: what it entered, what returned, where it is now."""

    def __init__(self, path: str, header: dict, timeout: float):
        self.path, self.header, self.timeout = path, header, timeout
        self._calls: collections.deque = collections.deque(maxlen=CALL_LOG_SIZE)
        self._entered = 0
        self._current: list | None = None        # the entry of the call the rank is in
        self.status, self.iteration, self.pending = RUNNING, 0, ()
        self.failure, self.traceback = "", ""
        self._lock = threading.Lock()
        self._closed = False
        self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, _TERM)
        self._watcher = threading.Thread(target=self._watch, name="trtsim-calllog", daemon=True)
        self._watcher.start()

    # -- what the transport and the ledger report ----------------------------------------
    def entered(self, rec: CallRecord) -> list:
        entry = [rec, False, time.time_ns()]
        with self._lock:
            self._calls.append(entry)
            self._entered += 1
        return entry

    def returned(self, entry: list) -> None:
        if self._current is not entry:          # a non-blocking call: it returned at once
            entry[1] = True

    def posted(self, rec: CallRecord) -> None:
        with self._lock:
            entry = next((e for e in reversed(self._calls) if e[0] is rec), None)
            if entry is None:
                entry = [rec, False, time.time_ns()]
                self._calls.append(entry)
                self._entered += 1
            entry[1] = False
            self._current, self.status = entry, BLOCKED

    def set_status(self, status: str) -> None:
        with self._lock:
            if self._current is not None and status == RUNNING:
                self._current[1] = True          # the call it was in returned
            self._current = None
            self.status = status

    # -- writing -------------------------------------------------------------------------
    def document(self, written_on: str) -> dict:
        with self._lock:
            rows = [encode_call(rec, done, t) for rec, done, t in self._calls]
            dropped = self._entered - len(rows)
        return dict(self.header, written_on=written_on, status=self.status,
                    iteration=self.iteration, pending_sends=[list(p) for p in self.pending],
                    failure=self.failure, traceback=self.traceback, dropped=dropped,
                    fields=list(FIELDS), calls=rows)

    def write(self, written_on: str) -> None:
        """Write the log atomically (a reader never sees half a file)."""
        tmp = f"{self.path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(self.document(written_on), f, separators=(",", ":"), default=str)
        os.replace(tmp, self.path)

    def close(self, status: str, failure: str = "", traceback: str = "") -> None:
        """The rank leaves: write the log and stop watching (SIGTERM is ours again). A rank
        stopped by the launch (``failed`` with no failure of its own) keeps the state it
        was stopped in: blocked in its call, or running."""
        if status != FAILED or failure:
            self.set_status(status)
        self.failure, self.traceback = failure, traceback
        self.write("exit")
        self._closed = True
        signal.pthread_kill(self._watcher.ident, signal.SIGTERM)   # wakes the watcher
        self._watcher.join(2.0)
        signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)

    def _watch(self) -> None:
        got = signal.sigtimedwait(_TERM, self.timeout)
        if got is None and not self._closed:
            self.write("timeout")
            signal.sigwait(_TERM)
        if self._closed:
            return
        self.write("signal")
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _TERM)
        os.kill(os.getpid(), signal.SIGTERM)      # end as SIGTERM would have


class _Ledger:
    """The rank's ledger, telling the logger what the monitor learns."""

    def __init__(self, ledger, logger: CallLogger):
        self._ledger, self._logger = ledger, logger

    def post(self, r: int, rec: CallRecord) -> None:
        self._logger.posted(rec)
        self._ledger.post(r, rec)

    def set_status(self, r: int, status: str) -> None:
        self._logger.set_status(status)
        self._ledger.set_status(r, status)

    def set_iteration(self, r: int, iteration: int) -> None:
        self._logger.iteration = iteration
        self._ledger.set_iteration(r, iteration)

    def set_pending_sends(self, r: int, sends) -> None:
        self._logger.pending = tuple(tuple(s) for s in sends)
        self._ledger.set_pending_sends(r, sends)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ledger, name)


class LoggedTransport:
    """A rank's transport whose calls go into its call log first."""

    def __init__(self, transport, logger: CallLogger):
        transport.ledger = _Ledger(transport.ledger, logger)
        self._transport, self._logger = transport, logger

    def _through(self, method, rec: CallRecord, *args):
        entry = self._logger.entered(rec)
        result = method(rec, *args)
        self._logger.returned(entry)
        return result

    def collective(self, rec, payload, run=None):
        return self._through(self._transport.collective, rec, payload, run)

    def send(self, rec, payload, blocking, run=None):
        return self._through(self._transport.send, rec, payload, blocking, run)

    def recv(self, rec, buffer, blocking=True, run=None):
        return self._through(self._transport.recv, rec, buffer, blocking, run)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def start(config, rank: int, places) -> CallLogger | None:
    """The rank's call logger when the launch has a ``log_dir`` (else None). Call it in the
    rank's main thread before any other thread starts, so SIGTERM reaches the watcher."""
    if not getattr(config, "log_dir", None):
        return None
    os.makedirs(config.log_dir, exist_ok=True)
    layout, seen = [], set()
    for p in places:
        if p.instance not in seen:
            seen.add(p.instance)
            m = p.mapping
            layout.append([p.instance, p.role, m.tp_size, m.pp_size, m.cp_size,
                           bool(m.enable_attention_dp)])
    header = {"format": CALL_LOG_FORMAT, "version": CALL_LOG_VERSION, "rank": rank,
              "name": places[rank].name, "world_size": len(places), "layout": layout}
    return CallLogger(os.path.join(config.log_dir, log_name(rank)), header, config.timeout)
