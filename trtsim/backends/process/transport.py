"""The rank side of the process backend: a guarded transport over torch.distributed.

How strict mode keeps mismatched calls from pairing
---------------------------------------------------
Before a rank issues a real collective it posts its record in the ledger and compares the
match hashes of the members that posted the same group sequence; a differing member is
reported and the rank does not enter the real collective, so the silent pairing of DESIGN 4
cannot happen. Of any two members, the one that posts second sees the record of the first
(a rank reads a peer's row under the row's mutex, after its own post: the mutexes order the
two), so one of them always sees a divergent pair.

Every collective waits until *every* member has posted (``guard.rules.awaits_every_member``)
before its real call: a rooted one's root can finish before the others enter, and a real
call entered early could pair, on a transport shared by several communicators, with another
communicator's call of a peer that is elsewhere (gloo aborts on the size mismatch). A member
already past the sequence has verified this rank's record itself. With the guard off the
record is still posted (the monitor needs it) but nobody compares.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from ...timeline.clock import ClockModel, RankClock, finish_collective, finish_receive
from ...calls.errors import CollectiveError
from ...guard.policy import GuardPolicy
from ...guard.rules import awaits_every_member, check_group_call, message_taken
from ...guard.waitfor import RUNNING
from ...calls.ops import Op
from ...calls.records import CallRecord
from ...calls.semantics import nbytes
from . import torch_ops
from .aborts import Aborted, Reported
from .ledger_contract import RankLedger


class TorchTransport:
    """One rank's guarded path to torch.distributed (the Transport of its Distributed).

    ``run`` (an intercepted API's real call) replaces trtsim's own collective or message:
    the guard's check comes first either way. An intercepted tensor message is judged by
    the p2p rule through ``messages`` (its records meet there: it carries no header); a
    transport without (mpirun's: MPI's messages are objects, which the rule lets through)
    judges trtsim's own messages only."""

    runs_real_calls = True

    def __init__(self, rank: int, ledger: RankLedger, groups: dict[str, torch_ops.TorchGroup],
                 policy: GuardPolicy, device: torch.device,
                 report: Callable[[CollectiveError], None], clock_model: ClockModel | None = None,
                 messages: torch_ops.MessageRecords | None = None):
        self.rank, self.ledger, self.groups = rank, ledger, groups
        self.policy, self.device, self.report = policy, device, report
        self.messages = messages
        self.clock = RankClock()
        self.clock_model = clock_model or ClockModel()
        self.log: list[CallRecord] = []   # this rank's collectives, for the launcher's lockstep
        self._inflight: list[tuple[int, int, Any, CallRecord]] = []   # isends: dst, tag, works

    # -- Transport -----------------------------------------------------------------------
    def collective(self, rec: CallRecord, payload: Any, run=None) -> Any:
        self._check_abort()
        digest = self.ledger.post(self.rank, rec)
        if self.policy.compares and awaits_every_member(rec):
            # Every member must have posted this call before the real one runs: a real call
            # entered early could pair, on a shared transport, with another communicator's
            # call of a peer that is elsewhere (gloo aborts on the size mismatch).
            self._check_members(rec, digest)
        if run is not None:
            result = run()
        else:
            group = self.groups[rec.group_kind]
            result = torch_ops.collective(rec.op, payload, group, rec.root, rec.reduce_op)
        self.ledger.set_status(self.rank, RUNNING)
        if run is None:       # virtual time prices trtsim's own calls, not intercepted ones
            self._complete_clock(rec, payload)
        self.log.append(rec)
        return result

    def send(self, rec: CallRecord, payload: Any, blocking: bool, run=None) -> Any:
        self._check_abort()
        if run is not None:
            self._judge_message(rec)
            if blocking:
                return self._blocked(rec, run)
            works = run()
            self._inflight.append((*rec.route, works, rec))
            self._publish_pending()
            return _Handle(self, rec, works)
        as_tensor = Op.of(rec.op).tensor
        stage = self._stage_p2p()
        peer, tag = rec.route
        if blocking:
            self.ledger.post(self.rank, rec)
            torch_ops.send(payload, peer, tag, as_tensor, True, stage, rec.clock, rec)
            self._returned(rec)
            return None
        works = torch_ops.send(payload, peer, tag, as_tensor, False, stage, rec.clock, rec)
        self._inflight.append((peer, tag, works, rec))
        self._publish_pending()
        return _Handle(self, rec, works)

    def recv(self, rec: CallRecord, buffer: Any, blocking: bool = True, run=None) -> Any:
        self._check_abort()
        self._publish_pending()
        if run is not None:
            self._judge_message(rec)
            return self._blocked(rec, run) if blocking else _RealRecv(self, rec, run())
        pending = torch_ops.PendingRecv(*rec.route, buffer, self._stage_p2p(), rec,
                                        self._reject)
        handle = _RecvHandle(self, rec, pending)
        return handle.wait() if blocking else handle

    def _judge_message(self, rec: CallRecord) -> None:
        """The p2p rule for an intercepted message, before its real call: a tensor's two
        records meet in ``messages``, and the side that comes second judges the pair."""
        if self.messages is not None and Op.of(rec.op).tensor:
            err = self.messages.meet(rec)
            if err is not None:
                self._reject(err)

    def _blocked(self, rec: CallRecord, run) -> Any:
        """Run a real blocking call, visibly blocked in ``rec`` for the monitor."""
        self.ledger.post(self.rank, rec)
        value = run()
        self._returned(rec)
        return value

    def _returned(self, rec: CallRecord) -> None:
        """Message ``rec``'s call returned: the rank runs, and the message is done (taken or
        delivered: its peer may still show blocked in the other side's call until its
        Python resumes, and must not read as waiting for this rank)."""
        self.ledger.message_done(self.rank, rec, True)

    def wait_recv(self, rec: CallRecord, pending) -> Any:
        self.ledger.post(self.rank, rec)
        value = pending.wait()
        self._returned(rec)
        return value

    def _complete_clock(self, rec: CallRecord, payload: Any) -> None:
        """Leave the collective at the latest member's arrival (read from the ledger, where
        every member wrote its clock when it entered) plus the collective's cost."""
        arrivals = {m: rec.clock if m == self.rank else self.ledger.arrival(m, rec)
                    for m in rec.group_ranks}
        cost = self.clock_model.collective_cost(rec.op, len(arrivals), rec.signature,
                                                nbytes(payload))
        finish_collective({self.rank: self.clock}, (self.rank,), arrivals, cost, rec.short())

    def clock_received(self, rec: CallRecord, pending) -> None:
        """The receiver's clock: the later of its arrival and the send plus the transfer."""
        value = pending.wait()
        finish_receive(self.clock, pending.send_clock,
                       self.clock_model.transfer_time(nbytes(value), isinstance(value, torch.Tensor)),
                       rec.short(), rec.route[0])

    def set_iteration(self, iteration: int) -> None:
        self.ledger.set_iteration(self.rank, iteration)

    def delay(self, seconds: float) -> None:
        time.sleep(seconds)

    # -- helpers -------------------------------------------------------------------------
    def _stage_p2p(self) -> bool:
        return self.groups["world"].stage_cuda

    def _publish_pending(self) -> None:
        """Publish the sends still in flight; the completed ones are delivered first (a send
        leaves the pending list only once its receive reads as satisfied otherwise)."""
        keep = []
        for d, t, w, rec in self._inflight:
            if w.is_completed():
                self.ledger.message_done(self.rank, rec, False)
            else:
                keep.append((d, t, w, rec))
        self._inflight = keep
        self.ledger.set_pending_sends(self.rank, [(d, t) for d, t, _, _ in keep])

    def _refresh_pending(self) -> None:
        """Drop the in-flight sends their receivers have taken (gloo's isend completes only
        when waited for, so ``is_completed`` alone would keep them pending forever, and a
        receiver's later receive on the channel would look satisfiable: a hidden deadlock);
        publish only on a change, which the deadlock monitor must see settle."""
        keep = [(d, t, w, rec) for d, t, w, rec in self._inflight if not w.is_completed()
                and not (getattr(w, "rec", None) is not None
                         and message_taken(w.rec, self.ledger.read_call(d, w.rec)))]
        if len(keep) != len(self._inflight):
            for d, t, w, rec in self._inflight:
                if w.is_completed():
                    self.ledger.message_done(self.rank, rec, False)
            self._inflight = keep
            self.ledger.set_pending_sends(self.rank, [(d, t) for d, t, _, _ in keep])

    def wait_send(self, rec: CallRecord, works) -> None:
        self.ledger.post(self.rank, rec)
        works.wait()
        self._returned(rec)
        self._publish_pending()

    def _check_abort(self) -> None:
        if self.ledger.aborted:
            raise Aborted()

    def _check_members(self, rec: CallRecord, mine: bytes) -> None:
        """Wait until every member has posted ``rec.seq``, comparing this rank's record (its
        match hash ``mine``) with each as it arrives.

        The member that finds every other one posted at its first look wakes them all; the
        others sleep until then. Some member always does: each look reads a row under its
        mutex after this rank's own post, so if x's look missed y's post, x posted before
        y did (happens-before), and the member whose post comes last in that order missed
        nobody. One wake-up per waiting member and call, where every member waking every
        other cost each sleeper a wake-up per peer. The sleep is bounded (the abort flag,
        the pending sends), so a wake-up lost to a dead peer costs only a poll."""
        waiting = [m for m in rec.group_ranks if m != self.rank]
        first = True
        while True:
            still = []
            for m in waiting:
                seq, h = self.ledger.read_seq_hash(m, rec)
                if seq < rec.seq:
                    still.append(m)
                elif seq == rec.seq and h != mine:
                    self._report_mismatch(rec)
            if not still:
                if first:        # the last to post: the others may sleep in this loop
                    self.ledger.notify(waiting)
                return
            waiting, first = still, False
            if self.ledger.aborted:
                raise Aborted()
            self._refresh_pending()
            # Sleep until a peer posts instead of spinning: on a small machine spinning
            # ranks starve the ranks they wait for.
            self.ledger.wait_for_post(self.rank, timeout=0.05)

    def _reject(self, err: CollectiveError) -> None:
        """A message the guard's p2p rule rejected: report it, take nothing."""
        self.report(err)
        raise Reported()

    def _report_mismatch(self, rec: CallRecord) -> None:
        records = {self.rank: rec}
        for m in rec.group_ranks:
            if m != self.rank:
                other = self.ledger.read_call(m, rec)
                if other is not None and other.seq == rec.seq:
                    records[m] = other
        err = check_group_call(records)
        if err is None:       # torn read: the peer rewrote its slot; compare again later
            return
        self.report(err)
        raise Reported()


class _Handle:
    """The handle of a non-blocking send; ``wait()`` blocks (visibly to the monitor)."""

    def __init__(self, transport: TorchTransport, rec: CallRecord, works):
        self._transport, self._rec, self._works = transport, rec, works

    def is_completed(self) -> bool:
        return self._works.is_completed()

    def wait(self, timeout=None) -> None:
        if not self._works.is_completed():
            self._transport.wait_send(self._rec, self._works)


class _RecvHandle:
    """The handle of a non-blocking receive; ``wait()`` blocks (visibly) and returns it."""

    def __init__(self, transport: TorchTransport, rec: CallRecord, pending):
        self._transport, self._rec, self._pending = transport, rec, pending
        self._clocked = False

    def is_completed(self) -> bool:
        return self._pending.is_completed()

    def wait(self) -> Any:
        if self._pending.is_completed():
            value = self._pending.wait()
            self._transport._returned(self._rec)
        else:
            value = self._transport.wait_recv(self._rec, self._pending)
        if not self._clocked:
            self._clocked = True
            self._transport.clock_received(self._rec, self._pending)
        return value


class _RealRecv:
    """The handle of an intercepted non-blocking receive; ``wait()`` blocks visibly."""

    def __init__(self, transport: TorchTransport, rec: CallRecord, works):
        self._transport, self._rec, self._works = transport, rec, works

    def is_completed(self) -> bool:
        return self._works.is_completed()

    def wait(self, timeout=None) -> Any:
        if self._works.is_completed():
            value = self._works.wait()
            self._transport._returned(self._rec)
            return value
        return self._transport._blocked(self._rec, self._works.wait)
