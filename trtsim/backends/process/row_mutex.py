"""Process-shared mutexes inside a shared-memory block: the ledger's memory ordering.

A row of the call ledger is written by one rank and read by its peers and the launcher's
monitor, in other processes, through plain loads and stores. Holding a pthread mutex around
each write and each read orders them on any CPU (the unlock releases, the lock acquires); see
the ordering argument in ``ledger``.
"""

from __future__ import annotations

import ctypes
import errno

MUTEX_BYTES = 64            # >= sizeof(pthread_mutex_t) on glibc and musl (40 to 48 bytes)
_PROCESS_SHARED, _ROBUST = 1, 1   # PTHREAD_PROCESS_SHARED, PTHREAD_MUTEX_ROBUST (Linux)


class RowLocks:
    """One process-shared, robust pthread mutex per ledger row, inside the shared block."""

    def __init__(self, address: int, rows: int):
        libc = ctypes.CDLL(None, use_errno=True)
        self._lock, self._unlock = libc.pthread_mutex_lock, libc.pthread_mutex_unlock
        self._consistent = libc.pthread_mutex_consistent
        for fn in (self._lock, self._unlock, self._consistent):
            fn.argtypes, fn.restype = [ctypes.c_void_p], ctypes.c_int
        self._libc = libc
        self._ptrs = [ctypes.c_void_p(address + r * MUTEX_BYTES) for r in range(rows)]
        self._rows = [_Held(self, r, p) for r, p in enumerate(self._ptrs)]

    def initialize(self) -> None:
        """Set up every mutex (the block's owner, once, before any rank attaches)."""
        attr = ctypes.create_string_buffer(64)          # >= sizeof(pthread_mutexattr_t)
        lib = self._libc
        checks = [lib.pthread_mutexattr_init(attr),
                  lib.pthread_mutexattr_setpshared(attr, _PROCESS_SHARED),
                  lib.pthread_mutexattr_setrobust(attr, _ROBUST)]
        checks += [lib.pthread_mutex_init(p, attr) for p in self._ptrs]
        lib.pthread_mutexattr_destroy(attr)
        if any(checks):
            raise OSError(next(c for c in checks if c), "cannot set up the ledger's row mutexes")

    def row(self, r: int) -> "_Held":
        """``with locks.row(r):`` holds row r's mutex for the block."""
        return self._rows[r]


class _Held:
    """The context manager of one row's mutex (a class, not a generator: the ledger takes a
    row's mutex twice per guarded call)."""

    __slots__ = ("_ptr", "_row", "_locks")

    def __init__(self, locks: RowLocks, row: int, ptr):
        self._locks, self._row, self._ptr = locks, row, ptr

    def __enter__(self) -> None:
        code = self._locks._lock(self._ptr)
        if code == errno.EOWNERDEAD:        # its last holder died inside: the row is usable
            self._locks._consistent(self._ptr)
        elif code:
            raise OSError(code, f"ledger row {self._row}: pthread_mutex_lock failed")

    def __exit__(self, *exc) -> None:
        self._locks._unlock(self._ptr)
