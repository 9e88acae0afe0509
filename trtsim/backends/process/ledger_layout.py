"""The shared-memory ledger's block, laid out once: the row columns, the per-rank areas
(``LAYOUT``) and where each area starts for a number of ranks (``placed``). ``ledger.Ledger``
makes its views from this table and sizes the block by it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...guard.waitfor import RankStatus
from .record_codec import SLOT_BYTES
from .row_mutex import MUTEX_BYTES

MAX_SLOTS = 16            # communicators one rank may use (trtsim's own kinds take five)
P2P_SLOT = 0              # slot 0 holds the current p2p call
P2P_KEY = 1
STATUS_CODES = {RankStatus.RUNNING: 0, RankStatus.BLOCKED: 1, RankStatus.DONE: 2,
                RankStatus.FAILED: 3, RankStatus.STARTING: 4}
STATUS_NAMES = {v: k for k, v in STATUS_CODES.items()}
MAX_PENDING = 64
MAX_DONE = 64             # channels whose last completed message a rank keeps
CLOCK_HISTORY = 64
# state columns
STATUS, VERSION, ITERATION, BLOCKED_SLOT, NUM_PENDING, READY_NS, PID, NUM_DONE = range(8)
STATE_COLS = 8

# The block, in order: each area's attribute, dtype and shape per rank (``None``: one for the
# whole block; ``k``: a slot's). Every area starts on a 64-byte line. ``Ledger`` makes its
# views from this table and ``Ledger.size`` sums it: the layout is written once.
LAYOUT: tuple[tuple[str, Any, tuple], ...] = (
    ("header", np.int64, (None, 4)),                          # [abort, ...]
    ("locks", np.uint8, (MUTEX_BYTES,)),                      # one row mutex a rank
    ("state", np.int64, (STATE_COLS,)),
    ("slot_key", np.int64, ("k",)),                           # the slot directory (0: free)
    ("seq", np.int64, ("k",)),
    ("iters", np.int64, ("k",)),                              # the iteration of the slot's call
    ("hash", np.uint8, ("k", 16)),
    ("reclen", np.int64, ("k",)),
    ("rec", np.uint8, ("k", SLOT_BYTES)),
    ("pending", np.int64, (MAX_PENDING, 2)),                  # (dst, tag) of sends in flight
    ("done", np.int64, (MAX_DONE, 4)),       # (peer, tag, seq, sends): last message completed
    # entry clocks of the last CLOCK_HISTORY calls per group: members read each other's
    # arrival after a collective (a member cannot be that many calls ahead on one group)
    ("clocks", np.float64, ("k", CLOCK_HISTORY)),
)


def aligned(nbytes: int) -> int:
    """``nbytes`` rounded up to whole 64-byte lines (every area starts on one)."""
    return (nbytes + 63) // 64 * 64


def placed(num_ranks: int) -> list[tuple[str, Any, tuple[int, ...], int]]:
    """``LAYOUT`` for ``num_ranks`` ranks: each area's name, dtype, shape and byte offset."""
    out, off = [], 0
    for name, dtype, per in LAYOUT:
        dims = [MAX_SLOTS if d == "k" else d for d in per]
        shape = tuple(dims[1:]) if dims[0] is None else (num_ranks, *dims)
        out.append((name, dtype, shape, off))
        off += aligned(int(np.prod(shape)) * np.dtype(dtype).itemsize)
    return out
