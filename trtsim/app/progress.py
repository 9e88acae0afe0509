"""Progress of long commands on stderr: a bar with its total on a terminal, plain lines in logs.

A run reports ``update(done, note)`` against a known total (explore's variants, compare's two
runs) or free ``note`` lines (the process launcher's "iteration 40, 3/8 ranks done"). On a
terminal that is a tqdm bar; elsewhere (CI logs, pipes) one plain line about once a second,
each with its count and total, so a log says how far a run got.
"""

from __future__ import annotations

import sys
import time


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:          # an environment installed before tqdm was a dependency
        return None
    return tqdm


class Progress:
    """One command's progress. ``total`` None: a count without an end (notes only)."""

    def __init__(self, what: str, total: int | None = None, stream=None,
                 tty: bool | None = None, every_s: float = 1.0, check=None):
        # check: called at every update, between steps (``InterruptLatch.check``)
        self.what, self.total, self.every_s, self.check = what, total, every_s, check
        self.stream = stream if stream is not None else sys.stderr
        is_tty = self.stream.isatty() if tty is None else tty
        bar = _tqdm() if is_tty else None
        self._bar = bar(total=total, desc=what, file=self.stream, leave=False,
                        dynamic_ncols=True) if bar else None
        self._done, self._last = 0, float("-inf")

    def __call__(self, note: str) -> None:
        """A free note (the callback form the launchers and jobs take)."""
        self.update(self._done, note)

    def update(self, done: int, note: str = "") -> None:
        """``done`` of ``total`` finished; ``note`` says what is happening now."""
        if self.check is not None:
            self.check()
        if self._bar is not None:
            self._bar.update(done - self._done)
            if note:
                self._bar.set_postfix_str(note, refresh=True)
            self._done = done
            return
        self._done = done
        now = time.monotonic()
        if now - self._last < self.every_s:
            return
        self._last = now
        count = f"{done}/{self.total}" if self.total is not None else ""
        text = " ".join(p for p in (self.what, count, note and f"({note})" if count else note) if p)
        print(f"  ... {text}", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
