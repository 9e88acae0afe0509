"""A rank's watch over a launch on the store (torchrun, mpirun): rank 0's deadlock monitor,
and the way out for a rank whose main thread no report can reach."""

from __future__ import annotations

import contextlib
import sys
import threading

from ...layout.places import RankPlace
from ..process import call_log_writer
from ..process.monitor import DeadlockMonitor
from .job_ending import JobEnding
from .store_ledger import StoreLedger


class StoreWatch:
    """A rank's watch over a launch on the store, in a thread; ``stop()`` ends the thread and
    waits for it.

    ``finds`` (rank 0): it runs the deadlock monitor over the store, and posts a deadlock it
    finds as the report that ends the launch, and prints it. With ``grace`` (torchrun) it
    also sees a report another rank posted; the rank's main thread raises the report where
    it waits (``Aborted``) and stops the watch, and only a main thread stuck inside a real
    call, which no report can reach, is still there ``grace`` seconds later: the watch then
    writes the call log and ends the process (status 1), and torchrun ends the job. Without
    ``grace`` the finder ends its process at once, and another rank's report is not its to
    act on. With ``ending`` (``job_ending``), ending the process is its ``finish``."""

    def __init__(self, ledger: StoreLedger, places: list[RankPlace],
                 logger: call_log_writer.CallLogger | None = None, *, finds: bool = True,
                 grace: float | None = None, ending: JobEnding | None = None):
        self._logger, self._ending = logger, ending  # the call log, written before the end
        self._stop = threading.Event()
        self._monitor = DeadlockMonitor(ledger, places, interval=0.2) if finds else None
        self._ledger, self._grace = ledger, grace
        self._thread = threading.Thread(target=self._run, name="trtsim-monitor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        quiet = self._ending.store_in_use if self._ending is not None else contextlib.nullcontext
        while not self._stop.wait(0.2):
            try:
                with quiet():
                    ended = self._launch_ended()
            except Exception:  # noqa: BLE001 - the store went away: the job is ending
                return
            if ended:
                break
        else:
            return
        if self._grace is not None and self._stop.wait(self._grace):
            return                           # the main thread raised the report
        if self._ending is not None:
            self._ending.finish(self._ledger.abort_error())
        # after a write of the main thread's in flight: os._exit would cut it short
        call_log_writer.end_process(self._logger, 1, "exit")

    def _launch_ended(self) -> bool:
        """Whether the launch ended: this watch found a deadlock (posted and printed now),
        or, with ``grace``, another rank posted a report."""
        if self._ending is not None and self._ledger.aborted:
            return True                      # a rank posted the report (or its failure)
        if self._monitor is not None:
            err = self._monitor.poll()
            if err is not None:
                self._ledger.abort(err)
                if self._ending is not None:
                    self._ending.print_report(err)
                else:
                    print(str(err), file=sys.stderr, flush=True)
                return True
        return self._grace is not None and self._ledger.aborted

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
