"""Under mpirun: the stand-in's calls run as the real mpi4py calls, after the guard.

The program's arguments go to the real method as they came, with the stand-in's own objects
swapped for the real library's: datatypes and ops by name, ``IN_PLACE``/``BOTTOM``, statuses
(a real status is filled and copied back into the stand-in's after the call), communicators
and groups. Buffers, counts and Python objects pass untouched, so the real library parses the
buffer specs itself. A real request is seen by the guard's transport as a handle with
``is_completed()`` and ``wait()`` (``RealWork``).
"""

from __future__ import annotations

from typing import Any, Callable

from .datatypes import Datatype, Op, _Sentinel
from .requests import Status


class RealCall:
    """One real call: ``target.method(*args)`` with the arguments made real."""

    def __init__(self, real, target, method: str, args: tuple = ()):
        self.real, self.target, self.method = real, target, method
        self._statuses: list[tuple[Any, Any]] = []      # (stand-in status, real status)
        self.args = tuple(self._real(a) for a in args)

    def _real(self, x):
        if isinstance(x, (list, tuple)):
            return type(x)(self._real(v) for v in x)
        if isinstance(x, Datatype):
            return getattr(self.real, x.attr)
        if isinstance(x, Op):
            return getattr(self.real, x.name)
        if isinstance(x, _Sentinel):
            return getattr(self.real, x.name)
        if isinstance(x, Status):
            real_status = self.real.Status()
            self._statuses.append((x, real_status))
            return real_status
        return x

    def __call__(self) -> Any:
        value = getattr(self.target, self.method)(*self.args)
        for mine, real_status in self._statuses:
            copy_status(self.real, real_status, mine)
        return value


def envelope_of(real, real_status) -> tuple[int, int, int, int]:
    """A real status's (source, tag, bytes, error)."""
    return (real_status.Get_source(), real_status.Get_tag(), real_status.Get_count(real.BYTE),
            real_status.Get_error())


def copy_status(real, real_status, status) -> None:
    """The real status's envelope into the stand-in's."""
    status.fill(*envelope_of(real, real_status))


class RealWork:
    """A real mpi4py request as a transport handle; the status of its completion is kept."""

    def __init__(self, real, request):
        self.real, self.request = real, request
        self._done, self._value = False, None
        self.status = real.Status()

    def is_completed(self) -> bool:
        if not self._done:
            self._done, value = self.request.test(self.status)
            if self._done:
                self._value = value
        return self._done

    def wait(self) -> Any:
        if not self._done:
            self._value, self._done = self.request.wait(self.status), True
        return self._value


def real_runner(real, target, method: str, args: tuple,
                nonblocking: bool = False) -> Callable[[], Any]:
    """What the guard's transport runs: the real call (its request as a RealWork)."""
    call = RealCall(real, target, method, args)
    if not nonblocking:
        return call
    return lambda: RealWork(real, call())
