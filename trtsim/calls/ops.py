"""The communication ops, one table: what each op is, for every backend and the guard.

A call record's ``op`` is one of these values. The backends and the guard ask the table what
they need (is it rooted, does it reduce, is it point to point, which way does it move data,
what must its payload look like) instead of spelling op names.

``Op`` is a ``str``: a member equals, hashes, prints, reprs and pickles as its value
(``Op.GATHER == "gather"``, ``hash(Op.GATHER) == hash("gather")``; a pickled member
unpickles as the plain string). So records, ledger slots, call logs, match hashes and
flight-recorder alignments hold exactly the strings they held before the table existed, old
logs still read, and a record made from a plain string behaves like one made from a member.
``Op("gather")`` looks a value up; ``Op.of(text)`` does too, with an error that lists the
known ops.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from .plain_enum import PlainStrEnum


class Payload(str, Enum):
    """What a member passes to an op, and what the guard and the semantics require of it."""

    NONE = "none"                # nothing travels (barrier); signature ``none``
    EACH = "each"                # every member's payload; tensors must agree in dtype and shape
    ROOT = "root"                # only the root's payload counts (broadcast); tensors agree
    ROOT_LIST = "root_list"      # the root gives one item per member (scatter)
    EACH_LIST = "each_list"      # every member gives one item per member (alltoall, ...)
    MESSAGE = "message"          # p2p: a tensor receive's buffer must fit the sent tensor


class OpInfo(NamedTuple):
    """One row of the op table."""

    rooted: bool
    reduces: bool
    p2p: bool
    payload: Payload
    sends: bool
    blocking: bool
    tensor: bool


class Op(PlainStrEnum):
    """Every op a call record can carry, with its properties (``rooted``, ``reduces``,
    ``p2p``, ``payload``, ``sends``, ``blocking``, ``tensor``)."""

    ALLGATHER = "allgather"
    BROADCAST = "broadcast"
    GATHER = "gather"
    ALLREDUCE = "allreduce"
    REDUCE = "reduce"
    SCATTER = "scatter"
    ALLTOALL = "alltoall"
    REDUCE_SCATTER = "reduce_scatter"
    BARRIER = "barrier"
    SPLIT = "split"                      # a communicator split: an all-gather of (color, key)
    SEND_OBJECT = "send_object"
    ISEND_OBJECT = "isend_object"
    RECV_OBJECT = "recv_object"
    IRECV_OBJECT = "irecv_object"
    SEND_TENSOR = "send_tensor"
    ISEND_TENSOR = "isend_tensor"
    RECV_TENSOR = "recv_tensor"
    IRECV_TENSOR = "irecv_tensor"

    @classmethod
    def of(cls, text: str) -> "Op":
        """The member for ``text``; ValueError naming the known ops."""
        found = cls._value2member_map_.get(text)     # the hot path: one dict look-up
        if not isinstance(found, Op):
            raise ValueError(f"unknown communication op {text!r}; known: "
                             f"{', '.join(o.value for o in cls)}")
        return found

    @property
    def info(self) -> "OpInfo":
        """This op's row of the table."""
        return OP_TABLE[self]

    # Properties written out (not made by a helper): in an Enum body an assigned attribute
    # reads to a type checker as one more member.
    @property
    def rooted(self) -> bool:
        """One member is the root (its index in the group travels in ``root``); it, or the
        senders, can finish before the others enter."""
        return OP_TABLE[self].rooted

    @property
    def reduces(self) -> bool:
        """The op combines payloads with a reduce op (``reduce_op``)."""
        return OP_TABLE[self].reduces

    @property
    def p2p(self) -> bool:
        """A point-to-point op (its group is the channel's two ranks)."""
        return OP_TABLE[self].p2p

    @property
    def payload(self) -> Payload:
        """What a member passes (``Payload``)."""
        return OP_TABLE[self].payload

    @property
    def sends(self) -> bool:
        """A p2p op that sends (False for receives and collectives)."""
        return OP_TABLE[self].sends

    @property
    def blocking(self) -> bool:
        """The call returns once done (False: it returns a handle)."""
        return OP_TABLE[self].blocking

    @property
    def tensor(self) -> bool:
        """A p2p op that moves a tensor into the receiver's own buffer."""
        return OP_TABLE[self].tensor


def _row(rooted=False, reduces=False, payload=Payload.EACH) -> OpInfo:
    return OpInfo(rooted, reduces, False, payload, False, True, False)


def _p2p(sends: bool, blocking: bool, tensor: bool) -> OpInfo:
    return OpInfo(False, False, True, Payload.MESSAGE, sends, blocking, tensor)


# The table: every op's row. Keyed by members, which hash and compare as their values, so a
# record's plain-string op finds its row with one look-up too (the hot paths do that).
OP_TABLE: dict[str, OpInfo] = {
    Op.ALLGATHER: _row(),
    Op.BROADCAST: _row(rooted=True, payload=Payload.ROOT),
    Op.GATHER: _row(rooted=True),
    Op.ALLREDUCE: _row(reduces=True),
    Op.REDUCE: _row(rooted=True, reduces=True),
    Op.SCATTER: _row(rooted=True, payload=Payload.ROOT_LIST),
    Op.ALLTOALL: _row(payload=Payload.EACH_LIST),
    Op.REDUCE_SCATTER: _row(reduces=True, payload=Payload.EACH_LIST),
    Op.BARRIER: _row(payload=Payload.NONE),
    Op.SPLIT: _row(),
    Op.SEND_OBJECT: _p2p(True, True, False),
    Op.ISEND_OBJECT: _p2p(True, False, False),
    Op.RECV_OBJECT: _p2p(False, True, False),
    Op.IRECV_OBJECT: _p2p(False, False, False),
    Op.SEND_TENSOR: _p2p(True, True, True),
    Op.ISEND_TENSOR: _p2p(True, False, True),
    Op.RECV_TENSOR: _p2p(False, True, True),
    Op.IRECV_TENSOR: _p2p(False, False, True),
}

COLLECTIVES = tuple(o for o in Op if not o.p2p)
RECEIVES = tuple(o for o in Op if o.p2p and not o.sends)
SENDS = tuple(o for o in Op if o.sends)


def p2p_op(sends: bool, tensor: bool, blocking: bool) -> Op:
    """The p2p op with those properties (``send_tensor`` for a blocking tensor send)."""
    return next(o for o in Op if o.p2p and (o.sends, o.tensor, o.blocking) ==
                (sends, tensor, blocking))
