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
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time

import torch

from typing import Iterator

from ..process import call_log_writer

LEAVE_WAIT_S = 30.0      # a stuck rank's watch ends it after its grace (10 s) and says so
GONE_WAIT_S = 5.0        # a rank that said it leaves is a process that ends at once


class JobEnding:
    """One rank's way out of a job a report ended (``finish``). ``stays``: the rank waits to
    be ended by the launcher (mpirun) instead of ending with status 0 (torchrun).
    ``raises`` (``trtsim.launch`` under torchrun): the rank raises the report to its caller
    first, and leaves only where nobody catches it (``finish_if_uncaught``)."""

    def __init__(self, ledger, rank: int, size: int, logger=None, *, stays: bool,
                 stay_s: float = 330.0, raises: bool = False):
        self.ledger, self.rank, self.size, self.logger = ledger, rank, size, logger
        self.stays, self.stay_s, self.raises = stays, stay_s, raises
        self._printed = threading.Lock()         # this process prints the report once
        self._finishing = threading.Lock()       # one thread of the process leaves
        self._store = threading.Lock()           # held for good once this rank said it leaves

    def finish(self, report: object, written_on: str = "exit") -> None:
        """Leave the job: rank 0 prints ``report`` (once) and leaves last, status 1; another
        rank says it leaves and ends (torchrun) or waits to be ended (mpirun). Never
        returns (a second thread that calls it waits for the first to end the process)."""
        self._finishing.acquire()                # never released: the process ends
        if self.rank == 0:
            self.print_report(report)
            self._wait_for_the_others()
            call_log_writer.end_process(self.logger, 1, written_on)
        self._say_leaving()
        if self.logger is not None:
            self.logger.seal("exit")         # (close() is the main thread's: this may be another)
        if not self.stays:
            call_log_writer.end_process(self.logger, 0)
        time.sleep(self.stay_s)                  # mpirun ends this process once rank 0 left
        call_log_writer.end_process(self.logger, 1)

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
        """Print the report, if this process has not yet (rank 0's monitor may have)."""
        if self._printed.acquire(blocking=False):
            print(str(report), file=sys.stderr, flush=True)

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
