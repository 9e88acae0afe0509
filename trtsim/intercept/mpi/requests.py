"""The stand-in's ``MPI.Status`` and ``MPI.Request``.

A Status holds a message's envelope: source, tag, and its size in bytes, which ``Get_count``
gives in elements of a type (``MPI.UNDEFINED`` when the size is no whole number of them), as
mpi4py does. A Request wraps the guard's handle of a non-blocking send or receive: waiting is
a guarded, visible block; testing never blocks, and an unfinished test gives the other ranks
a turn (on inproc no other rank could run while this one spins). As in mpi4py, a request is
spent once it completed: later waits and tests give ``None``.
"""

from __future__ import annotations

from typing import Any, Callable

from .datatypes import DATATYPES, Datatype
from .names import MPIObject

ANY_SOURCE, ANY_TAG, PROC_NULL, UNDEFINED = -1, -1, -2, -32766
BYTE = DATATYPES["BYTE"]


class Status(MPIObject):
    """Source, tag, error and size of a message (``MPI.Status()``; ``Status(other)`` copies)."""

    _mpi_names = "Status"

    def __init__(self, status: "Status | None" = None):
        self._source, self._tag, self._error = ANY_SOURCE, ANY_TAG, 0
        self.nbytes, self._cancelled = 0, False
        if status is not None:
            self.fill(status.source, status.tag, status.nbytes, status.error)

    def fill(self, source: int, tag: int, nbytes: int, error: int = 0) -> None:
        self._source, self._tag, self.nbytes, self._error = source, tag, nbytes, error

    def Get_source(self) -> int:
        return self._source

    def Set_source(self, source: int) -> None:
        self._source = source

    source = property(Get_source, Set_source)

    def Get_tag(self) -> int:
        return self._tag

    def Set_tag(self, tag: int) -> None:
        self._tag = tag

    tag = property(Get_tag, Set_tag)

    def Get_error(self) -> int:
        return self._error

    def Set_error(self, error: int) -> None:
        self._error = error

    error = property(Get_error, Set_error)

    def Get_count(self, datatype: Datatype = BYTE) -> int:
        size = datatype.Get_size()
        return self.nbytes // size if size and self.nbytes % size == 0 else UNDEFINED

    Get_elements = Get_count

    def Set_elements(self, datatype: Datatype, count: int) -> None:
        self.nbytes = count * datatype.Get_size()

    count = property(Get_count, lambda self, n: self.Set_elements(BYTE, n))

    def Is_cancelled(self) -> bool:
        return self._cancelled

    def Set_cancelled(self, flag: bool) -> None:
        self._cancelled = bool(flag)

    cancelled = property(Is_cancelled, Set_cancelled)

    def __repr__(self) -> str:
        return f"<MPI.Status source={self.source} tag={self.tag} count={self.nbytes}>"


class Request(MPIObject):
    """A non-blocking send or receive. ``envelope`` gives a completed receive's (source,
    tag, bytes) from its value; ``after`` turns the value into the call's (a buffer receive
    writes the buffer and gives None); ``yield_turn`` lets the other ranks run."""

    _mpi_names = "Request"

    def __init__(self, handle, envelope: Callable[[Any], tuple] | None = None,
                 after: Callable[[Any], Any] | None = None,
                 yield_turn: Callable[[], None] | None = None):
        self._handle, self._envelope, self._after = handle, envelope, after
        self._yield_turn = yield_turn
        self._spent = False

    def _finish(self, value, status: Status | None):
        self._spent = True
        if status is not None and self._envelope is not None:
            status.fill(*self._envelope(value))
        return self._after(value) if self._after is not None else value

    def wait(self, status: Status | None = None) -> Any:
        if self._spent:
            return None
        value = self._handle.wait() if self._handle is not None else None
        return self._finish(value, status)

    def Wait(self, status: Status | None = None) -> bool:
        self.wait(status)
        return True

    def test(self, status: Status | None = None) -> tuple[bool, Any]:
        if self._spent or self._handle is None or self._handle.is_completed():
            return True, self.wait(status)
        if self._yield_turn is not None:
            self._yield_turn()
        return False, None

    def Test(self, status: Status | None = None) -> bool:
        return self.test(status)[0]

    def Get_status(self, status: Status | None = None) -> bool:
        done = self._spent or self._handle is None or self._handle.is_completed()
        if not done and self._yield_turn is not None:
            self._yield_turn()
        return done

    get_status = Get_status

    @staticmethod
    def waitall(requests, statuses=None) -> list:
        """Waits on every request. A statuses list shorter than the requests is extended
        with new Statuses, as mpi4py does (a longer one keeps its extra entries)."""
        requests = list(requests)
        if statuses is None:
            return [r.wait() for r in requests]
        statuses.extend(Status() for _ in range(len(requests) - len(statuses)))
        return [r.wait(s) for r, s in zip(requests, statuses)]

    @staticmethod
    def Waitall(requests, statuses=None) -> bool:
        Request.waitall(requests, statuses)
        return True

    @staticmethod
    def testall(requests, statuses=None) -> tuple[bool, list | None]:
        if not all(Request.Get_status(r) for r in requests):
            return False, None
        return True, Request.waitall(requests, statuses)

    @staticmethod
    def Testall(requests, statuses=None) -> bool:
        return Request.testall(requests, statuses)[0]

    def Free(self) -> None:
        self._spent = True

    free = Free
