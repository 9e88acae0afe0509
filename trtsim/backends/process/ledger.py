"""The shared-memory call ledger of the process backend.

The launcher owns one shared-memory block; each rank writes only its own row: its status, a
version counter bumped on every change, its executor iteration, and for each communicator it
uses a slot with the sequence, match hash and pickled record of the last call it entered
there (plus one slot for its current p2p call, its pending sends, and the last message it
completed on each p2p channel: a rank shows blocked in a p2p call until its Python resumes
after the real one, and its peer's note that the message was taken or delivered tells the
wait-for rule that the call no longer waits). ``LAYOUT`` is the block's one layout table. A
slot directory maps a communicator's key (its kind and id, hashed) to the slot: a rank
claims a free slot the first time it calls on a communicator, and a peer looks the key up in
the rank's row.
Ranks read their peers' rows to compare records before a real collective; the launcher's
monitor reads every row to build the wait-for graph. No extra collective is ever issued.

Ordering. A reader must never pair one call's sequence number with another call's hash or
record. Plain numpy stores and loads give no such promise across processes on a weakly
ordered CPU (aarch64 Grace hosts reorder both stores and loads; only x86's TSO would keep
them in program order), so each row is guarded by a process-shared mutex that lives in the
block itself (``pthread_mutex_t`` with ``PTHREAD_PROCESS_SHARED``): a writer changes its row
only while holding the row's mutex, and a reader copies what it needs from a row while
holding it. Unlocking has release semantics and locking acquire semantics, so a reader that
takes the mutex after a writer released it sees every store of that critical section, in
any memory model the C library supports. The mutexes are robust (``PTHREAD_MUTEX_ROBUST``): a
rank killed inside its critical section leaves the mutex to the next taker (EOWNERDEAD), who
marks it consistent, so the monitor cannot hang on a dead rank's row. The critical sections
are a few stores or copies (no syscall when uncontended): benchmarks/bench_process.py
measures the guard with them (docs/BENCHMARKS.md). The abort flag is one word that only goes
from 0 to 1; a late read of it only delays the abort.

Every guarded call posts, reads its peers and sets its status: those paths store and load
through flat views of the block (``_Words``), since a numpy item store costs several times a
memoryview's (16 bytes of hash: ten times), and the rank runs them on a cold cache, just after
a real call returned. Everything else reads the numpy views of ``LAYOUT``.
"""

from __future__ import annotations

import ctypes
import hashlib
import time
from multiprocessing import shared_memory
from typing import Any, Callable

import numpy as np

from ...guard.waitfor import BLOCKED, RUNNING, RankState, RankStatus
from ...calls.ops import Op
from ...calls.records import CallRecord
from .ledger_layout import (BLOCKED_SLOT, CLOCK_HISTORY, ITERATION, LAYOUT, MAX_DONE,
                            MAX_PENDING, MAX_SLOTS, NUM_DONE, NUM_PENDING, P2P_KEY, P2P_SLOT,
                            PID, READY_NS, STATE_COLS, STATUS, STATUS_CODES, STATUS_NAMES,
                            VERSION, aligned, placed)
from .record_codec import SLOT_BYTES, RecordCodec, pack_ranks
from .row_mutex import RowLocks


class _Words:
    """The block as flat int64 (``q``), float64 (``d``) and byte (``b``) views, with where
    each area of ``LAYOUT`` starts in them: cells are ``q[area + index]``, ``index`` in the
    area's row-major order (a rank's row, then a slot)."""

    def __init__(self, buf, areas: list[tuple[str, Any, tuple, int]]):
        self.b = buf
        self.q = buf.cast("q")
        self.d = buf.cast("d")
        at = {name: off for name, _, _, off in areas}      # byte offsets (64-byte aligned)
        self.hash_bytes = next(shape[-1] for name, _, shape, _ in areas if name == "hash")
        self.header, self.state = at["header"] // 8, at["state"] // 8
        self.seq, self.iters, self.reclen = at["seq"] // 8, at["iters"] // 8, at["reclen"] // 8
        self.clocks = at["clocks"] // 8
        self.hash, self.rec = at["hash"], at["rec"]           # in bytes

    def release(self) -> None:
        self.q.release()
        self.d.release()


def comm_key(rec: CallRecord) -> int:
    """A nonzero int64 naming ``rec``'s communicator for the rank that made it (a rank is in
    one group of each of trtsim's kinds; an intercepted communicator has its own id)."""
    data = hashlib.blake2b(f"{rec.group_kind}|{rec.comm}".encode(), digest_size=8).digest()
    return int.from_bytes(data, "little", signed=True) or 2


class Ledger:
    """Views of the shared block; ``Ledger.create`` in the launcher, ``Ledger.attach`` in ranks."""

    # the areas of ``LAYOUT`` (set from the table)
    header: np.ndarray
    locks: RowLocks
    state: np.ndarray
    slot_key: np.ndarray
    seq: np.ndarray
    iters: np.ndarray
    hash: np.ndarray
    reclen: np.ndarray
    rec: np.ndarray
    pending: np.ndarray
    done: np.ndarray
    clocks: np.ndarray

    def __init__(self, shm: shared_memory.SharedMemory, num_ranks: int, owner: bool,
                 wakeups: list | None = None,
                 announce: Callable[[str, tuple], None] | None = None):
        self.shm, self.num_ranks, self.owner = shm, num_ranks, owner
        # one semaphore per rank: "a peer posted, look again" (none in a reader-only view)
        self.wakeups: list = wakeups if wakeups is not None else []
        # Groups a slot names only by digest (``record_codec``): a rank announces each one it
        # uses (``announce``, to the launcher), the launcher keeps them here.
        self.announce = announce
        self.known_groups: dict[str, tuple[int, ...]] = {}
        self._slots: dict[tuple, int] = {}   # this rank's (group kind, comm) -> slot
        self._codec = RecordCodec()
        self._posted_data: dict[tuple, bytes] = {}   # (rank, slot) -> template in the block
        self._found: dict[tuple, int] = {}    # reader's (rank, group kind, comm) -> slot
        self._keys: dict[tuple, tuple] = {}  # reader's cache: (rank, slot) -> (seq, group key)
        buf: Any = shm.buf         # a memoryview while the block is open
        base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        areas = placed(num_ranks)
        for name, dtype, shape, off in areas:
            if name == "locks":
                self.locks = RowLocks(base + off, num_ranks)
            else:
                setattr(self, name, np.ndarray(shape, dtype=dtype, buffer=buf, offset=off))
        self._w = _Words(buf, areas)

    @staticmethod
    def size(num_ranks: int) -> int:
        """The block's bytes for ``num_ranks`` ranks (the end of ``LAYOUT``'s last area)."""
        _, dtype, shape, off = placed(num_ranks)[-1]
        return off + aligned(int(np.prod(shape)) * np.dtype(dtype).itemsize)

    @classmethod
    def create(cls, num_ranks: int, wakeups: list | None = None) -> "Ledger":
        shm = shared_memory.SharedMemory(create=True, size=cls.size(num_ranks))
        ledger = cls(shm, num_ranks, owner=True, wakeups=wakeups)
        block: Any = shm.buf                  # a memoryview while the block is open
        np.frombuffer(block, dtype=np.uint8)[:] = 0
        ledger.locks.initialize()
        ledger.state[:, STATUS] = STATUS_CODES[RankStatus.STARTING]
        return ledger

    @classmethod
    def attach(cls, name: str, num_ranks: int, wakeups: list | None = None,
               announce: Callable[[str, tuple], None] | None = None) -> "Ledger":
        # Spawned ranks share the launcher's resource tracker, so attaching registers nothing
        # new and a rank's exit unlinks nothing; the launcher unlinks the block once.
        return cls(shared_memory.SharedMemory(name=name), num_ranks, owner=False,
                   wakeups=wakeups, announce=announce)

    @property
    def name(self) -> str:
        return self.shm.name

    def close(self) -> None:
        for name, *_ in LAYOUT:
            setattr(self, name, None)
        self._w.release()
        self.shm.close()
        if self.owner:
            try:
                self.shm.unlink()
            except FileNotFoundError:
                pass

    # -- rank side (each rank writes only its own row, holding the row's mutex) ----------
    def _status(self, r: int, status: RankStatus) -> None:
        q, row = self._w.q, self._w.state + r * STATE_COLS
        q[row + STATUS] = STATUS_CODES[status]
        if status != BLOCKED:
            q[row + BLOCKED_SLOT] = -1
        q[row + VERSION] += 1

    def set_status(self, r: int, status: RankStatus) -> None:
        with self.locks.row(r):
            self._status(r, status)

    def set_ready(self, r: int, pid: int) -> None:
        with self.locks.row(r):
            self.state[r, PID] = pid
            self.state[r, READY_NS] = time.monotonic_ns()
            self._status(r, RUNNING)

    def set_iteration(self, r: int, iteration: int) -> None:
        with self.locks.row(r):
            self.state[r, ITERATION] = iteration
            self.state[r, VERSION] += 1

    def _own_slot(self, r: int, rec: CallRecord) -> int:
        """Rank r's slot for ``rec``'s communicator, claimed on first use (its own row)."""
        if rec.is_p2p:
            self.slot_key[r, P2P_SLOT] = P2P_KEY   # a constant: no ordering to keep
            return P2P_SLOT
        slot = self._slots.get((rec.group_kind, rec.comm))
        if slot is None:
            free = np.flatnonzero(self.slot_key[r, 1:] == 0)
            if not free.size:
                raise RuntimeError(f"rank {r} uses more than {MAX_SLOTS - 1} communicators")
            slot = self._slots[(rec.group_kind, rec.comm)] = int(free[0]) + 1
            ranks = pack_ranks(rec.group_ranks)
            if ranks[0] == "#" and self.announce is not None:
                self.announce(ranks[2], rec.group_ranks)     # before any reader needs it
            with self.locks.row(r):
                # before the slot's data: readers find it first
                self.slot_key[r, slot] = comm_key(rec)
        return slot

    def slot_of(self, r: int, rec: CallRecord) -> int | None:
        """Rank r's slot for ``rec``'s communicator, or None when r never called on it (a
        claimed slot never moves, so a found one is remembered). For a p2p record: r's
        current p2p call, which is in one slot whatever its channel."""
        if rec.is_p2p:
            return P2P_SLOT if self.slot_key[r, P2P_SLOT] == P2P_KEY else None
        where = (r, rec.group_kind, rec.comm)
        slot = self._found.get(where)
        if slot is None:
            with self.locks.row(r):     # ordered after the claim, as the slot's data is
                found = np.flatnonzero(self.slot_key[r] == comm_key(rec))
            if not found.size:
                return None
            slot = self._found[where] = int(found[0])
        return slot

    def post(self, r: int, rec: CallRecord) -> bytes:
        """Rank ``r`` enters ``rec``: publish it and mark the rank blocked in it. Returns
        the record's match hash."""
        slot = self._own_slot(r, rec)
        data, digest = self._codec.encode(rec)           # the slow part, outside the lock
        w, cell = self._w, r * MAX_SLOTS + slot
        q, b, at = w.q, w.b, w.hash + cell * w.hash_bytes
        with self.locks.row(r):
            if self._posted_data.get((r, slot)) is not data:     # a new template (cached)
                start = w.rec + cell * SLOT_BYTES
                b[start:start + len(data)] = data
                q[w.reclen + cell] = len(data)
                self._posted_data[(r, slot)] = data
            b[at:at + w.hash_bytes] = digest
            w.d[w.clocks + cell * CLOCK_HISTORY + rec.seq % CLOCK_HISTORY] = rec.clock
            q[w.iters + cell] = rec.iteration
            q[w.seq + cell] = rec.seq
            q[w.state + r * STATE_COLS + BLOCKED_SLOT] = slot
            self._status(r, BLOCKED)
        return digest

    def learn_group(self, hexdigest: str, ranks: tuple[int, ...]) -> None:
        """The launcher: a group a rank announced (slots name it by digest only)."""
        self.known_groups[hexdigest] = tuple(ranks)

    def set_pending_sends(self, r: int, sends: list[tuple[int, int]]) -> None:
        sends = sends[-MAX_PENDING:]
        with self.locks.row(r):
            for i, (dst, tag) in enumerate(sends):
                self.pending[r, i] = (dst, tag)
            self.state[r, NUM_PENDING] = len(sends)
            self.state[r, VERSION] += 1

    def message_done(self, r: int, rec: CallRecord, returned: bool) -> None:
        """Rank r's message ``rec`` completed: a receive's message is taken, a send's is
        delivered (its receive completes without the sender). Kept as the last sequence per
        channel; ``returned``: r's call returned with it, and r runs on. One step, so no
        reader sees r running on while its peer's call still looks unmatched."""
        peer, tag = rec.route
        sends = int(Op.of(rec.op).sends)
        with self.locks.row(r):
            n = int(self.state[r, NUM_DONE])
            rows = self.done[r, :n]
            found = np.flatnonzero((rows[:, 0] == peer) & (rows[:, 1] == tag)
                                   & (rows[:, 3] == sends))
            if found.size:
                self.done[r, int(found[0]), 2] = max(rec.seq, int(rows[int(found[0]), 2]))
            else:
                if n == MAX_DONE:           # the oldest channel goes (a rarely used one)
                    self.done[r, :-1] = self.done[r, 1:].copy()
                    n -= 1
                self.done[r, n] = (peer, tag, rec.seq, sends)
                self.state[r, NUM_DONE] = n + 1
            if returned:
                self._status(r, RUNNING)
            else:
                self.state[r, VERSION] += 1

    def notify(self, ranks: list[int]) -> None:
        """Wake ``ranks`` if they wait for a post (a rank not waiting finds the wake-up at
        its next wait, and only looks once more)."""
        for m in ranks:
            self.wakeups[m].release()

    def wait_for_post(self, r: int, timeout: float) -> None:
        """Sleep until some peer notifies rank r (stale notifications only cost a look)."""
        self.wakeups[r].acquire(timeout=timeout)

    # -- readers -------------------------------------------------------------------------
    def read_seq_hash(self, r: int, rec: CallRecord) -> tuple[int, bytes]:
        """(sequence, hash) of rank r's last call on ``rec``'s communicator, read
        consistently; (0, b"") when it never called there."""
        k = self.slot_of(r, rec)
        if k is None:
            return 0, b""
        w, cell = self._w, r * MAX_SLOTS + k
        at = w.hash + cell * w.hash_bytes
        with self.locks.row(r):
            return w.q[w.seq + cell], bytes(w.b[at:at + w.hash_bytes])

    def arrival(self, r: int, rec: CallRecord) -> float:
        """Rank r's virtual clock when it entered call ``rec.seq`` on ``rec``'s communicator."""
        slot = self.slot_of(r, rec)
        if slot is None:
            return rec.clock
        with self.locks.row(r):
            return float(self.clocks[r, slot, rec.seq % CLOCK_HISTORY])

    def read_call(self, r: int, rec: CallRecord) -> CallRecord | None:
        """Rank r's last record on ``rec``'s communicator (its fields that match ``rec``'s
        are ``rec``'s: see ``record_codec``)."""
        k = self.slot_of(r, rec)
        return None if k is None else self.read_record(r, k, like=rec)

    def read_record(self, r: int, slot: int, like: CallRecord | None = None) -> CallRecord | None:
        with self.locks.row(r):
            return self._record_bytes(r, slot, like)

    def _record_bytes(self, r: int, slot: int, like: CallRecord | None = None) -> CallRecord | None:
        n = int(self.reclen[r, slot])
        if n <= 0:
            return None
        seq = int(self.seq[r, slot])
        return RecordCodec.decode(self.rec[r, slot, :n].tobytes(), seq, int(self.iters[r, slot]),
                                  float(self.clocks[r, slot, seq % CLOCK_HISTORY]), like,
                                  self.known_groups)

    def _posted(self, r: int) -> dict[tuple, int]:
        """Rank r's last sequence on each communicator it used, by group key (the key is
        read from the slot's record once per sequence)."""
        out = {}
        for slot in np.flatnonzero(self.slot_key[r, 1:]) + 1:
            with self.locks.row(r):
                seq = int(self.seq[r, slot])
                cached = self._keys.get((r, slot))
                if cached is None or cached[0] != seq:
                    rec = self._record_bytes(r, int(slot))
                    if rec is None:
                        continue              # claimed, nothing posted yet
                    cached = self._keys[(r, slot)] = (seq, rec.group_key)
            out[cached[1]] = cached[0]
        return out

    @property
    def aborted(self) -> bool:
        return self._w.q[self._w.header] != 0

    def abort(self) -> None:
        self.header[0] = 1

    def status(self, r: int) -> RankStatus:
        """Rank r's status as its row says it (``starting`` until it runs the program)."""
        with self.locks.row(r):
            return STATUS_NAMES.get(int(self.state[r, STATUS]), RankStatus.RUNNING)

    def versions(self) -> np.ndarray:
        out = np.empty(self.num_ranks, dtype=np.int64)
        for r in range(self.num_ranks):
            with self.locks.row(r):
                out[r] = self.state[r, VERSION]
        return out

    def snapshot(self, places) -> dict[int, RankState]:
        """Every rank's state as the wait-for analysis reads it (each row consistent)."""
        out = {}
        for r in range(self.num_ranks):
            with self.locks.row(r):
                code, slot = int(self.state[r, STATUS]), int(self.state[r, BLOCKED_SLOT])
                status = STATUS_NAMES.get(code, RUNNING)
                status = RUNNING if status == RankStatus.STARTING else status
                call = self._record_bytes(r, slot) if status == BLOCKED else None
                npend = int(self.state[r, NUM_PENDING])
                pending = tuple((int(d), int(t)) for d, t in self.pending[r, :npend])
                iteration = int(self.state[r, ITERATION])
                done = self.done[r, :int(self.state[r, NUM_DONE])].tolist()
            posted = self._posted(r)     # takes the row's mutex per slot it must decode
            if call is None:
                status = RUNNING if status == BLOCKED else status
            out[r] = RankState(r, status, call, posted, pending, iteration, places[r].name,
                               received={(p, t): q for p, t, q, snd in done if not snd},
                               delivered={(p, t): q for p, t, q, snd in done if snd})
        return out
