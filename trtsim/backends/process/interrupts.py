"""Ctrl-C in the launcher lands where the launch can still end cleanly.

Python raises KeyboardInterrupt at whatever bytecode the main thread is at. Inside
``Process.start`` that leaves a rank the fork server already forked but the launcher never
heard of: it is not ended, and it dies unpickling semaphores the teardown already unlinked
(``FileNotFoundError`` in ``SemLock._rebuild``, printed to the terminal). Inside the teardown
it leaves ranks and shared memory behind. So the set-up, the start of the ranks and the
teardown run with interrupts *deferred*: SIGINT is noted, and raised again, by the handler
it would have met, when the block ends (the start loop also stops at once when it sees one).
The launcher's waiting loop is where an interrupt lands.

Helper processes are started with SIGINT held (the fork server here, the resource tracker by
CPython): a terminal's Ctrl-C reaches its whole foreground group, and the fork server spends
seconds importing torch before it ignores SIGINT itself, so without this it printed a
KeyboardInterrupt traceback of its own; ranks forked from it inherit the mask, so no SIGINT
reaches them from their first instruction (one did before ``rank_main``, which left the
unpickling open).
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
def interrupts_held():
    """Processes started inside the block inherit SIGINT blocked (a signal mask survives fork
    and exec): a terminal's Ctrl-C waits in them until they ignore SIGINT themselves (the fork
    server does once started, which discards it; ranks forked from it inherit the mask, and
    ignore SIGINT from ``rank_main`` on). Here it
    waits too, and reaches the launch's handler when the block ends: none is lost. (Only this
    thread blocks it: the kernel may hand a Ctrl-C to another thread of the launcher, and
    Python then runs the handler at once -- the launcher's ``DeferredInterrupts`` notes it.) (The block
    once set SIG_IGN instead, and a Ctrl-C while the fork server started -- milliseconds, or
    seconds on a loaded machine -- was dropped: the launch ran on.) Start the resource tracker
    before: CPython's start of it unblocks SIGINT when done."""
    if not _in_main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
