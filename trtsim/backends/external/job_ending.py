"""How the ranks of a torchrun or mpirun job leave once a report ends it: one report, one
failed rank, no connection torn under a live client.

Rank 0 prints the report and leaves last, with status 1; every other rank prints nothing,
says in the store that it is leaving, and from then on makes no store call: under torchrun
it ends with status 0 (torchrun's summary then names one failed rank, none ended by a
signal), under mpirun it waits for mpirun to end it once rank 0 has left (a rank may not
leave an MPI job on its own without finalising MPI, which needs every rank). Rank 0 leaves
once every other rank has said so (and, on its host, its process is gone), or after
``LEAVE_WAIT_S``: a rank stuck where no report reaches it says so only when its watch
ends it. Rank 0 is the one that holds the report in every case -- it serves the mpirun
job's store and watches every rank -- and the store, whoever serves it, outlives every
client that still uses it: under mpirun it is rank 0's, under torchrun the agent's (or
rank 0's, without the agent's store).

A job that judges its own outcome (``trtsim run``: a scenario may expect its report) leaves
the same way once the outcome is back on rank 0 (``settle``): the other ranks leave first,
with status 0, and rank 0 returns it to its caller, which prints the report with its verdict
and ends with the verdict's status; only where rank 0 cannot return does ``finish`` print
that verdict (``JobVerdict``) instead of the report.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from ..process import call_log_writer

LEAVE_WAIT_S = 30.0      # a stuck rank's watch ends it after its grace (10 s) and says so
GONE_WAIT_S = 5.0        # a rank that said it leaves is a process that ends at once


@dataclass(frozen=True)
class JobVerdict:
    """What rank 0 prints as it ends a job, and the job's exit status."""

    text: str
    status: int

    def __post_init__(self):
        if self.status not in (0, 1):
            raise ValueError(f"JobVerdict.status={self.status!r}: 0 (as expected) or 1")


class JobEnding:
    """One rank's way out of a job a report ended (``finish``), or whose outcome is back
    (``settle``). ``stays``: the rank waits to be ended by the launcher (mpirun) instead of
    ending with status 0 (torchrun). ``verdict``: the job judges a report itself (``trtsim
    run``): rank 0 ends with what it makes of the report, instead of the report and status 1,
    and prints nothing as soon as the report is found (its caller prints it, with the
    verdict). Under ``trtsim.launch`` the rank raises the report to its caller first, and
    leaves only where nobody catches it (``finish_if_uncaught``)."""

    def __init__(self, ledger, rank: int, size: int, logger=None, *, stays: bool,
                 stay_s: float = 330.0, verdict: Callable[[Any], JobVerdict] | None = None):
        self.ledger, self.rank, self.size, self.logger = ledger, rank, size, logger
        self.stays, self.stay_s, self.verdict = stays, stay_s, verdict
        self._printed = threading.Lock()         # this process prints the report once
        self._finishing = threading.Lock()       # one thread of the process leaves
        self._store = threading.Lock()           # held for good once this rank said it leaves

    def finish(self, report: object, written_on: str = "exit") -> None:
        """Leave the job: rank 0 prints ``report`` (once) and leaves last, status 1; another
        rank says it leaves and ends (torchrun) or waits to be ended (mpirun). Never
        returns (a second thread that calls it waits for the first to end the process)."""
        self._finishing.acquire()                # never released: the process ends
        if self.rank == 0:
            verdict = JobVerdict(str(report), 1) if self.verdict is None else self.verdict(report)
            self._print_once(verdict.text)
            self._wait_for_the_others()
            call_log_writer.end_process(self.logger, verdict.status, written_on)
        self._leave()

    def settle(self) -> None:
        """The job's outcome (its report, or every rank's result) is back on this rank's
        main thread, its watch stopped and its call log closed: every rank but 0 leaves as
        ``finish`` has it, printing nothing, and does not return; rank 0 returns once they
        have left (or ``LEAVE_WAIT_S`` passed), to print and end as its caller judges."""
        self.logger = None                       # the main thread closed the call log
        if self.rank == 0:
            self._wait_for_the_others()
            return
        self._finishing.acquire()                # never released: the process ends
        self._leave()

    def finish_if_uncaught(self, report: BaseException) -> None:
        """``report`` is about to be raised to the program's caller: should it reach the top
        of the main thread uncaught, the process leaves the job as ``finish`` says, instead
        of printing its traceback on every rank (torchrun would then name every rank failed,
        most by its SIGTERM). Python's hook for an uncaught exception is the one place that
        knows it was not caught; any other exception goes to the hook found here (c10d's
        ``[rankN]:`` one, where the program made a default group)."""
        previous = sys.excepthook

        def hook(kind, value, tb):
            if value is report:
                self.logger = None               # the main thread closed the call log
                self.finish(report)
            previous(kind, value, tb)

        sys.excepthook = hook

    def print_report(self, report: object) -> None:
        """Print the report as it is found (rank 0's monitor), if this process has not yet;
        a job with a ``verdict`` prints it later, with the verdict."""
        if self.verdict is None:
            self._print_once(str(report))

    def _print_once(self, text: str) -> None:
        if self._printed.acquire(blocking=False):
            print(text, file=sys.stderr, flush=True)

    def _leave(self) -> None:
        """Not rank 0: say so in the store, then end (status 0) or wait to be ended."""
        self._say_leaving()
        if self.logger is not None:
            self.logger.seal("exit")         # (close() is the main thread's: this may be another)
        if not self.stays:
            call_log_writer.end_process(self.logger, 0)
        time.sleep(self.stay_s)                  # mpirun ends this process once rank 0 left
        call_log_writer.end_process(self.logger, 1)

    @contextlib.contextmanager
    def store_in_use(self) -> Iterator[None]:
        """Around another thread's store call (the rank's watch): once this rank has said it
        leaves, the call waits for good, so it never runs after rank 0 may have left."""
        with self._store:
            yield

    def _key(self, r: int) -> str:
        return f"{self.ledger.prefix}/leaving/{r}"

    def _say_leaving(self) -> None:
        self._store.acquire()                    # never released: no store call after this
        try:
            self.ledger.store.set(self._key(self.rank), f"{socket.gethostname()} {os.getpid()}")
        except torch.distributed.DistError:
            pass                                 # the store is gone: nobody waits for this

    def _wait_for_the_others(self) -> None:
        deadline = time.monotonic() + LEAVE_WAIT_S
        keys = [self._key(r) for r in range(1, self.size)]
        try:
            while not self.ledger.store.check(keys):
                if time.monotonic() > deadline:
                    return
                time.sleep(0.02)
            host = socket.gethostname()
            pids = [int(w[1]) for w in (self.ledger.store.get(k).decode().split() for k in keys)
                    if w[0] == host] if not self.stays else []
        except torch.distributed.DistError:
            return
        gone_by = time.monotonic() + GONE_WAIT_S
        while any(not process_gone(pid) for pid in pids) and time.monotonic() < gone_by:
            time.sleep(0.02)


def process_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie waiting for its parent has)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True
