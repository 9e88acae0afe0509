"""A deadline for code that runs in this thread and may never yield (a rank in a busy loop).

The inproc hub checks the clock at every switch, but a rank that loops without calling the
communicator never switches. The watchdog raises ``DeadlineExpired`` asynchronously in the
launching thread when the deadline passes, wherever that thread is (hub or rank greenlet).
"""

from __future__ import annotations

import ctypes
import threading


class DeadlineExpired(BaseException):
    """Raised in the watched thread when its deadline passes (BaseException: rank code that
    catches Exception must not swallow it)."""


class Watchdog:
    """``with Watchdog(seconds):`` raises DeadlineExpired in this thread after ``seconds``."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._lock = threading.Lock()
        self._armed = False
        self._fired = False
        self._thread_id = threading.get_ident()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> "Watchdog":
        self._armed = True
        self._timer.start()
        return self

    def _fire(self) -> None:
        with self._lock:
            if not self._armed:
                return
            self._fired = True
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread_id),
                                                       ctypes.py_object(DeadlineExpired))

    @property
    def fired(self) -> bool:
        return self._fired

    def __exit__(self, *exc) -> bool:
        self._timer.cancel()
        with self._lock:
            self._armed = False
            fired = self._fired
        if fired:
            # The asynchronous exception may still be pending; let it land here, not later
            # in unrelated code.
            try:
                for _ in range(10000):
                    pass
            except DeadlineExpired:
                pass
        return False
