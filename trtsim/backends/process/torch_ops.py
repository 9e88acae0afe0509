"""The point-to-point messages of the process backend, on torch.distributed; its
collectives are ``torch_collectives``' (re-exported here: ``collective``, ``TorchGroup``,
``tdist``).

p2p objects use two tags per user tag (size, then bytes). Tensors use the same two: a
fixed-size header with the sender's clock and record on the first, the data on the second.
The receiver reads the header first and asks the guard's p2p rule (``rules.check_message``)
whether its buffer fits before it takes the data, as the inproc mailbox does: gloo would
fill part of a larger buffer and say nothing (and abort the process on a smaller one).

An intercepted message (the program's own ``torch.distributed.send``/``recv``, run as it is)
carries no header, so its two records meet in the rendezvous store instead
(``MessageRecords``), and the same rule judges them before the receive takes any data.
"""

from __future__ import annotations

import hashlib
import pickle
import struct
from typing import Any, Callable

import torch

from ...calls.errors import CollectiveMismatch
from ...guard.rules import check_message
from ...calls.ops import Op
from ...calls.records import CallRecord
from ...comm.real_collectives import TorchGroup, collective, obj_bytes, obj_from, tdist

__all__ = ["TorchGroup", "collective", "tdist", "send", "PendingRecv", "HEADER_BYTES",
           "MessageRecords"]


class _Works:
    """Several in-flight sends that complete together; ``rec``: the send's record."""

    def __init__(self, works: list, keep: list, rec: CallRecord | None = None):
        self._works, self._keep = works, keep     # keep: tensors alive until completion
        self.rec = rec

    def is_completed(self) -> bool:
        return all(w.is_completed() for w in self._works)

    def wait(self) -> None:
        for w in self._works:
            w.wait()


HEADER_BYTES = 1024      # a tensor message's header: the sender's clock and record
_TEXT_MAX = 240          # longer texts travel as a digest (compared exactly, shown short)


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= _TEXT_MAX:
        return text
    return f"{text[:80]}...#{hashlib.blake2b(text.encode(), digest_size=16).hexdigest()}"


def _header(rec: CallRecord | None, clock: float) -> torch.Tensor:
    """``clock`` and what the receiver's guard needs of ``rec``, in HEADER_BYTES."""
    fields = () if rec is None else (rec.op, rec.seq, _short(rec.signature), _short(rec.label),
                                     rec.iteration, _short(rec.callsite), rec.rank,
                                     rec.local_rank, rec.instance)
    data = pickle.dumps(fields, protocol=pickle.HIGHEST_PROTOCOL)
    out = bytearray(HEADER_BYTES)
    struct.pack_into("<dI", out, 0, clock, len(data))
    out[12:12 + len(data)] = data
    return torch.frombuffer(out, dtype=torch.uint8)


def _sender(header: torch.Tensor, receiver: CallRecord) -> tuple[float, CallRecord | None]:
    """The clock and the sender's record from a header (None: the sender sent none)."""
    raw = header.numpy().tobytes()
    clock, n = struct.unpack_from("<dI", raw, 0)
    fields = pickle.loads(raw[12:12 + n])
    if not fields:
        return clock, None
    op, seq, signature, label, iteration, callsite, rank, local_rank, instance = fields
    return clock, CallRecord(op, seq, label, iteration, callsite, signature, rank, local_rank,
                             instance, "p2p", receiver.group_ranks, peer=receiver.rank,
                             tag=receiver.tag, clock=clock)


def send(payload: Any, dst: int, tag: int, as_tensor: bool, blocking: bool,
         stage_cuda: bool, clock: float = 0.0, rec: CallRecord | None = None) -> _Works | None:
    """Send an object (size then bytes of (clock, object) on tags 2t and 2t+1) or a tensor
    (the header of the sender's clock and record ``rec`` on 2t, the data on 2t+1)."""
    if as_tensor:
        tensors = [_header(rec, clock),
                   payload.detach().cpu() if (stage_cuda and payload.is_cuda) else payload]
    else:
        data = obj_bytes((clock, payload))
        tensors = [torch.tensor([data.numel()], dtype=torch.int64), data]
    tags = [2 * tag, 2 * tag + 1]
    if blocking:
        for t, g in zip(tensors, tags):
            tdist.send(t, dst, tag=g)
        return None
    return _Works([tdist.isend(t, dst, tag=g) for t, g in zip(tensors, tags)], tensors, rec)


class PendingRecv:
    """A posted receive: a tensor as its header, then (once the guard's p2p rule accepts the
    buffer) the data straight into the buffer; an object as size then bytes (the bytes are
    posted once the size is known). ``rec``: the receive's own record, and ``reject``: what
    to do with the mismatch of a tensor that does not fit (raise, usually)."""

    def __init__(self, src: int, tag: int, buffer: torch.Tensor | None, stage_cuda: bool,
                 rec: CallRecord | None = None,
                 reject: Callable[[CollectiveMismatch], None] | None = None):
        self.src, self.tag, self.buffer = src, tag, buffer
        self.rec, self.reject = rec, reject
        self._value: Any = None
        self._done = False
        self.send_clock = 0.0
        self._data: torch.Tensor | None = None
        if buffer is not None:
            self._target = buffer.new_empty(buffer.shape, device="cpu") \
                if (stage_cuda and buffer.is_cuda) else buffer
            self._head = torch.empty(HEADER_BYTES, dtype=torch.uint8)
            self._work = tdist.irecv(self._head, src, tag=2 * tag)
        else:
            self._size = torch.empty(1, dtype=torch.int64)
            self._work = tdist.irecv(self._size, src, tag=2 * tag)

    def is_completed(self) -> bool:
        while not self._done and self._work.is_completed():
            self._advance()
        return self._done

    def _advance(self) -> None:
        """Move on after the current piece arrived (wait() already returned or polled done)."""
        if self.buffer is not None:
            if self._data is None:
                self._data = self._target
                self.send_clock, sent = _sender(self._head, self.rec) if self.rec is not None \
                    else (struct.unpack_from("<d", self._head.numpy().tobytes())[0], None)
                err = check_message(sent, self.rec) if sent is not None and self.rec else None
                if err is not None and self.reject is not None:
                    self.reject(err)
                self._work = tdist.irecv(self._target, self.src, tag=2 * self.tag + 1)
                return
            if self._target is not self.buffer:
                self.buffer.copy_(self._target)
            self._value, self._done = self.buffer, True
        elif self._data is None:
            self._data = torch.empty(int(self._size.item()), dtype=torch.uint8)
            self._work = tdist.irecv(self._data, self.src, tag=2 * self.tag + 1)
        else:
            self.send_clock, self._value = obj_from(self._data, self._data.numel())
            self._done = True

    def wait(self) -> Any:
        while not self._done:
            self._work.wait()
            self._advance()
        return self._value


class MessageRecords:
    """Where the two records of an intercepted tensor message meet: the launch's rendezvous
    store, one key per message (its channel and sequence). Each side puts its record there
    with one compare-and-set before its real call; the side that comes second gets the
    first's record back, judges the pair with the guard's p2p rule and removes the key. So
    exactly one side judges each message, before its own real call: a receive that does not
    fit is reported before it takes any data (the judge that is the sender never sends; the
    judge that is the receiver never posts its receive). Object messages are not put here:
    the rule lets any object through."""

    def __init__(self, store, prefix: str = "trtsim/msg"):
        self.store, self.prefix = store, prefix

    def meet(self, rec: CallRecord) -> CollectiveMismatch | None:
        """Put ``rec`` (a tensor send or receive) where its other side meets it; the
        mismatch when that side came first and the pair breaks the p2p rule, else None
        (also when this side is first: the other one judges)."""
        src, dst = rec.group_ranks
        key = f"{self.prefix}/{src}/{dst}/{rec.tag}/{rec.seq}"
        mine = pickle.dumps(rec, protocol=pickle.HIGHEST_PROTOCOL)
        there = self.store.compare_set(key, "", mine)
        if there == mine:
            return None
        self.store.delete_key(key)
        other: CallRecord = pickle.loads(there)
        sent, received = (rec, other) if Op.of(rec.op).sends else (other, rec)
        return check_message(sent, received)
