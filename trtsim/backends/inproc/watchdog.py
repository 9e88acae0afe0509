"""A deadline for code that runs in this thread and may never yield (a rank in a busy loop,
or blocked in C: ``time.sleep``, a lock, ``threading.Event().wait()``, a socket).

The inproc hub checks the clock at every switch, but a rank that never calls the
communicator never switches. When the deadline passes, a timer thread interrupts the
launching thread:

- on the main thread, with a signal of its own (``SIGNAL``, a real-time signal nothing else
  here uses): a signal ends a blocking system call (EINTR), and Python runs the handler,
  which raises ``DeadlineExpired``, before it retries the call -- so a rank blocked in C
  stops on time too;
- on any other thread (signals only reach Python handlers on the main thread), with an
  asynchronous exception, which lands at the next Python bytecode: in time for a busy loop,
  not for a call blocked in C.
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time
from typing import Any

SIGNAL: int | None = signal.SIGRTMIN + 5 if hasattr(signal, "SIGRTMIN") else None


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
        self._landed = False
        self._thread_id = threading.get_ident()
        self._by_signal = SIGNAL is not None and threading.current_thread() is threading.main_thread()
        self._previous: Any = None           # the handler to put back
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> "Watchdog":
        if self._by_signal and SIGNAL is not None:
            self._previous = signal.signal(SIGNAL, self._on_signal)
        self._armed = True
        self._timer.start()
        return self

    def _fire(self) -> None:
        with self._lock:
            if not self._armed:
                return
            self._fired = True
            if self._by_signal and SIGNAL is not None:
                signal.pthread_kill(self._thread_id, SIGNAL)
            else:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread_id),
                                                           ctypes.py_object(DeadlineExpired))

    def _on_signal(self, signum, frame) -> None:
        # Runs in the watched thread; no lock here (that thread may hold it in __exit__).
        self._landed = True
        if self._armed:
            raise DeadlineExpired()

    @property
    def fired(self) -> bool:
        return self._fired

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        with self._lock:
            self._armed = False
            fired = self._fired
        if fired:
            self._drain()
        if self._by_signal and SIGNAL is not None:
            signal.signal(SIGNAL, self._previous)

    def _drain(self) -> None:
        """Let a pending interruption land here, disarmed, rather than later in unrelated
        code (or, for a signal, under the previous handler)."""
        if self._by_signal:
            stop = time.monotonic() + 1.0
            while not self._landed and time.monotonic() < stop:
                time.sleep(0.001)            # a system call: the pending signal is taken now
            return
        try:
            for _ in range(10000):
                pass
        except DeadlineExpired:
            pass
