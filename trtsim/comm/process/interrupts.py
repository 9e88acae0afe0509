"""Ctrl-C in the launcher lands where the launch can still end cleanly.

Python raises KeyboardInterrupt at whatever bytecode the main thread is at. Inside
``Process.start`` that leaves a rank the fork server already forked but the launcher never
heard of: it is not ended, and it dies unpickling semaphores the teardown already unlinked
(``FileNotFoundError`` in ``SemLock._rebuild``, printed to the terminal). Inside the teardown
it leaves ranks and shared memory behind. So the set-up, the start of the ranks and the
teardown run with interrupts *deferred*: SIGINT is noted, and raised again, by the handler
it would have met, when the block ends (the start loop also stops at once when it sees one).
The launcher's waiting loop is where an interrupt lands.

Helper processes (the fork server, the resource tracker) are started with SIGINT ignored:
a terminal's Ctrl-C reaches its whole foreground group, and the fork server spends seconds
importing torch before it ignores SIGINT itself, so without this it printed a
KeyboardInterrupt traceback of its own; ranks forked from it inherit the disposition, so
they ignore SIGINT from their first instruction (they did from ``rank_main`` on, which
left the unpickling before it open).
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Any


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class DeferredInterrupts:
    """While the block runs, SIGINT is noted (``seen``) instead of raised; at its end the
    handler it would have met runs (Python's raises KeyboardInterrupt; trtsim's CLI latch
    also notes it). A disposition that is not a Python handler (SIG_IGN, SIG_DFL) and any
    thread but the main one are left as they are."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None            # the handler to put back

    def _note(self, signum, frame) -> None:
        self.seen = True

    def __enter__(self) -> "DeferredInterrupts":
        self.seen = False
        if _in_main_thread() and callable(signal.getsignal(signal.SIGINT)):
            self._previous = signal.signal(signal.SIGINT, self._note)
        return self

    def __exit__(self, *exc) -> None:
        previous, self._previous = self._previous, None
        if previous is None:
            return
        signal.signal(signal.SIGINT, previous)
        if self.seen:
            previous(signal.SIGINT, None)       # raises KeyboardInterrupt, as it would have


@contextmanager
def started_ignoring_interrupts():
    """Processes started inside the block inherit SIGINT ignored (a disposition of SIG_IGN
    survives exec). A Ctrl-C in the block (the few milliseconds of a fork and exec) is lost:
    the launch has not begun, and a second one is seen."""
    if not _in_main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
