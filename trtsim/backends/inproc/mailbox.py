"""Point-to-point messages of the inproc backend: one matcher for sends and receives.

A channel is (source, destination, tag). A send and a receive pair when they meet on a
channel, in posting order on each side: whichever comes first waits in its side's queue,
and the other side takes it. A blocking send returns once its message is taken (rendezvous
semantics, like an unbuffered communicator); non-blocking calls return handles.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

import torch

from ...timeline.clock import ClockModel, RankClock, finish_receive
from ...guard.rules import check_message
from ...calls.ops import Op
from ...calls.records import CallRecord
from ...calls.semantics import freeze, into, nbytes, thaw
from .kernel import Kernel


class Message:
    __slots__ = ("rec", "blob", "taken", "sender_waiting")

    def __init__(self, rec: CallRecord, blob: Any):
        self.rec, self.blob, self.taken, self.sender_waiting = rec, blob, False, False


class Receive:
    """A posted receive: matched with the next message of its channel, in posting order."""

    __slots__ = ("rank", "rec", "buffer", "done", "value", "waiting", "send_clock", "nbytes",
                 "is_tensor", "clocked")

    def __init__(self, rank: int, rec: CallRecord, buffer: Any):
        self.rank, self.rec, self.buffer = rank, rec, buffer
        self.done, self.value, self.waiting = False, None, False
        self.send_clock, self.nbytes, self.is_tensor, self.clocked = 0.0, 0, False, False


class Mailbox:
    """Queued sends and receives per channel, and the pairing of the two."""

    def __init__(self, kernel: Kernel, clocks: list[RankClock], clock_model: ClockModel,
                 on_post: Callable[[CallRecord], None]):
        self.kernel, self.clocks, self.clock_model = kernel, clocks, clock_model
        self.on_post = on_post
        self.sends: dict[tuple, deque[Message]] = {}
        self.recvs: dict[tuple, deque[Receive]] = {}

    @staticmethod
    def _match(channel: tuple, item, mine: dict, theirs: dict):
        """The other side's oldest item on ``channel``, or None after queueing ``item``."""
        queue = theirs.get(channel)
        if queue:
            other = queue.popleft()
            if not queue:
                del theirs[channel]
            return other
        mine.setdefault(channel, deque()).append(item)
        return None

    def pending_sends(self) -> dict[int, list[tuple[int, int]]]:
        """Per sender: (destination, tag) of every message not yet taken."""
        out: dict[int, list] = {}
        for (src, dst, tag), queue in self.sends.items():
            out.setdefault(src, []).extend((dst, tag) for _ in queue)
        return out

    # -- sends ---------------------------------------------------------------------------
    def send(self, r: int, rec: CallRecord, payload: Any, blocking: bool) -> Any:
        kernel = self.kernel
        msg = Message(rec, freeze(payload))
        self.on_post(rec)
        recv = self._match((r, rec.peer, rec.tag), msg, self.sends, self.recvs)
        if recv is not None:
            self._deliver(msg, recv)
        if kernel.error is not None:
            return kernel.block(r, rec)
        if not blocking:
            kernel.wake(r, SendHandle(self, r, msg))
            return kernel.yield_to_hub()
        if msg.taken:
            kernel.wake(r, None)
            return kernel.yield_to_hub()
        msg.sender_waiting = True
        return kernel.block(r, rec)

    def wait_send(self, r: int, msg: Message) -> None:
        self.kernel.check()
        msg.sender_waiting = True
        self.kernel.block(r, msg.rec)

    # -- receives ------------------------------------------------------------------------
    def recv(self, r: int, rec: CallRecord, buffer: Any, blocking: bool) -> Any:
        kernel = self.kernel
        recv = Receive(r, rec, buffer)
        self.on_post(rec)
        msg = self._match((rec.peer, r, rec.tag), recv, self.recvs, self.sends)
        if msg is not None:
            self._deliver(msg, recv)
        if kernel.error is not None:
            return kernel.block(r, rec)
        if not blocking:
            kernel.wake(r, RecvHandle(self, recv))
            return kernel.yield_to_hub()
        if recv.done:
            kernel.wake(r, recv.value)
            kernel.yield_to_hub()
        else:
            self.wait_recv(recv)
        self.settle_clock(recv)
        return recv.value

    def wait_recv(self, recv: Receive) -> Any:
        self.kernel.check()
        recv.waiting = True
        return self.kernel.block(recv.rank, recv.rec)

    def settle_clock(self, recv: Receive) -> None:
        """The receiver's clock after the message: the later of its own arrival and the send
        plus the transfer (once per receive)."""
        if recv.clocked:
            return
        recv.clocked = True
        finish_receive(self.clocks[recv.rank], recv.send_clock,
                       self.clock_model.transfer_time(recv.nbytes, recv.is_tensor),
                       recv.rec.short(), recv.rec.route[0])

    def _deliver(self, msg: Message, recv: Receive) -> None:
        """Hand ``msg`` to a posted receive and release whoever waits on either side."""
        msg.taken = True
        rec = recv.rec
        err = check_message(msg.rec, rec)
        if err is not None:
            self.kernel.report(err)
            return
        value = thaw(msg.blob)
        recv.send_clock = msg.rec.clock
        recv.is_tensor = isinstance(value, torch.Tensor)
        recv.nbytes = nbytes(value)
        if recv.buffer is not None and Op(rec.op).tensor:
            into(recv.buffer, value)      # as gloo writes it: outside autograd
            value = recv.buffer
        recv.done, recv.value = True, value
        if recv.waiting:
            self.kernel.wake(recv.rank, value)
        if msg.sender_waiting:
            self.kernel.wake(msg.rec.rank, None)


class SendHandle:
    """The handle of a non-blocking send; ``wait()`` blocks until the receiver took it."""

    def __init__(self, mailbox: Mailbox, rank: int, msg: Message):
        self._mailbox, self._rank, self._msg = mailbox, rank, msg

    def is_completed(self) -> bool:
        return self._msg.taken

    def wait(self) -> None:
        if not self._msg.taken:
            self._mailbox.wait_send(self._rank, self._msg)


class RecvHandle:
    """The handle of a non-blocking receive; ``wait()`` blocks until the message arrived and
    returns it (the filled buffer for tensors)."""

    def __init__(self, mailbox: Mailbox, recv: Receive):
        self._mailbox, self._recv = mailbox, recv

    def is_completed(self) -> bool:
        return self._recv.done

    def wait(self) -> Any:
        value = self._mailbox.wait_recv(self._recv) if not self._recv.done else self._recv.value
        self._mailbox.settle_clock(self._recv)
        return value
