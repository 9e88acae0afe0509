"""One rank's history as a post-mortem reads it, whatever file it came from."""

from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass, field

from ..checks import MAX_ERROR_LINE, MAX_EXCERPT
from ..guard.waitfor import BLOCKED, DONE, FAILED, RUNNING, RankStatus
from ..calls.records import CallRecord

STATUSES = (RUNNING, BLOCKED, DONE, FAILED)
FR_PICKLE, FR_JSON, CALL_LOG = "flight recorder pickle", "flight recorder json", "trtsim call log"


@contextlib.contextmanager
def gc_paused():
    """No cyclic garbage collection while a job's million small objects are made: they are
    all kept, and a collection walks every one of them (it made reading 64 dumps 4x slower).
    Reentrant; collection resumes as it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class BadDump(ValueError):
    """Input a post-mortem cannot use; the message is one line naming the file and why."""

    def __init__(self, path: str, why: str):
        # the message is bounded whatever made it (a path, a list of ranks)
        path = path if len(path) <= MAX_EXCERPT * 2 else path[:MAX_EXCERPT * 2 - 3] + "..."
        why = why if len(why) <= MAX_ERROR_LINE else why[:MAX_ERROR_LINE - 3] + "..."
        self.path, self.why = path, why
        super().__init__(f"{path}: {why}")


@dataclass(frozen=True)
class Call:
    """One call a rank entered: its record, whether it returned, when it was entered (wall
    clock, ns; 0 when unknown). ``claims_root``: for a Flight Recorder gather or scatter, whether
    this rank's buffer shapes say it is the root (None where the dump says nothing)."""

    record: CallRecord
    done: bool
    t_ns: int = 0
    claims_root: bool | None = None


@dataclass(frozen=True)
class RankHistory:
    """What one rank's file says.

    ``calls`` oldest first; ``dropped``: calls the ring buffer no longer holds (0 when the
    history is complete from the start). ``status`` uses the wait-for analysis's names: a
    Flight Recorder rank with a call in flight is ``blocked`` in it, one without is taken as
    ``done`` (it returned, or waits in something the dump does not record). ``blocked`` is
    the call the rank is blocked in, if any.
    """

    rank: int
    source: str
    form: str
    version: str
    calls: tuple[Call, ...]
    status: RankStatus
    blocked: Call | None = None
    dropped: int = 0
    name: str = ""
    iteration: int = 0
    pending_sends: tuple[tuple[int, int], ...] = ()
    failure: str = ""
    traceback: str = ""
    written_on: str = ""
    world_size: int | None = None
    layout: tuple[tuple, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def label(self) -> str:
        """How reports name the rank."""
        return self.name or f"rank {self.rank}"
