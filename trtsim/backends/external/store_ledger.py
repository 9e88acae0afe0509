"""The call ledger of a launch without launcher-owned shared memory (torchrun, mpirun): the
``Ledger`` contract (``ledger_contract``) over a c10d store, so it works across nodes. One key
per rank and communicator holds the rank's last call there (sequence, match hash, record),
one the rank's state (status, version, iteration, pending sends), one its current call;
the abort key, once set, holds the report that ends the launch.
"""

from __future__ import annotations

import pickle
import time
from typing import Any

import numpy as np

from ...layout.places import RankPlace
from ...calls.errors import CollectiveError
from ...guard.waitfor import BLOCKED, DONE, RUNNING, RankState, RankStatus
from ...calls.ops import Op
from ...calls.records import CallRecord
from ..process.ledger import STATUS_CODES, STATUS_NAMES, comm_key
from ..process.record_codec import match_hash
from ..process.aborts import Aborted


class StoreLedger:
    """The ledger interface of ``ledger.Ledger`` over a c10d store (works across nodes):
    ``ledger_contract.RankLedger`` for the rank's transport, ``LedgerView`` for the monitor."""

    def __init__(self, store: Any, rank: int, num_ranks: int, prefix: str = "trtsim"):
        self.store, self.rank, self.num_ranks, self.prefix = store, rank, num_ranks, prefix
        # status, version, iteration, pending sends, messages completed: taken ((src, tag) ->
        # seq), delivered ((dst, tag) -> seq)
        self._state: list[Any] = [STATUS_CODES[RUNNING], 0, 0, (), {}, {}]
        self._comms: list[int] = []                        # this rank's communicators, in use
        store.set(self._comms_key(rank), pickle.dumps([]))
        self._publish()

    def _slot_key(self, r: int, key: int) -> str:
        return f"{self.prefix}/slot/{r}/{key}"

    def _comms_key(self, r: int) -> str:
        return f"{self.prefix}/comms/{r}"

    def _state_key(self, r: int) -> str:
        return f"{self.prefix}/state/{r}"

    def _publish(self) -> None:
        self._state[1] += 1
        self.store.set(self._state_key(self.rank), pickle.dumps(tuple(self._state)))

    # -- rank side -----------------------------------------------------------------------
    def post(self, r: int, rec: CallRecord) -> bytes:
        """Publish ``rec`` as rank r's current call; its match hash (``Ledger.post``'s
        contract: the transport compares it with its peers')."""
        digest = match_hash(rec)
        if not rec.is_p2p:
            key = comm_key(rec)
            self.store.set(f"{self.prefix}/clk/{r}/{key}/{rec.seq % 64}", repr(rec.clock))
            self.store.set(self._slot_key(r, key), pickle.dumps((rec.seq, digest, rec)))
            if key not in self._comms:
                self._comms.append(key)
                self.store.set(self._comms_key(r), pickle.dumps(self._comms))
        self.store.set(f"{self.prefix}/call/{r}", pickle.dumps(rec))
        self._state[0] = STATUS_CODES[BLOCKED]
        self._publish()
        return digest

    def set_status(self, r: int, status: RankStatus) -> None:
        self._state[0] = STATUS_CODES[status]
        self._publish()

    def message_done(self, r: int, rec: CallRecord, returned: bool) -> None:
        done = self._state[5 if Op.of(rec.op).sends else 4]
        done[rec.route] = max(rec.seq, done.get(rec.route, 0))
        if returned:
            self._state[0] = STATUS_CODES[RUNNING]
        self._publish()

    def status(self, r: int) -> RankStatus:
        """This rank's own status (r is this ledger's rank)."""
        return STATUS_NAMES.get(self._state[0], RUNNING)

    def set_ready(self, r: int, pid: int) -> None:
        self.set_status(r, RUNNING)

    def set_iteration(self, r: int, iteration: int) -> None:
        self._state[2] = iteration
        self._publish()

    def set_pending_sends(self, r: int, sends: list[tuple[int, int]]) -> None:
        self._state[3] = tuple(sends)
        self._publish()

    def notify(self, ranks: list[int]) -> None:
        pass   # store writes are seen by the next read; waiting ranks poll

    def wait_for_post(self, r: int, timeout: float) -> None:
        time.sleep(min(timeout, 5e-4))

    # -- readers -------------------------------------------------------------------------
    def _slot(self, r: int, key: int) -> tuple[int, bytes, CallRecord | None]:
        name = self._slot_key(r, key)
        if not self.store.check([name]):          # never called there: get() would wait
            return 0, b"", None
        return pickle.loads(self.store.get(name))

    def read_seq_hash(self, r: int, rec: CallRecord) -> tuple[int, bytes]:
        seq, h, _ = self._slot(r, comm_key(rec))
        return seq, h

    def read_call(self, r: int, rec: CallRecord) -> CallRecord | None:
        if rec.is_p2p:        # r's current call, when it is a p2p one (Ledger's p2p slot)
            name = f"{self.prefix}/call/{r}"
            call = pickle.loads(self.store.get(name)) if self.store.check([name]) else None
            return call if call is not None and call.is_p2p else None
        return self._slot(r, comm_key(rec))[2]

    def arrival(self, r: int, rec: CallRecord) -> float:
        return float(self.store.get(f"{self.prefix}/clk/{r}/{comm_key(rec)}/{rec.seq % 64}"))

    @property
    def aborted(self) -> bool:
        return self.store.check([f"{self.prefix}/abort"])

    def abort(self, err: CollectiveError | None = None) -> None:
        """End the launch; ``err`` is the report every rank raises."""
        self.store.set(f"{self.prefix}/abort", pickle.dumps(err))

    def abort_error(self) -> CollectiveError:
        """The report that ended the launch (a rank that failed outside a collective ends it
        with none: a generic one then)."""
        err = pickle.loads(self.store.get(f"{self.prefix}/abort"))
        return err if err is not None else CollectiveError("another rank ended the launch")

    def wait_all_done(self, poll: float = 0.02) -> None:
        """Wait, done, until every rank is done; ``Aborted`` when a report ends the launch
        first (a rank waiting here is one the report must still reach)."""
        keys = [self._state_key(r) for r in range(self.num_ranks)]
        while not self.aborted:
            if all(pickle.loads(v)[0] == STATUS_CODES[DONE] for v in self.store.multi_get(keys)):
                return
            time.sleep(poll)
        raise Aborted()

    def versions(self) -> np.ndarray:
        return np.array([pickle.loads(self.store.get(self._state_key(r)))[1]
                         for r in range(self.num_ranks)])

    def snapshot(self, places: list[RankPlace]) -> dict[int, RankState]:
        out = {}
        for r in range(self.num_ranks):
            status_code, _, iteration, pending, taken, delivered = pickle.loads(
                self.store.get(self._state_key(r)))
            status = STATUS_NAMES.get(status_code, RUNNING)
            call = None
            if status == BLOCKED:
                call = pickle.loads(self.store.get(f"{self.prefix}/call/{r}"))
            posted = {}
            for key in pickle.loads(self.store.get(self._comms_key(r))):
                seq, _, last = self._slot(r, key)
                if last is not None:
                    posted[last.group_key] = seq
            out[r] = RankState(r, status, call, posted, tuple(pending), iteration,
                               places[r].name, received=taken, delivered=delivered)
        return out
