"""The MPI stand-in's communicator (``MPI.Intracomm``), with its requests and statuses.

Ranks are communicator ranks (``comm.Get_rank()``), as in MPI. Lowercase methods move pickled
objects; uppercase ones move numpy buffers (``buf``, ``[buf, datatype]`` or
``[buf, count, datatype]``; ``MPI.IN_PLACE`` for the reductions). ``Split``, ``Dup`` and
``Create_group`` are collective over their parent and guarded like any call; the new
communicator's id is derived from its parent's and the creation order, the same on every member.
A receive must name its source and tag (``ANY_SOURCE``/``ANY_TAG`` are not covered).
"""

from __future__ import annotations

import numpy as np
import torch

from ..reduce_op import op_name
from .comms import Comm, rank_api
from .mpi_run import MPIRank, run_collective, run_recv, run_send

ANY_SOURCE, ANY_TAG, PROC_NULL, UNDEFINED = -1, -1, -2, -32766
TAG_BASE = 1 << 20        # MPI tags are moved above trtsim's own p2p tags


class _InPlace:
    def __repr__(self) -> str:
        return "MPI.IN_PLACE"


IN_PLACE = _InPlace()


class Status:
    """Source and tag of a completed receive."""

    def __init__(self, source: int = ANY_SOURCE, tag: int = ANY_TAG):
        self.source, self.tag = source, tag

    def Get_source(self) -> int:
        return self.source

    def Get_tag(self) -> int:
        return self.tag


class Request:
    """A non-blocking send or receive: ``wait()`` returns the object (receives)."""

    def __init__(self, handle, status_of=None, after=None):
        self._handle, self._status_of, self._after = handle, status_of, after

    def wait(self, status: Status | None = None):
        value = self._handle.wait() if self._handle is not None else None
        if status is not None and self._status_of is not None:
            status.source, status.tag = self._status_of
        return self._after(value) if self._after else value

    Wait = wait

    def test(self, status: Status | None = None):
        done = self._handle is None or self._handle.is_completed()
        return (True, self.wait(status)) if done else (False, None)

    def Test(self, status: Status | None = None) -> bool:
        return self.test(status)[0]

    @classmethod
    def waitall(cls, requests, statuses=None):
        return [r.wait() for r in requests]

    Waitall = waitall

    def Free(self) -> None:
        pass


def _buffer(spec):
    """The numpy array of a buffer argument (``buf``, ``[buf, type]``, ``[buf, n, type]``)."""
    if isinstance(spec, (list, tuple)) and spec and not np.isscalar(spec[0]):
        spec = spec[0]
    arr = np.asarray(spec)
    if not isinstance(spec, np.ndarray) and not isinstance(spec, memoryview):
        raise TypeError(f"MPI buffer {spec!r} is not a numpy array or memoryview")
    return arr


class Intracomm:
    """A communicator of the stand-in (COMM_WORLD, and what Split and Dup return)."""

    def __init__(self, comm: Comm | None, name: str = ""):
        self._comm, self._name = comm, name or (comm.id if comm else "MPI_COMM_NULL")

    # -- identity ------------------------------------------------------------------------
    def _me(self, what: str) -> tuple[MPIRank, int]:
        if self._comm is None:
            raise ValueError(f"MPI {what} on MPI.COMM_NULL")
        api = rank_api(f"MPI {what}")
        state = api.state.get("mpi")
        if state is None:
            raise RuntimeError(f"MPI {what}: mpi4py is not intercepted in this launch "
                               "(launch(..., intercept=('mpi',)))")
        if api.rank not in self._comm.ranks:
            raise ValueError(f"MPI {what}: rank {api.rank} is not in {self._name}")
        return state, self._comm.ranks.index(api.rank)

    def Get_rank(self) -> int:
        return self._me("Get_rank")[1]

    def Get_size(self) -> int:
        return len(self._comm.ranks) if self._comm else 0

    rank = property(Get_rank)
    size = property(Get_size)

    def Get_name(self) -> str:
        return self._name

    def Set_name(self, name: str) -> None:
        self._name = name

    def Is_inter(self) -> bool:
        return False

    def Is_intra(self) -> bool:
        return True

    def __bool__(self) -> bool:
        return self._comm is not None

    def __eq__(self, other) -> bool:
        return isinstance(other, Intracomm) and other._comm == self._comm

    def __hash__(self) -> int:
        return hash(self._comm)

    def __repr__(self) -> str:
        return f"<trtsim MPI.Intracomm {self._name} ranks={list(self._comm.ranks) if self._comm else []}>"

    def _call(self, what: str, op: str, payload, root=None, reduce_op=None):
        state, _ = self._me(what)
        run = (lambda: run_collective(state, self._comm, op, payload, root, reduce_op)) \
            if state.api.real else None
        return state.api.collective(self._comm, op, payload, f"MPI.{what}", root, reduce_op, run)

    def _root(self, root, what: str) -> int:
        if not isinstance(root, int) or not 0 <= root < self.Get_size():
            raise ValueError(f"MPI {what}: root={root!r} out of range for {self.Get_size()} ranks")
        return root

    # -- object collectives --------------------------------------------------------------
    def barrier(self) -> None:
        self._call("barrier", "barrier", None)

    Barrier = barrier

    def allgather(self, sendobj):
        return self._call("allgather", "allgather", sendobj)

    def bcast(self, obj=None, root: int = 0):
        return self._call("bcast", "broadcast", obj, self._root(root, "bcast"))

    def gather(self, sendobj, root: int = 0):
        return self._call("gather", "gather", sendobj, self._root(root, "gather"))

    def scatter(self, sendobj, root: int = 0):
        return self._call("scatter", "scatter", sendobj, self._root(root, "scatter"))

    def allreduce(self, sendobj, op=None):
        return self._call("allreduce", "allreduce", sendobj, reduce_op=_op(op))

    def reduce(self, sendobj, op=None, root: int = 0):
        return self._call("reduce", "reduce", sendobj, self._root(root, "reduce"), _op(op))

    def alltoall(self, sendobj):
        return self._call("alltoall", "alltoall", sendobj)

    # -- buffer collectives (numpy, moved as tensors: shapes and dtypes must agree) -----
    def Bcast(self, buf, root: int = 0) -> None:
        arr = _buffer(buf)
        got = self._call("Bcast", "broadcast", torch.from_numpy(arr.copy()), self._root(root, "Bcast"))
        if got is not None:
            arr[...] = _numpy(got)

    def Allgather(self, sendbuf, recvbuf) -> None:
        got = self._call("Allgather", "allgather", torch.from_numpy(_buffer(sendbuf).copy()))
        _buffer(recvbuf).reshape(-1)[:] = np.concatenate([_numpy(g).reshape(-1) for g in got])

    def Allreduce(self, sendbuf, recvbuf, op=None) -> None:
        src = _buffer(recvbuf if sendbuf is IN_PLACE else sendbuf)
        got = self._call("Allreduce", "allreduce", torch.from_numpy(src.copy()), reduce_op=_op(op))
        _buffer(recvbuf)[...] = _numpy(got)

    def Reduce(self, sendbuf, recvbuf, op=None, root: int = 0) -> None:
        src = _buffer(recvbuf if sendbuf is IN_PLACE else sendbuf)
        got = self._call("Reduce", "reduce", torch.from_numpy(src.copy()),
                         self._root(root, "Reduce"), _op(op))
        if got is not None:
            _buffer(recvbuf)[...] = _numpy(got)

    def Gather(self, sendbuf, recvbuf, root: int = 0) -> None:
        got = self._call("Gather", "gather", torch.from_numpy(_buffer(sendbuf).copy()),
                         self._root(root, "Gather"))
        if got is not None:
            _buffer(recvbuf).reshape(-1)[:] = np.concatenate([_numpy(g).reshape(-1) for g in got])

    # -- point to point ------------------------------------------------------------------
    def _peer(self, rank: int, what: str) -> int:
        if rank in (ANY_SOURCE, PROC_NULL) or not isinstance(rank, int):
            raise NotImplementedError(f"MPI {what} with source/dest {rank!r} (ANY_SOURCE, "
                                      "PROC_NULL) is not covered by trtsim's stand-in")
        return self._comm.ranks[self._root(rank, what)]

    @staticmethod
    def _tag(tag: int, what: str) -> int:
        if tag == ANY_TAG:
            raise NotImplementedError(f"MPI {what} with ANY_TAG is not covered by trtsim's stand-in")
        return TAG_BASE + tag

    def _send(self, what, obj, dest, tag, blocking):
        state, _ = self._me(what)
        peer, t = self._peer(dest, what), self._tag(tag, what)
        run = (lambda: run_send(state, obj, peer, t, blocking)) if state.api.real else None
        op = "send_object" if blocking else "isend_object"
        return state.api.send(op, obj, peer, t, f"MPI.{what}", blocking, run)

    def _recv(self, what, source, tag, blocking):
        state, _ = self._me(what)
        peer, t = self._peer(source, what), self._tag(tag, what)
        run = (lambda: run_recv(state, peer, t, blocking)) if state.api.real else None
        op = "recv_object" if blocking else "irecv_object"
        return state.api.recv(op, None, peer, t, f"MPI.{what}", blocking, run)

    def send(self, obj, dest: int, tag: int = 0) -> None:
        self._send("send", obj, dest, tag, True)

    ssend = send

    def isend(self, obj, dest: int, tag: int = 0) -> Request:
        return Request(self._send("isend", obj, dest, tag, False))

    def recv(self, buf=None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None):
        value = self._recv("recv", source, tag, True)
        if status is not None:
            status.source, status.tag = source, tag
        return value

    def irecv(self, buf=None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        return Request(self._recv("irecv", source, tag, False), (source, tag))

    def sendrecv(self, sendobj, dest: int, sendtag: int = 0, recvbuf=None,
                 source: int = ANY_SOURCE, recvtag: int = ANY_TAG, status=None):
        req = self.isend(sendobj, dest, sendtag)
        value = self.recv(None, source, recvtag, status)
        req.wait()
        return value

    def Send(self, buf, dest: int, tag: int = 0) -> None:
        self.send(np.array(_buffer(buf), copy=True), dest, tag)

    def Recv(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> None:
        _buffer(buf)[...] = self.recv(None, source, tag, status)

    def Isend(self, buf, dest: int, tag: int = 0) -> Request:
        return self.isend(np.array(_buffer(buf), copy=True), dest, tag)

    def Irecv(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        target = _buffer(buf)
        req = self.irecv(None, source, tag)
        req._after = lambda value: target.__setitem__(Ellipsis, value)
        return req

    # -- communicators -------------------------------------------------------------------
    def _derive(self, what: str, op_payload, members_of) -> "Intracomm":
        """A collective creation: every member posts ``op_payload``, the gathered posts give
        this member's new communicator's (id suffix, ranks)."""
        state, me = self._me(what)
        n = state.next_creation(self._comm.id)
        posts = self._call(what, "split", op_payload)
        suffix, ranks = members_of(posts, me)
        if ranks is None:
            return COMM_NULL
        return Intracomm(Comm(f"{self._comm.id}/{what.lower()}{n}{suffix}", tuple(ranks)))

    def Split(self, color: int = 0, key: int = 0) -> "Intracomm":
        def members(posts, me):
            mine = posts[me][0]
            if mine == UNDEFINED:
                return "", None
            picked = sorted((k, i) for i, (c, k) in enumerate(posts) if c == mine)
            return f"c{mine}", [self._comm.ranks[i] for _, i in picked]
        return self._derive("Split", (color, key), members)

    def Split_type(self, split_type: int, key: int = 0, info=None) -> "Intracomm":
        """Every rank of a launch shares one host: one communicator, ordered by ``key``."""
        return self.Split(0 if split_type != UNDEFINED else UNDEFINED, key)

    def Dup(self, info=None) -> "Intracomm":
        return self._derive("Dup", None, lambda posts, me: ("", self._comm.ranks))

    Clone = Dup

    def Get_group(self) -> "Group":
        return Group(self._comm.ranks if self._comm else ())

    group = property(Get_group)

    def Create(self, group: "Group") -> "Intracomm":
        """Collective over this communicator; ranks outside ``group`` get COMM_NULL."""
        wanted = tuple(group.ranks)
        return self._derive("Create", wanted, lambda posts, me: (
            _digest(wanted), wanted if self._comm.ranks[me] in wanted else None))

    def Create_group(self, group: "Group", tag: int = 0) -> "Intracomm":
        """Collective over the members of ``group`` only."""
        state, _ = self._me("Create_group")
        wanted = tuple(group.ranks)
        if state.api.rank not in wanted:
            raise ValueError(f"MPI Create_group: rank {state.api.rank} is not in the group")
        comm = Comm(f"{self._comm.id}/group{_digest(wanted)}t{tag}", wanted)
        made = Intracomm(comm)
        made._call("Create_group", "barrier", None)
        return made

    def Free(self) -> None:
        pass

    def Abort(self, errorcode: int = 0):
        raise SystemExit(f"MPI.Abort({errorcode}) on {self._name}")


class Group:
    """A rank set (``comm.Get_group()``, ``group.Incl([...])``), in global ranks."""

    def __init__(self, ranks):
        self.ranks = tuple(ranks)

    def Incl(self, ranks) -> "Group":
        return Group(self.ranks[r] for r in ranks)

    def Excl(self, ranks) -> "Group":
        drop = set(ranks)
        return Group(r for i, r in enumerate(self.ranks) if i not in drop)

    def Get_size(self) -> int:
        return len(self.ranks)

    size = property(Get_size)

    def Free(self) -> None:
        pass


def _digest(ranks: tuple[int, ...]) -> str:
    return "-".join(map(str, ranks))


def _op(op) -> str:
    return "sum" if op is None else op_name(op)


def _numpy(value):
    return value.numpy() if isinstance(value, torch.Tensor) else np.asarray(value)


COMM_NULL = Intracomm(None)
