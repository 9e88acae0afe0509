"""Writing one rank's call log (``launch(..., log_dir=DIR)``; format: ``calls.call_log_format``).

The log must outlive a hang, so it is written when the rank leaves (``close``), when the
launch's timeout passes while the rank still runs, and when the rank is ended by SIGTERM
(what the launcher's teardown, torchrun and cluster schedulers send) -- also while the rank
is blocked inside a real collective, where the main thread never gets back to Python to run
a signal handler. So SIGTERM gets a Python handler only to make the interpreter's C-level
handler write the signal's number to a wakeup pipe (``signal.set_wakeup_fd``), from
whichever thread the kernel picked; a watcher thread reads the pipe, writes the log, puts
SIGTERM's default action back and lets it end the process as it would have. The same thread
writes the log when the timeout passes. ``close`` (in the main thread) restores the handler
and the wakeup descriptor it found. A launch from another thread than the main one gets no
SIGTERM write (Python allows signal handlers in the main thread only).

Every write holds one lock, and every way this process ends on its own -- ``end_process``
(``os._exit``) and the SIGTERM end -- takes it first and keeps it: a write in flight in another
thread (the main thread's last write while the deadlock monitor ends the rank) finishes before
the process ends, and none starts after. ``os._exit`` in the middle of a write would leave its
temporary file behind and the log as it was before.

What the log says comes from two places: the transport (every call the rank entered, in
order, non-blocking ones included) and the ledger (whether the rank is blocked in a call,
which calls returned, its pending sends and iteration: what the deadlock monitor reads);
``logged`` wraps both to tell the log.
"""

from __future__ import annotations

import collections
import ctypes
import json
import os
import select
import signal
import threading
import time
from typing import TYPE_CHECKING, NoReturn

from ...calls.call_log_format import CALL_LOG_FORMAT, CALL_LOG_SIZE, CALL_LOG_VERSION, FIELDS, encode_call, \
    log_name
from ...guard.waitfor import BLOCKED, FAILED, RUNNING, RankStatus
from ...comm.launch_stamp import LaunchStamp
from ...calls.records import CallRecord
from ...safe_write import atomic_writer

if TYPE_CHECKING:
    from ...layout.places import RankPlace
    from ...comm.launch_config import LaunchConfig

__all__ = ["CallLogger", "end_process", "start"]

_TERM = signal.SIGTERM


class CallLogger:
    """One rank's call log: what it entered, what returned, where it is now."""

    def __init__(self, path: str, header: dict, timeout: float | None):
        self.path, self.header, self.timeout = path, header, timeout
        self._calls: collections.deque = collections.deque(maxlen=CALL_LOG_SIZE)
        self._entered = 0
        self._current: list | None = None        # the entry of the call the rank is in
        self.status, self.iteration = RUNNING, 0
        self.pending: tuple[tuple, ...] = ()
        self.failure, self.traceback = "", ""
        self._lock = threading.Lock()
        self._ending = threading.Lock()          # one writer of the last log
        self._writing = threading.Lock()         # one write at a time; held by the end
        self._closed = False                     # close() ran: the watcher returns
        self._final = False                      # the last log is written (close, seal)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._restore = None
        try:
            old_fd = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
            self._restore = (old_fd, signal.signal(_TERM, self._on_term))
        except ValueError:                       # not the main thread: no SIGTERM write
            pass
        self._watcher = threading.Thread(target=self._watch, name="trtsim-calllog", daemon=True)
        self._watcher.start()

    # -- what the transport and the ledger report ----------------------------------------
    def entered(self, rec: CallRecord) -> list:
        """The rank enters ``rec`` (the transport, before the call); its log entry."""
        entry = [rec, False, time.time_ns()]
        with self._lock:
            self._calls.append(entry)
            self._entered += 1
        return entry

    def returned(self, entry: list) -> None:
        """The transport's call returned (a blocking one is marked by the ledger already)."""
        if self._current is not entry:          # a non-blocking call: it returned at once
            entry[1] = True

    def posted(self, rec: CallRecord) -> None:
        """The rank waits in ``rec`` (the ledger's post): blocked until its status moves."""
        with self._lock:
            entry = next((e for e in reversed(self._calls) if e[0] is rec), None)
            if entry is None:
                entry = [rec, False, time.time_ns()]
                self._calls.append(entry)
                self._entered += 1
            entry[1] = False
            self._current, self.status = entry, BLOCKED

    def set_status(self, status: RankStatus) -> None:
        """The rank's status as the ledger says it; ``running`` means its call returned."""
        with self._lock:
            if self._current is not None and status == RUNNING:
                self._current[1] = True          # the call it was in returned
            self._current = None
            self.status = status

    # -- writing -------------------------------------------------------------------------
    def document(self, written_on: str) -> dict:
        """The log as JSON-ready data (format: ``calls.call_log_format``)."""
        with self._lock:
            rows = [encode_call(rec, done, t) for rec, done, t in self._calls]
            dropped = self._entered - len(rows)
        return dict(self.header, written_on=written_on, status=self.status,
                    iteration=self.iteration, pending_sends=[list(p) for p in self.pending],
                    failure=self.failure, traceback=self.traceback, dropped=dropped,
                    fields=list(FIELDS), calls=rows)

    def write(self, written_on: str) -> None:
        """Write the log atomically (a reader never sees half a file; a planted link is
        never followed): through the one safe writer, from any thread, one at a time."""
        with self._writing:
            self._write(written_on)

    def seal(self, written_on: str) -> None:
        """Write the log for the last time: the rank now only waits to be ended
        (``mpirun_exits.stay``), so SIGTERM and the timeout end it without writing again. A
        second write would be the one mpirun's SIGKILL, a second after its SIGTERM, cuts in
        half on a loaded machine, leaving its temporary file behind."""
        with self._ending:
            self.write(written_on)
            self._final = True

    def _write(self, written_on: str) -> None:
        with atomic_writer(self.path) as f:
            json.dump(self.document(written_on), f, separators=(",", ":"), default=str)

    def end_process(self, code: int, written_on: str | None = None) -> NoReturn:
        """End the process now (``os._exit(code)``), once a write in flight in another thread
        is done; with ``written_on``, after writing the log. No write starts after."""
        self._writing.acquire()                  # never released: the process ends holding it
        try:
            if written_on is not None:
                self._write(written_on)
        except OSError:
            pass                                 # ending anyway; the last log stays
        finally:
            os._exit(code)

    def close(self, status: RankStatus, failure: str = "", traceback: str = "") -> None:
        """The rank leaves: write the log, stop watching, give SIGTERM back. A rank stopped
        by the launch (``failed`` with no failure of its own) keeps the state it was stopped
        in: blocked in its call, or running."""
        if status != FAILED or failure:
            self.set_status(status)
        self.failure, self.traceback = failure, traceback
        with self._ending:
            self.write("exit")
            self._closed = self._final = True
        os.write(self._wake_w, b"\0")              # wakes the watcher, which returns
        self._watcher.join(2.0)
        if self._restore is not None:
            old_fd, old_handler = self._restore
            signal.signal(_TERM, old_handler)
            signal.set_wakeup_fd(old_fd)
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _on_term(self, signum, frame) -> None:
        """SIGTERM seen by the main thread between two bytecodes (perhaps inside ``close``,
        holding the lock): the end runs in a thread of its own."""
        threading.Thread(target=self._end, daemon=True).start()

    def _end(self) -> None:
        """Write the log (unless ``close`` or ``seal`` wrote the last one), then end as SIGTERM
        would have -- holding the write lock, as ``end_process`` does."""
        with self._ending, self._writing:        # the process ends holding both
            if not self._final:
                try:
                    self._write("signal")
                except OSError:
                    pass
            libc = ctypes.CDLL(None, use_errno=True)
            libc.signal(_TERM, ctypes.c_void_p(0))       # SIG_DFL, from any thread
            os.kill(os.getpid(), _TERM)
            time.sleep(5)

    def _watch(self) -> None:
        timeout = self.timeout
        while True:
            ready, _, _ = select.select([self._wake_r], [], [], timeout)
            if not ready:
                timeout = None
                with self._ending:
                    if not self._final:
                        try:
                            self.write("timeout")
                        except OSError:
                            pass
                continue
            got = os.read(self._wake_r, 64)
            if _TERM in got:
                self._end()
            if self._closed:
                return


def start(config: LaunchConfig, rank: int, places: list[RankPlace]) -> CallLogger | None:
    """The rank's call logger when the launch has a ``log_dir`` (else None); made in the
    rank's main thread, it also writes the log when SIGTERM ends the rank."""
    log_dir = config.log_dir
    if not log_dir:
        return None
    os.makedirs(log_dir, exist_ok=True)
    layout, seen = [], set()
    for p in places:
        if p.instance not in seen:
            seen.add(p.instance)
            m = p.mapping
            layout.append([p.instance, p.role, m.tp_size, m.pp_size, m.cp_size,
                           bool(m.enable_attention_dp)])
    stamp = config.launch or LaunchStamp.of_job()     # torchrun, mpirun: the job's id
    header = {"format": CALL_LOG_FORMAT, "version": CALL_LOG_VERSION, "rank": rank,
              "name": places[rank].name, "world_size": len(places), "layout": layout,
              "launch": stamp.id, "started_ns": stamp.started_ns}
    return CallLogger(os.path.join(log_dir, log_name(rank, stamp.id)), header,
                      config.timeout)


def end_process(logger: CallLogger | None, code: int, written_on: str | None = None
                ) -> NoReturn:
    """End the process with status ``code``: through the rank's call log when it keeps one
    (``CallLogger.end_process``: a write in flight finishes first), else at once."""
    if logger is not None:
        logger.end_process(code, written_on)
    os._exit(code)
