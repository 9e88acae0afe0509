"""The key-value store of an inproc launch (``_get_default_store()`` inside its ranks).

One dict for all ranks. A ``get`` or ``wait`` of a key nobody has set yet gives the turn away
until it is set, and honours the store's timeout the way the kernel counts time: in turns.
Each turn a waiter gives away is one millisecond of its wait (as a slow rank's delay is,
``InprocTransport.delay``), so a wait ends at the same point of the schedule on every run of
a seed. When no rank can set a key any more -- every rank has finished, is blocked in a call,
or waits on the store itself -- nothing can happen until a wait times out, so time jumps to
the first expiry: that waiter raises ``DistStoreError`` (what torch's stores raise), the
others have waited as long. If none of the waits has a timeout (torch: a zero timeout waits
forever), the launch is deadlocked, and that is the report.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import torch.distributed as tdist

from ...comm.current import current
from ...calls.errors import CollectiveDeadlock
from ...guard.waitfor import BLOCKED
from .kernel import Kernel

DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)     # torch's HashStore default
TICK_S = 0.001                                        # one turn given away


@dataclass
class Waiting:
    """One rank's wait in the store: its keys and the turns it may still give away
    (``math.inf``: no timeout)."""

    keys: tuple[str, ...]
    timeout: datetime.timedelta
    turns_left: float


def turns(timeout: datetime.timedelta) -> float:
    """The turns a wait of ``timeout`` may give away (a zero timeout waits forever)."""
    seconds = timeout.total_seconds()
    return math.inf if seconds <= 0 else max(1, round(seconds / TICK_S))


def stuck(num_ranks: int, status: Sequence[str], finished: set[int],
          waiting: dict[int, Waiting], present: Callable[[tuple[str, ...]], bool]) -> bool:
    """No rank can set a key: each has finished, is blocked in a call, or waits on keys that
    are still missing."""
    return all(r in finished or status[r] == BLOCKED
               or (r in waiting and not present(waiting[r].keys)) for r in range(num_ranks))


def first_expiry(waiting: dict[int, Waiting]) -> int | None:
    """The waiter whose timeout comes first (the lowest rank among ties); None when no wait
    has a timeout."""
    finite = [(w.turns_left, r) for r, w in waiting.items() if w.turns_left != math.inf]
    return min(finite)[1] if finite else None


def timeout_message(wait: Waiting) -> str:
    ms = round(wait.timeout.total_seconds() * 1000)
    return f"wait timeout after {ms}ms, keys: {', '.join(wait.keys)}"


def deadlock(kernel: Kernel, waiting: dict[int, Waiting]) -> CollectiveDeadlock:
    """The report when every rank left waits forever on keys no rank can set any more."""
    blocked = {r: rec for r, rec in enumerate(kernel.blocked_call)
               if kernel.status[r] == BLOCKED and rec is not None}
    details = [f"rank {r} waits in store.wait for {', '.join(map(repr, w.keys))} (no timeout)"
               for r, w in sorted(waiting.items())]
    details += [f"rank {r} waits in {rec.short()} at {rec.callsite}"
                for r, rec in sorted(blocked.items())]
    if kernel.finished:
        details.append("finished: " + ", ".join(f"rank {r}" for r in sorted(kernel.finished)))
    first = min(waiting)
    return CollectiveDeadlock(
        f"{len(waiting) + len(blocked)} ranks blocked with no way to proceed (first: rank "
        f"{first} waits in store.wait for {', '.join(map(repr, waiting[first].keys))})",
        ranks=tuple(sorted(set(waiting) | set(blocked))), calls=blocked,
        details=tuple(details),
        explanation="no rank that can still run will set the keys these store waits need")


class InprocStore(tdist.Store):
    """The launch's store, shared by its ranks. ``wait_turn()`` gives the running rank's turn
    away; ``kernel`` is the launch's (who can still run, and where a deadlock is reported)."""

    def __init__(self, wait_turn: Callable[[], None], kernel: Kernel):
        super().__init__()
        self._data: dict[str, bytes] = {}
        self._wait_turn = wait_turn
        self._kernel = kernel
        self._timeout = DEFAULT_TIMEOUT
        self._waiting: dict[int, Waiting] = {}

    @staticmethod
    def _bytes(value) -> bytes:
        if isinstance(value, str):
            return value.encode()
        return bytes(value)

    def set(self, key, value) -> None:
        self._data[key] = self._bytes(value)

    def get(self, key) -> bytes:
        self.wait([key])
        return self._data[key]

    def add(self, key, amount: int) -> int:
        value = int(self._data.get(key, b"0")) + int(amount)
        self._data[key] = str(value).encode()
        return value

    def compare_set(self, key, expected, desired) -> bytes:
        current_value = self._data.get(key)
        expected = self._bytes(expected)
        if (current_value is None and expected == b"") or current_value == expected:
            self._data[key] = self._bytes(desired)
        return self._data.get(key, expected)

    def check(self, keys) -> bool:
        return all(k in self._data for k in keys)

    def wait(self, keys, timeout=None) -> None:
        keys = tuple(keys)
        if self.check(keys):
            return
        limit = self._timeout if timeout is None else timeout
        dist = current()
        if dist is None:
            raise RuntimeError("an inproc store wait outside a launched rank")
        rank = dist.global_rank
        mine = self._waiting[rank] = Waiting(keys, limit, turns(limit))
        try:
            while not self.check(keys):
                idle = self._nothing_can_happen()
                if idle:
                    self._jump()
                if mine.turns_left <= 0:
                    raise tdist.DistStoreError(timeout_message(mine))
                self._wait_turn()
                if not idle:               # a turn given away while all are idle is no time
                    mine.turns_left -= 1
        finally:
            del self._waiting[rank]

    def _nothing_can_happen(self) -> bool:
        kernel = self._kernel
        return stuck(len(kernel.status), kernel.status, kernel.finished, self._waiting,
                     self.check)

    def _jump(self) -> None:
        """Time passes to the first expiry, for every waiter alike; with none, a deadlock."""
        first = first_expiry(self._waiting)
        if first is None:
            self._kernel.report(deadlock(self._kernel, self._waiting))
            return
        elapsed = max(0.0, self._waiting[first].turns_left)
        for wait in self._waiting.values():
            wait.turns_left -= elapsed

    def delete_key(self, key) -> bool:
        return self._data.pop(key, None) is not None

    def num_keys(self) -> int:
        return len(self._data)

    def multi_get(self, keys) -> list[bytes]:
        self.wait(keys)
        return [self._data[k] for k in keys]

    def multi_set(self, keys, values) -> None:
        for k, v in zip(keys, values):
            self.set(k, v)

    def append(self, key, value) -> None:
        self._data[key] = self._data.get(key, b"") + self._bytes(value)

    def set_timeout(self, timeout) -> None:
        self._timeout = timeout

    @property
    def timeout(self):
        return self._timeout


__all__ = ["InprocStore", "Waiting", "turns", "stuck", "first_expiry", "DEFAULT_TIMEOUT"]
