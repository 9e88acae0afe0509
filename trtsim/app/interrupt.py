"""Ctrl-C that cannot be lost.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives -- also inside
a garbage-collection callback (a WeakSet's ``_remove``, say), where the exception is printed as
"Exception ignored in ..." and dropped, and the command runs on. So while a long command runs,
the handler also latches the interrupt, ``check`` (called from the command's progress
callbacks, in plain code between steps) raises it again, and the dropped one is not printed
(``sys.unraisablehook``): the command still ends with its one line.
"""

from __future__ import annotations

import signal
import sys


class InterruptLatch:
    """Latch SIGINT while the block runs, if SIGINT raises KeyboardInterrupt (Python's own
    handler); a handler someone else installed, or SIG_IGN, is left as it is."""

    def __init__(self) -> None:
        self.seen = False
        self._previous = None
        self._hook = None

    def _on_sigint(self, signum, frame) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def _unraisable(self, info) -> None:
        if info.exc_type is KeyboardInterrupt and self.seen:
            return                  # the latched interrupt: raised again at the next check
        self._hook(info)

    def check(self) -> None:
        """Raise the interrupt again if one arrived (it may have been dropped where it landed)."""
        if self.seen:
            raise KeyboardInterrupt

    def __enter__(self) -> "InterruptLatch":
        try:
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                self._previous = signal.signal(signal.SIGINT, self._on_sigint)
                self._hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        except ValueError:          # not the main thread: signals are not ours to handle
            pass
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            sys.unraisablehook = self._hook
