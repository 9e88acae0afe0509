"""Distributed: TensorRT-LLM's communication methods for one rank, over a backend, guarded.

Every call builds a CallRecord (group, per-group sequence, op, payload signature, root, reduce
op, label, executor iteration, call site) and hands it with the payload to the rank's
transport, which checks it with the guard before the real collective runs. Group arguments
(roots, ranks) follow TRT-LLM's communicators: roots are indices within the group; p2p peers
are ranks of this instance, or a ``Peer`` for a rank of another instance (the KV data plane).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

from ..layout.places import RankPlace
from .records import CallRecord, find_callsite, signature_of
from .semantics import REDUCE_OPS


class Transport(Protocol):
    """What a backend provides to one rank's Distributed (and ``clock``, its RankClock)."""

    def collective(self, rec: CallRecord, payload: Any) -> Any: ...
    def send(self, rec: CallRecord, payload: Any, blocking: bool) -> Any: ...
    def recv(self, rec: CallRecord, buffer: Any, blocking: bool) -> Any: ...
    def set_iteration(self, iteration: int) -> None: ...
    def delay(self, seconds: float) -> None: ...


class Distributed:
    """One rank's communicator: TRT-LLM method names, every collective labelled and guarded."""

    def __init__(self, place: RankPlace, transport: Transport):
        self.place = place
        self.mapping = place.mapping
        self._transport = transport
        self._iteration = 0
        self._seq: Counter = Counter()
        self._groups = place.groups()
        self.census: Counter = Counter()   # (iteration, group kind, label or op) -> calls

    # -- identity ------------------------------------------------------------------------
    rank = property(lambda self: self.mapping.rank)
    world_size = property(lambda self: self.mapping.world_size)
    tp_size = property(lambda self: self.mapping.tp_size)
    pp_size = property(lambda self: self.mapping.pp_size)
    cp_size = property(lambda self: self.mapping.cp_size)
    tp_rank = property(lambda self: self.mapping.tp_rank)
    pp_rank = property(lambda self: self.mapping.pp_rank)
    cp_rank = property(lambda self: self.mapping.cp_rank)
    dp_rank = property(lambda self: self.mapping.dp_rank)
    dp_size = property(lambda self: self.mapping.dp_size)
    global_rank = property(lambda self: self.place.global_rank)
    instance = property(lambda self: self.place.instance)
    role = property(lambda self: self.place.role)

    @property
    def clock(self):
        """This rank's virtual clock (``clock.now`` seconds, ``clock.events`` its timeline)."""
        return self._transport.clock

    def advance(self, seconds: float, label: str = "compute") -> None:
        """Modelled work: move this rank's virtual clock forward by ``seconds``."""
        self._transport.clock.advance(seconds, label)

    @property
    def device(self):
        """The torch device this rank computes on (its GPU on the process backend with CUDA)."""
        import torch
        return getattr(self._transport, "device", None) or torch.device("cpu")

    @property
    def iteration(self) -> int:
        return self._iteration

    def set_iteration(self, iteration: int) -> None:
        """The executor's iteration counter; every later call record carries it."""
        self._iteration = int(iteration)
        self._transport.set_iteration(self._iteration)

    # -- gathers -------------------------------------------------------------------------
    def allgather(self, obj, label: str | None = None) -> list:
        return self._collective("world", "allgather", obj, label)

    def tp_allgather(self, obj, label: str | None = None) -> list:
        return self._collective("tp", "allgather", obj, label)

    def pp_allgather(self, obj, label: str | None = None) -> list:
        return self._collective("pp", "allgather", obj, label)

    def cp_allgather(self, obj, label: str | None = None) -> list:
        return self._collective("cp", "allgather", obj, label)

    def tp_cp_allgather(self, obj, label: str | None = None) -> list:
        return self._collective("tp_cp", "allgather", obj, label)

    def tp_allgather_int64(self, value: int, label: str | None = None) -> list[int]:
        """TRT-LLM's fast path for gathering one integer per TP rank."""
        return [int(v) for v in self._collective("tp", "allgather", int(value), label)]

    def tp_gather(self, obj, root: int = 0, label: str | None = None) -> list | None:
        """The list of every TP rank's object on the root (index in the group); None elsewhere."""
        return self._collective("tp", "gather", obj, label, root=root)

    # -- broadcasts ----------------------------------------------------------------------
    def broadcast(self, obj, root: int = 0, label: str | None = None):
        return self._collective("world", "broadcast", obj, label, root=root)

    def tp_broadcast(self, obj, root: int = 0, label: str | None = None):
        return self._collective("tp", "broadcast", obj, label, root=root)

    def pp_broadcast(self, obj, root: int = 0, label: str | None = None):
        return self._collective("pp", "broadcast", obj, label, root=root)

    def cp_broadcast(self, obj, root: int = 0, label: str | None = None):
        return self._collective("cp", "broadcast", obj, label, root=root)

    # -- reductions ----------------------------------------------------------------------
    def allreduce(self, x, op: str = "sum", label: str | None = None):
        return self._collective("world", "allreduce", x, label, reduce_op=op)

    def tp_allreduce(self, x, op: str = "sum", label: str | None = None):
        return self._collective("tp", "allreduce", x, label, reduce_op=op)

    def barrier(self, label: str | None = None) -> None:
        self._collective("world", "barrier", None, label)

    # -- point to point ------------------------------------------------------------------
    def send_object(self, obj, dest, tag: int = 0, label: str | None = None) -> None:
        self._p2p("send_object", obj, dest, tag, label, blocking=True)

    def isend_object(self, obj, dest, tag: int = 0, label: str | None = None):
        """Send without waiting; the returned handle's ``wait()`` blocks until received."""
        return self._p2p("isend_object", obj, dest, tag, label, blocking=False)

    def recv_object(self, src, tag: int = 0, label: str | None = None):
        return self._p2p("recv_object", None, src, tag, label)

    def irecv_object(self, src, tag: int = 0, label: str | None = None):
        """Post a receive without waiting; the handle's ``is_completed()`` polls and
        ``wait()`` returns the object."""
        return self._p2p("irecv_object", None, src, tag, label, blocking=False)

    def send_tensor(self, t, dest, tag: int = 0, label: str | None = None) -> None:
        self._p2p("send_tensor", t, dest, tag, label, blocking=True)

    def isend_tensor(self, t, dest, tag: int = 0, label: str | None = None):
        return self._p2p("isend_tensor", t, dest, tag, label, blocking=False)

    def recv_tensor(self, t, src, tag: int = 0, label: str | None = None):
        """Receive into ``t`` (same dtype and shape as the sent tensor) and return it."""
        return self._p2p("recv_tensor", t, src, tag, label)

    def irecv_tensor(self, t, src, tag: int = 0, label: str | None = None):
        """Post a receive into ``t`` without waiting; ``wait()`` returns ``t`` filled."""
        return self._p2p("irecv_tensor", t, src, tag, label, blocking=False)

    # -- plumbing ------------------------------------------------------------------------
    def group_ranks(self, kind: str) -> tuple[int, ...]:
        """Global ranks of this rank's group of ``kind`` (tp, pp, cp, tp_cp, world)."""
        return self._groups[kind]

    def _collective(self, kind: str, op: str, payload, label, root=None, reduce_op=None):
        group = self._groups[kind]
        if root is not None and not (isinstance(root, int) and 0 <= root < len(group)):
            raise ValueError(f"{kind}_{op}: root={root!r} is not an index of the {kind} "
                             f"group of {len(group)} ranks")
        if reduce_op is not None and reduce_op not in REDUCE_OPS:
            raise ValueError(f"{kind}_{op}: op={reduce_op!r}; expected one of "
                             f"{', '.join(REDUCE_OPS)}")
        if self.place.delay:
            self._transport.delay(self.place.delay)
        key = (kind, group)
        self._seq[key] += 1
        # Host objects legally differ between members, so only their kind is compared;
        # tensors (and allreduce's numbers) must agree as torch.distributed requires.
        if op == "barrier":
            signature = "none"
        elif op == "allreduce" or _is_tensor(payload):
            signature = signature_of(payload)
        else:
            signature = "object"
        rec = CallRecord(op, self._seq[key], label, self._iteration, find_callsite(), signature,
                         self.place.global_rank, self.mapping.rank, self.place.instance, kind,
                         group, root, reduce_op, clock=self._transport.clock.now)
        self.census[(self._iteration, kind, label or op)] += 1
        return self._transport.collective(rec, payload)

    def _p2p(self, op: str, payload, peer, tag: int, label, blocking: bool = True):
        other = self.place.peer_global(peer)
        me = self.place.global_rank
        if self.place.delay:
            self._transport.delay(self.place.delay)
        if other == me:
            raise ValueError(f"{op}: peer {peer!r} is this rank itself")
        sending = "send" in op
        channel = ("p2p", (me, other) if sending else (other, me), tag)
        self._seq[channel] += 1
        signature = signature_of(payload) if op.endswith("tensor") else "object"
        rec = CallRecord(op, self._seq[channel], label, self._iteration, find_callsite(),
                         signature, me, self.mapping.rank, self.place.instance, "p2p",
                         channel[1], peer=other, tag=tag, clock=self._transport.clock.now)
        self.census[(self._iteration, "p2p", label or op)] += 1
        if sending:
            return self._transport.send(rec, payload, blocking)
        return self._transport.recv(rec, payload, blocking)


def _is_tensor(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "device")
