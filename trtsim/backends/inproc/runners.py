"""How the inproc kernel hands the one turn between ranks: greenlets, or threads with a baton.

Both runners give the same schedule: the hub (the launching thread) picks the next rank with
the kernel's seeded RNG, runs it until it gives its turn back, and only one rank ever runs.
They differ in what a rank's stack may hold while it waits:

- ``GreenletRunner``: every rank is a greenlet of the launching thread. A switch costs about
  a microsecond, but greenlets share the thread's native state. A rank that waits inside
  native code -- a torch custom op or a C++ ProcessGroup calling back into Python -- leaves
  pybind11's and the dispatcher's thread-local guards half-open, and the next rank to leave
  native code in another order aborts the process (``loader_life_support: internal error``).
  So greenlets serve programs whose communication is entered from Python only (trtsim's own
  Distributed, the MPI stand-in).
- ``ThreadRunner``: every rank is an OS thread holding the baton in turn, so native code may
  wait anywhere (torch.distributed's real c10d paths: custom ops, functional collectives,
  device meshes). A switch costs a thread hand-off (tens of microseconds).

A rank gives its turn back with ``suspend`` and gets it with ``resume`` (``resumers[r]``, the
same bound to one rank); the hub ends a launch
with ``unwind``, which throws ``Unwind`` into every rank still suspended so their ``finally``
blocks run.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import time
from typing import Any, Callable

import greenlet


class Unwind(BaseException):
    """Thrown into ranks that must stop because the launch is over."""


class ThreadStartFailed(RuntimeError):
    """A rank's thread could not be started (``ThreadRunner``): that rank's failure, raised in
    the hub as it would have got the turn."""


class GreenletRunner:
    """Ranks as greenlets of the launching thread."""

    def __init__(self, mains: list[Callable[[], None]]):
        self.hub = greenlet.getcurrent()
        self.glets = [greenlet.greenlet(lambda *_, f=f: f(), parent=self.hub) for f in mains]
        # Give the turn back to the hub (rank side); returns the value it resumes with. The
        # hub's own switch: the hot path, no Python frame in between.
        self.suspend: Callable[[], Any] = self.hub.switch
        # resumers[r](value) is resume(r, value): each greenlet's own switch, no frame of ours
        self.resumers: list[Callable[[Any], Any]] = [g.switch for g in self.glets]

    def resume(self, r: int, value: Any) -> None:
        """Run rank ``r`` (hub side) until it suspends or finishes."""
        self.glets[r].switch(value)

    def unwind(self, before: Callable[[int], None]) -> None:
        for r, g in enumerate(self.glets):
            if g and not g.dead:      # started and suspended: unwind its finally blocks
                before(r)
                try:
                    g.throw(Unwind)
                except Unwind:
                    pass


class _Baton:
    """One rank thread's side of the hand-off."""

    __slots__ = ("go", "value", "thread", "started", "done", "unwinding", "holding")

    def __init__(self):
        self.go = threading.Lock()
        self.go.acquire()
        self.value: Any = None
        self.thread: threading.Thread | None = None
        self.started = self.done = self.unwinding = False
        # The rank has the turn: set by the hub before it releases ``go``, cleared by the rank
        # before it releases ``back``. The hub reads it when interrupted, because the result
        # of its own ``back.acquire`` is lost when the interruption lands just after it.
        self.holding = False


class ThreadRunner:
    """Ranks as OS threads, exactly one of which runs at a time (the baton).

    Invariant: the hub waits on ``back`` while a rank runs, and a rank waits on its own ``go``
    while another runs or the hub decides; a lock released by one thread and acquired by the
    next is the hand-off (and the memory fence between them). A rank's failure stays its own:
    ``mains`` catch what the rank program raises; what escapes a main is re-raised in the hub
    (Ctrl-C, or a bug of trtsim's).

    The hub never waits past ``deadline`` (monotonic seconds), and what interrupts it while a
    rank runs -- Ctrl-C, the watchdog's deadline, or that timeout -- is raised in the running
    rank too, as the greenlet runner would see it there (``forward``). A rank that does not
    give the baton back within ``GRACE_S`` after that is blocked in native code: it is left
    to finish on its own (a daemon thread) and the hub goes on with the interruption. A rank
    that had already given the turn back is not interrupted: an asynchronous exception for a
    thread parked on its ``go`` would never land, and until a thread takes it CPython (3.11)
    keeps every thread's eval breaker set -- under a trace function, a busy loop for ever."""

    GRACE_S = 1.0

    def __init__(self, mains: list[Callable[[], None]], deadline: float,
                 on_timeout: type[BaseException]):
        self.mains = mains
        self.batons = [_Baton() for _ in mains]
        self.back = threading.Lock()
        self.back.acquire()
        self.local = threading.local()
        self.escaped: BaseException | None = None
        self.deadline, self.on_timeout = deadline, on_timeout
        self.abandoned: set[int] = set()
        self.resumers: list[Callable[[Any], Any]] = [functools.partial(self.resume, r)
                                                     for r in range(len(mains))]

    def _thread_main(self, r: int) -> None:
        baton = self.batons[r]
        try:                            # from the first line: whatever happens, back is given
            self.local.rank = r
            baton.go.acquire()
            if not baton.unwinding:
                self.mains[r]()
        except Unwind:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the hub, raised there
            self.escaped = exc
        finally:
            baton.done = True
            if baton.holding:           # not when an interruption landed in suspend after
                baton.holding = False   # the turn was given back: it is given once
                self.back.release()

    def resume(self, r: int, value: Any) -> None:
        baton = self.batons[r]
        baton.value = value
        if not baton.started:
            thread = threading.Thread(target=self._thread_main, args=(r,), daemon=True,
                                      name=f"trtsim-rank-{r}")
            try:
                thread.start()
            except RuntimeError as exc:     # "can't start new thread": the OS's limits
                raise ThreadStartFailed(
                    f"its thread could not start ({exc}): the process's limits on threads or "
                    "memory (ulimit -u, ulimit -v) were reached") from exc
            baton.thread, baton.started = thread, True
        baton.holding = True
        baton.go.release()
        try:
            if not self.back.acquire(timeout=max(0.0, self.deadline - time.monotonic())):
                self.interrupt(r, self.on_timeout, maybe_held=False)
        except BaseException as exc:      # Ctrl-C or the watchdog, in the hub: the rank
            self.interrupt(r, type(exc), maybe_held=True)   # stops where it is, then the
            raise                                           # hub goes on with it
        if self.escaped is not None:
            escaped, self.escaped = self.escaped, None
            raise escaped

    def interrupt(self, r: int, kind: type[BaseException], maybe_held: bool) -> None:
        """The hub, waiting for rank ``r``, was interrupted by ``kind``: stop the rank if it
        still has the turn (``forward``), else take ``back``, which the rank has released or
        is releasing. ``maybe_held``: an exception interrupted the wait, perhaps just after
        the acquire returned (its result lost), so the hub may hold ``back`` already and
        waits for it only ``GRACE_S``."""
        if self.batons[r].holding:
            self.forward(r, kind)
        elif maybe_held:
            self.back.acquire(timeout=self.GRACE_S)
        else:
            self.back.acquire()

    def forward(self, r: int, kind: type[BaseException]) -> None:
        """Raise ``kind`` in running rank ``r`` and wait for its baton; raise it in the hub
        when the rank cannot take it (blocked in native code)."""
        thread = self.batons[r].thread
        if thread is None or thread.ident is None:
            raise RuntimeError(f"rank {r} has no running thread to interrupt")
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                   ctypes.py_object(kind))
        if not self.back.acquire(timeout=self.GRACE_S):
            self.abandoned.add(r)
            _settle_eval_breaker()
            raise kind()

    def suspend(self) -> Any:
        baton = self.batons[self.local.rank]
        baton.holding = False
        self.back.release()
        baton.go.acquire()
        if baton.unwinding:
            raise Unwind()
        return baton.value

    def unwind(self, before: Callable[[int], None]) -> None:
        # Only a live thread can give the baton back (one that never started is not waited on)
        for r, baton in enumerate(self.batons):
            if baton.started and not baton.done and r not in self.abandoned \
                    and baton.thread is not None and baton.thread.is_alive():
                before(r)
                baton.unwinding = baton.holding = True
                baton.go.release()
                self.back.acquire()
        self.escaped = None


class _Settle(BaseException):
    """Sent to and taken by the hub's own thread (``_settle_eval_breaker``)."""


def _settle_eval_breaker() -> None:
    """Clear the interpreter-wide "asynchronous exception pending" flag that an exception sent
    to a rank blocked in native code leaves set until that rank runs Python again -- perhaps
    never. CPython 3.11 keeps every thread's eval breaker set meanwhile, and under a trace
    function (coverage, a debugger, hypothesis's explain phase) it re-checks it at a function's
    first instruction for ever. Taking an exception of its own clears the flag; the rank's
    exception stays pending for it."""
    try:                              # it may land as the call returns, or a few bytecodes on
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(threading.get_ident()),
                                                   ctypes.py_object(_Settle))
        for _ in range(10000):
            pass
    except _Settle:
        pass


__all__ = ["GreenletRunner", "ThreadRunner", "ThreadStartFailed", "Unwind"]
