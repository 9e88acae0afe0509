"""The stand-in's point-to-point calls and probes: a mixin of ``communicator.Intracomm``.

Lowercase calls move pickled objects; uppercase ones move a buffer's bytes (``Raw``), so a
``Recv`` gets exactly the bytes sent and its status their count. A receive must name its
source and tag (``ANY_SOURCE``/``ANY_TAG`` are not covered). MPI tags are moved above
trtsim's own p2p tags.

A probe is the message's receive posted early (a guarded non-blocking receive, seen by the
deadlock monitor as a receive), kept until the program receives from the same source and tag:
probing never consumes, the next receive takes the probed message, and order per (source,
tag) is MPI's. Under mpirun every call is the real mpi4py call after the guard; a blocking
probe is guarded as a receive, a non-blocking one is a local query that runs as is.
"""

from __future__ import annotations

import operator
import pickle
from typing import Any, Callable

from .real import RealCall, RealWork, envelope_of, real_runner
from .requests import ANY_SOURCE, ANY_TAG, PROC_NULL, Request, Status
from .run import run_recv, run_send
from . import buffers
from .core import CommCore
from ...calls.ops import Op

TAG_BASE = 1 << 20        # MPI tags are moved above trtsim's own p2p tags


class Raw:
    """A buffer message: the bytes of ``Send([buf, count, type])``."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


def _wire_bytes(value) -> bytes:
    return value.data if isinstance(value, Raw) else \
        pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _as_object(value):
    """What a lowercase receive gives: the object, or a buffer message's bytes unpickled (as
    mpi4py would try)."""
    return pickle.loads(value.data) if isinstance(value, Raw) else value


def _yield_turn(api) -> None:
    api.dist.pause(0.001)        # inproc: one turn for the others; else 1 ms


class PointToPoint(CommCore):
    """Sends, receives and probes over the rank's Distributed (see ``communicator.Intracomm``)."""

    def _peer(self, rank: int, what: str) -> int:
        if rank in (ANY_SOURCE, PROC_NULL):
            raise NotImplementedError(f"MPI {what} with source/dest {rank!r} (ANY_SOURCE, "
                                      "PROC_NULL) is not covered by trtsim's stand-in")
        return self._comm.ranks[self._root(rank, what)]

    @staticmethod
    def _tag(tag: int, what: str) -> int:
        if tag == ANY_TAG:
            raise NotImplementedError(f"MPI {what} with ANY_TAG is not covered by trtsim's "
                                      "stand-in")
        try:
            return TAG_BASE + operator.index(tag)          # np.int32(3) too, as in mpi4py
        except TypeError:
            raise TypeError(f"MPI {what}: tag {tag!r} is not an integer") from None

    def _envelope(self, source: int, tag: int):
        source, tag = operator.index(source), operator.index(tag)     # checked ints by now
        return lambda value: (source, tag, len(_wire_bytes(value)))

    # -- the two paths -------------------------------------------------------------------
    def _send(self, what: str, payload, dest: int, tag: int, blocking: bool, args: tuple):
        """A send. Standard sends (``send``, ``isend``, ...) are buffered: they complete at
        once, as MPI lets them and as Open MPI does for control-plane sizes; the message
        waits in the backend, visible to the deadlock monitor as a pending send, until taken.
        Synchronous ones (``ssend``, ``issend``) complete when the receiver took it."""
        state, _ = self._me(what)
        peer, t = self._peer(dest, what), self._tag(tag, what)
        api = state.api
        synchronous = what.lower().startswith(("ssend", "issend"))
        run: Callable[[], Any] | None
        if state.real is not None:
            run = real_runner(state.real, self._real_comm(state), what, args,
                              nonblocking=not blocking)
            handle = api.send(Op.SEND_OBJECT if blocking else Op.ISEND_OBJECT, payload, peer, t,
                              f"MPI.{what}", blocking, run)
            return None if blocking else Request(handle, yield_turn=lambda: _yield_turn(api))
        waits = blocking and synchronous
        run = (lambda: run_send(state, payload, peer, t, waits)) if api.real else None
        handle = api.send(Op.SEND_OBJECT if waits else Op.ISEND_OBJECT, payload, peer, t,
                          f"MPI.{what}", waits, run)
        if blocking:
            return None
        return Request(handle if synchronous else None, yield_turn=lambda: _yield_turn(api))

    def _recv(self, what: str, source: int, tag: int, blocking: bool, args: tuple = (),
              status: Status | None = None):
        """A blocking receive's value, or a non-blocking one's (handle, envelope of its
        value). A message probed before is taken first."""
        state, _ = self._me(what)
        peer, t = self._peer(source, what), self._tag(tag, what)
        api = state.api
        envelope = self._envelope(source, tag)
        run: Callable[[], Any] | None
        if state.real is not None:
            if blocking:
                run = real_runner(state.real, self._real_comm(state), what, args)
                return api.recv(Op.RECV_OBJECT, None, peer, t, f"MPI.{what}", True, run)
            call, work = RealCall(state.real, self._real_comm(state), what, args), []

            def start() -> RealWork:
                work.append(RealWork(state.real, call()))
                return work[0]
            handle = api.recv(Op.IRECV_OBJECT, None, peer, t, f"MPI.{what}", False, start)
            return handle, lambda value: envelope_of(state.real, work[0].status)
        handle = state.probed.pop((peer, t), None)
        if handle is None:
            run = (lambda: run_recv(state, peer, t, blocking)) if api.real else None
            op = Op.RECV_OBJECT if blocking else Op.IRECV_OBJECT
            got = api.recv(op, None, peer, t, f"MPI.{what}", blocking, run)
            if not blocking:
                return got, envelope
            value = got
        elif not blocking:
            return handle, envelope
        else:
            value = handle.wait()
        if status is not None:
            status.fill(*envelope(value))
        return value

    # -- objects -------------------------------------------------------------------------
    def send(self, obj, dest: int, tag: int = 0) -> None:
        self._send("send", obj, dest, tag, True, (obj, dest, tag))

    def ssend(self, obj, dest: int, tag: int = 0) -> None:
        self._send("ssend", obj, dest, tag, True, (obj, dest, tag))

    def isend(self, obj, dest: int, tag: int = 0) -> Request:
        return self._send("isend", obj, dest, tag, False, (obj, dest, tag))

    def issend(self, obj, dest: int, tag: int = 0) -> Request:
        return self._send("issend", obj, dest, tag, False, (obj, dest, tag))

    def recv(self, buf=None, source: int = ANY_SOURCE, tag: int = ANY_TAG,
             status: Status | None = None):
        value = self._recv("recv", source, tag, True, (buf, source, tag, status), status)
        return value if self._is_real() else _as_object(value)

    def irecv(self, buf=None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        state, _ = self._me("irecv")
        handle, envelope = self._recv("irecv", source, tag, False, (buf, source, tag))
        after = None if state.real is not None else _as_object
        return Request(handle, envelope, after, lambda: _yield_turn(state.api))

    def sendrecv(self, sendobj, dest: int, sendtag: int = 0, recvbuf=None,
                 source: int = ANY_SOURCE, recvtag: int = ANY_TAG, status=None):
        req = self.isend(sendobj, dest, sendtag)
        value = self.recv(recvbuf, source, recvtag, status)
        req.wait()
        return value

    # -- buffers -------------------------------------------------------------------------
    def _raw(self, buf, what: str) -> Raw | None:
        return None if self._is_real() else Raw(buffers.simple(buf, what, False).data())

    def Send(self, buf, dest: int, tag: int = 0) -> None:
        self._send("Send", self._raw(buf, "Send"), dest, tag, True, (buf, dest, tag))

    def Ssend(self, buf, dest: int, tag: int = 0) -> None:
        self._send("Ssend", self._raw(buf, "Ssend"), dest, tag, True, (buf, dest, tag))

    def Isend(self, buf, dest: int, tag: int = 0) -> Request:
        return self._send("Isend", self._raw(buf, "Isend"), dest, tag, False, (buf, dest, tag))

    def Issend(self, buf, dest: int, tag: int = 0) -> Request:
        return self._send("Issend", self._raw(buf, "Issend"), dest, tag, False,
                          (buf, dest, tag))

    def Recv(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG,
             status: Status | None = None) -> None:
        target = buffers.simple(buf, "Recv", True)
        value = self._recv("Recv", source, tag, True, (buf, source, tag, status), status)
        if not self._is_real():
            target.write(_wire_bytes(value), "Recv")

    def Irecv(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        state, _ = self._me("Irecv")
        target = buffers.simple(buf, "Irecv", True)
        handle, envelope = self._recv("Irecv", source, tag, False, (buf, source, tag))
        after = None if state.real is not None else \
            (lambda value: target.write(_wire_bytes(value), "Irecv"))
        return Request(handle, envelope, after, lambda: _yield_turn(state.api))

    # -- probes --------------------------------------------------------------------------
    def _probed(self, what: str, source: int, tag: int):
        """The early receive of (source, tag), posted now if none is pending."""
        state, _ = self._me(what)
        key = (self._peer(source, what), self._tag(tag, what))
        if key not in state.probed:
            state.probed[key] = self._recv(what, source, tag, False)[0]
        return state.probed[key]

    def Probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG,
              status: Status | None = None) -> bool:
        state, _ = self._me("Probe")
        if state.real is not None:
            run = real_runner(state.real, self._real_comm(state), "Probe", (source, tag, status))
            return state.api.recv(Op.RECV_OBJECT, None, self._peer(source, "Probe"),
                                  self._tag(tag, "Probe"), "MPI.Probe", True, run)
        value = self._probed("Probe", source, tag).wait()
        if status is not None:
            status.fill(*self._envelope(source, tag)(value))
        return True

    probe = Probe

    def Iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG,
               status: Status | None = None) -> bool:
        state, _ = self._me("Iprobe")
        if state.real is not None:
            self._peer(source, "Iprobe")          # refused as on every backend
            self._tag(tag, "Iprobe")
            return RealCall(state.real, self._real_comm(state), "Iprobe",
                            (source, tag, status))()
        handle = self._probed("Iprobe", source, tag)
        if not handle.is_completed():
            _yield_turn(state.api)
            return False
        if status is not None:
            status.fill(*self._envelope(source, tag)(handle.wait()))
        return True

    iprobe = Iprobe

    def _is_real(self) -> bool:
        return self._me("p2p")[0].real is not None

