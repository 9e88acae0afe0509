"""How a rank of a guarded mpirun job ends. A report ends it as ``job_ending`` says: rank 0,
whose process serves the job's store, prints the report and leaves last with status 1,
without finalising MPI, once every other rank has said in the store that it leaves; those
wait for mpirun to end them (``stay``, leaving first could end the job before the report is
out, and finalising MPI needs every rank). A failing script prints its own traceback; rank
0's deadline reports a job that ran too long. Every way out writes the rank's call log
first, and ends the process through it (``call_log_writer.end_process``): a write in flight in
another thread -- the main thread's, while rank 0's monitor ends the rank -- finishes first.
``leave`` and ``first_to_print`` are the finder's way out where no ``JobEnding`` is given.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback

import torch

from ...guard.waitfor import FAILED, timeout_error
from ..process.call_log_writer import end_process
from .torchrun import StoreLedger

EXIT_REPORT = 1


class Deadline:
    """Rank 0's deadline: past ``seconds`` with a rank unfinished, the timeout report ends the
    job. ``stop()`` disarms it."""

    def __init__(self, seconds: float, ledger: StoreLedger, places, logger=None, ending=None):
        self._stop = threading.Event()
        self._args = seconds, ledger, places, logger
        self._ending = ending            # job_ending.JobEnding: rank 0 leaves last
        self._thread = threading.Thread(target=self._run, name="trtsim-deadline", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        seconds, ledger, places, logger = self._args
        if self._stop.wait(seconds):
            return
        err: object
        try:
            err = timeout_error(ledger.snapshot(places), seconds)
            ledger.abort(err)
        except Exception as exc:  # noqa: BLE001 - the store went away: the job is ending
            err = f"trtsim: the job timed out after {seconds:g} s ({exc})"
        if self._ending is not None:
            self._ending.finish(err, "timeout")
        leave(str(err), logger, "timeout")

    def stop(self) -> None:
        self._stop.set()


def leave(report: str, logger, written_on: str = "exit") -> None:
    """Print the report, write the call log, end this rank now: mpirun ends the others."""
    print(report, file=sys.stderr, flush=True)
    end_process(logger, EXIT_REPORT, written_on)


def stay(logger, seconds: float) -> None:
    """Another rank prints the report and ends the job: this one writes its log and waits
    for mpirun to end it (leaving first could end the job before the report is out)."""
    if logger is not None:
        logger.seal("exit")              # (close() is the main thread's: this may be another)
    time.sleep(seconds)
    end_process(logger, EXIT_REPORT)


def first_to_print(ledger: StoreLedger) -> bool:
    """Of the ranks that found one report, the first prints it."""
    try:
        return ledger.store.add(f"{ledger.prefix}/printed", 1) == 1
    except torch.distributed.DistError:
        return False                     # the store is gone: a report already ended the job


def job_ending(ledger: StoreLedger) -> bool:
    """Whether a report ends the job: it is posted, or rank 0's store is gone with it."""
    try:
        return ledger.aborted
    except torch.distributed.DistError:
        return True


def script_traceback(exc: BaseException, script: str) -> str:
    """The traceback from the script's own first frame (runpy's and trtsim's left out)."""
    tb = exc.__traceback__
    probe = tb
    while probe is not None and probe.tb_frame.f_code.co_filename != script:
        probe = probe.tb_next
    return "".join(traceback.format_exception(type(exc), exc, probe or tb))


def fail(ledger, rank: int, logger, failure: str, tb: str, code) -> None:
    """The script failed on this rank: its traceback, its log, then the end of the job."""
    try:
        ledger.set_status(rank, FAILED)
    except torch.distributed.DistError:
        pass                             # the store is gone: the job is ending anyway
    if tb:
        print(tb, file=sys.stderr, end="", flush=True)
    if logger is not None:
        logger.close(FAILED, failure, tb)
    end_process(logger, code if isinstance(code, int) else EXIT_REPORT)
