"""Process-wide patches that several launches may hold at once: installed by the first,
removed by the last.

Interception replaces names of shared modules (torch.distributed's functions, c10d's world,
mpi4py in ``sys.modules``). Two launches in two threads, or a launch inside another, must
not restore each other's saved originals out of order, so every such patch goes through
``scoped``: under one lock, a depth count per patch key; the first holder installs, the last
one restores. Between the two the patch serves every launch, so what it installs must tell
the launches apart by itself (the stand-ins look up the current rank, and outside any rank
they call the real functions).

This is the one place that holds process-wide state (the counts): patches of shared modules
are process-wide by nature.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

_LOCK = threading.RLock()
_HELD: dict[str, list] = {}       # key -> [depth, what install returned]


@contextlib.contextmanager
def scoped(key: str, install: Callable[[], Any], uninstall: Callable[[Any], None]) -> Iterator[Any]:
    """Hold the patch ``key`` for the block; yields what ``install`` returned (the first
    holder's call of it). ``uninstall`` gets that value when the last holder leaves."""
    with _LOCK:
        held = _HELD.get(key)
        if held is None:
            held = _HELD[key] = [0, install()]
        held[0] += 1
    try:
        yield held[1]
    finally:
        with _LOCK:
            held[0] -= 1
            if held[0] == 0:
                del _HELD[key]
                uninstall(held[1])


def current(key: str):
    """What the patch ``key``'s install returned, while it is held (else None)."""
    with _LOCK:
        held = _HELD.get(key)
        return held[1] if held else None


def depth(key: str) -> int:
    """How many holders the patch ``key`` has now (0: not installed)."""
    with _LOCK:
        held = _HELD.get(key)
        return held[0] if held else 0


__all__ = ["scoped", "current", "depth"]
