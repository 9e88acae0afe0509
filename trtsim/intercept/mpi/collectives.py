"""The stand-in's buffer collectives (``Bcast``, ``Gatherv``, ``Reduce_scatter``, ...): a mixin
of ``communicator.Intracomm``.

Each call parses its buffer specs (``buffers``), hands the guard a payload and writes
what comes back into the receive buffer, byte for byte. Fixed-size collectives move typed
tensors, so the guard compares element type and count (a root broadcasting 3 int64 to a rank
expecting 2 is a mismatch, as MPI's type-signature rule says); the v-collectives move each
rank's bytes as a host object, since their counts legally differ by rank. Under mpirun the
payload is a shape on the meta device (what the guard compares) and the real call moves the
buffers itself. Unsigned 16/32/64-bit elements travel as the signed type of their width (torch
cannot reduce them): sums and bit ops come out bit-exact; MAX/MIN on them are refused.
"""

from __future__ import annotations

import numpy as np
import torch

from . import buffers
from .datatypes import IN_PLACE, real_op, reduce_name
from .core import CommCore
from ...calls.ops import Op

_ORDERED = ("max", "min")


def _view_dtype(dtype: np.dtype) -> np.dtype:
    if dtype.kind == "u" and dtype.itemsize > 1:
        return np.dtype(f"i{dtype.itemsize}")
    return np.dtype(np.uint8) if dtype == np.dtype(np.longdouble) else dtype


def _tensor(span: buffers.Span, meta: bool, rows: int = 0) -> torch.Tensor:
    """The span's elements as the guard's payload; ``rows``: as that many equal rows."""
    dtype = _view_dtype(span.datatype.dtype)
    n = span.nbytes // dtype.itemsize
    shape = (rows, n // rows) if rows else (n,)
    if meta:
        like = torch.from_numpy(np.empty(0, dtype=dtype))
        return torch.empty(shape, dtype=like.dtype, device="meta")
    return torch.from_numpy(np.frombuffer(span.data(), dtype=dtype).copy().reshape(shape))


def _blank(datatype, count: int, rows: int, meta: bool) -> torch.Tensor:
    """Zeros in the payload's shape, for a member that only receives (Scatter's non-roots)."""
    dtype = _view_dtype(datatype.dtype)
    like = torch.from_numpy(np.empty(0, dtype=dtype))
    n = count * datatype.size // dtype.itemsize
    return torch.zeros((rows, n), dtype=like.dtype, device="meta" if meta else "cpu")


def _bytes(value) -> bytes:
    return value.numpy().tobytes() if isinstance(value, torch.Tensor) else bytes(value)


def _check_reducible(span: buffers.Span, op: str, what: str) -> None:
    dtype = span.datatype.dtype
    if dtype == np.dtype(np.longdouble) or (op in _ORDERED and dtype.kind == "u"
                                            and dtype.itemsize > 1):
        raise NotImplementedError(f"MPI {what} with {op.upper()} on {span.datatype.name} is "
                                  "not covered by trtsim's MPI stand-in")


class BufferCollectives(CommCore):
    """Buffer collectives over ``self._coll`` (see ``communicator.Intracomm``)."""

    def _setup(self, what: str):
        """(meta payloads?, my rank, size) for one call."""
        state, me = self._me(what)
        return state.real is not None, me, self.Get_size()

    def _in_place(self, sendbuf, what: str) -> None:
        if sendbuf is IN_PLACE:
            raise NotImplementedError(f"MPI {what} with MPI.IN_PLACE is not covered by "
                                      "trtsim's MPI stand-in")

    # -- one root, one buffer ------------------------------------------------------------
    def Bcast(self, buf, root: int = 0) -> None:
        meta, me, _ = self._setup("Bcast")
        root = self._root(root, "Bcast")
        span = buffers.simple(buf, "Bcast", writable=me != root)

        def finish(got):
            if me != root:
                span.write(_bytes(got), "Bcast")
        return self._coll("Bcast", Op.BROADCAST, _tensor(span, meta), root, args=(buf, root),
                          finish=finish)

    def Reduce(self, sendbuf, recvbuf, op=None, root: int = 0) -> None:
        meta, me, _ = self._setup("Reduce")
        root, name = self._root(root, "Reduce"), reduce_name(op, "Reduce")
        recv = buffers.simple(recvbuf, "Reduce", True) if me == root else None
        if sendbuf is IN_PLACE and recv is None:
            raise ValueError("MPI Reduce: MPI.IN_PLACE is the root's send buffer only")
        send = recv if sendbuf is IN_PLACE else buffers.simple(sendbuf, "Reduce", False)
        assert send is not None              # narrowed by the check above
        _check_reducible(send, name, "Reduce")

        def finish(got):
            if recv is not None:
                recv.write(_bytes(got), "Reduce")
        return self._coll("Reduce", Op.REDUCE, _tensor(send, meta), root, name,
                          args=(sendbuf, recvbuf, real_op(op), root), finish=finish)

    def Allreduce(self, sendbuf, recvbuf, op=None) -> None:
        meta, _, _ = self._setup("Allreduce")
        name = reduce_name(op, "Allreduce")
        recv = buffers.simple(recvbuf, "Allreduce", True)
        send = recv if sendbuf is IN_PLACE else buffers.simple(sendbuf, "Allreduce", False)
        _check_reducible(send, name, "Allreduce")
        return self._coll("Allreduce", Op.ALLREDUCE, _tensor(send, meta), reduce_op=name,
                          args=(sendbuf, recvbuf, real_op(op)),
                          finish=lambda got: recv.write(_bytes(got), "Allreduce"))

    # -- blocks: every rank the same count ----------------------------------------------
    def Gather(self, sendbuf, recvbuf, root: int = 0) -> None:
        meta, me, n = self._setup("Gather")
        root = self._root(root, "Gather")
        recv = buffers.simple(recvbuf, "Gather", True, blocks=n) if me == root else None
        send = recv.block(me) if sendbuf is IN_PLACE and recv is not None else \
            buffers.simple(sendbuf, "Gather", False)

        def finish(got):
            for i, part in enumerate(got or ()):
                recv.block(i).write(_bytes(part), "Gather")
        return self._coll("Gather", Op.GATHER, _tensor(send, meta), root,
                          args=(sendbuf, recvbuf, root), finish=finish)

    def Allgather(self, sendbuf, recvbuf) -> None:
        meta, me, n = self._setup("Allgather")
        recv = buffers.simple(recvbuf, "Allgather", True, blocks=n)
        send = recv.block(me) if sendbuf is IN_PLACE else buffers.simple(sendbuf, "Allgather",
                                                                          False)

        def finish(got):
            for i, part in enumerate(got):
                recv.block(i).write(_bytes(part), "Allgather")
        return self._coll("Allgather", Op.ALLGATHER, _tensor(send, meta),
                          args=(sendbuf, recvbuf), finish=finish)

    def Scatter(self, sendbuf, recvbuf, root: int = 0) -> None:
        meta, me, n = self._setup("Scatter")
        root = self._root(root, "Scatter")
        keep = me == root and recvbuf is IN_PLACE          # the root's block stays where it is
        recv = None if keep else buffers.simple(recvbuf, "Scatter", True)
        if me == root:
            send = buffers.simple(sendbuf, "Scatter", False, blocks=n)
            payload = _tensor(buffers.Span(send.view, send.datatype, send.count * n), meta, n)
        else:   # zeros in the root's shape: members agree on type and count
            assert recv is not None          # keep is the root's only
            payload = _blank(recv.datatype, recv.count, n, meta)

        def finish(got):
            if recv is not None:             # None: the root keeps its block in place
                recv.write(_bytes(got), "Scatter")
        return self._coll("Scatter", Op.SCATTER, payload, root, args=(sendbuf, recvbuf, root),
                          finish=finish)

    def Alltoall(self, sendbuf, recvbuf) -> None:
        self._in_place(sendbuf, "Alltoall")
        meta, _, n = self._setup("Alltoall")
        send = buffers.simple(sendbuf, "Alltoall", False, blocks=n)
        recv = buffers.simple(recvbuf, "Alltoall", True, blocks=n)
        whole = buffers.Span(send.view, send.datatype, send.count * n, send.displ)

        def finish(got):
            for i, part in enumerate(got):
                recv.block(i).write(_bytes(part), "Alltoall")
        return self._coll("Alltoall", Op.ALLTOALL, _tensor(whole, meta, n),
                          args=(sendbuf, recvbuf), finish=finish)

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=None) -> None:
        self._in_place(sendbuf, "Reduce_scatter_block")
        meta, _, n = self._setup("Reduce_scatter_block")
        name = reduce_name(op, "Reduce_scatter_block")
        recv = buffers.simple(recvbuf, "Reduce_scatter_block", True)
        send = buffers.simple(sendbuf, "Reduce_scatter_block", False)
        _check_reducible(send, name, "Reduce_scatter_block")
        return self._coll("Reduce_scatter_block", Op.REDUCE_SCATTER, _tensor(send, meta, n),
                          reduce_op=name, args=(sendbuf, recvbuf, real_op(op)),
                          finish=lambda got: recv.write(_bytes(got), "Reduce_scatter_block"))

    # -- vectors: counts and displacements per rank (host objects: counts differ) --------
    def Gatherv(self, sendbuf, recvbuf, root: int = 0) -> None:
        meta, me, n = self._setup("Gatherv")
        root = self._root(root, "Gatherv")
        recv = buffers.vector(recvbuf, "Gatherv", True, n) if me == root else None
        send = recv.part(me) if sendbuf is IN_PLACE and recv is not None else \
            buffers.simple(sendbuf, "Gatherv", False)

        def finish(got):
            for i, part in enumerate(got or ()):
                recv.part(i).write(part, "Gatherv")
        return self._coll("Gatherv", Op.GATHER, None if meta else send.data(), root,
                          args=(sendbuf, recvbuf, root), finish=finish)

    def Allgatherv(self, sendbuf, recvbuf) -> None:
        meta, me, n = self._setup("Allgatherv")
        recv = buffers.vector(recvbuf, "Allgatherv", True, n)
        send = recv.part(me) if sendbuf is IN_PLACE else buffers.simple(sendbuf, "Allgatherv",
                                                                         False)

        def finish(got):
            for i, part in enumerate(got):
                recv.part(i).write(part, "Allgatherv")
        return self._coll("Allgatherv", Op.ALLGATHER, None if meta else send.data(),
                          args=(sendbuf, recvbuf), finish=finish)

    def Scatterv(self, sendbuf, recvbuf, root: int = 0) -> None:
        meta, me, n = self._setup("Scatterv")
        root = self._root(root, "Scatterv")
        keep = me == root and recvbuf is IN_PLACE
        recv = None if keep else buffers.simple(recvbuf, "Scatterv", True)
        payload = None
        if me == root and not meta:
            send = buffers.vector(sendbuf, "Scatterv", False, n)
            payload = [send.part(i).data() for i in range(n)]

        def finish(got):
            if recv is not None:             # None: the root keeps its block in place
                recv.write(got, "Scatterv")
        return self._coll("Scatterv", Op.SCATTER, payload, root, args=(sendbuf, recvbuf, root),
                          finish=finish)

    def Alltoallv(self, sendbuf, recvbuf) -> None:
        self._in_place(sendbuf, "Alltoallv")
        meta, _, n = self._setup("Alltoallv")
        send = buffers.vector(sendbuf, "Alltoallv", False, n)
        recv = buffers.vector(recvbuf, "Alltoallv", True, n)

        def finish(got):
            for i, part in enumerate(got):
                recv.part(i).write(part, "Alltoallv")
        payload = None if meta else [send.part(i).data() for i in range(n)]
        return self._coll("Alltoallv", Op.ALLTOALL, payload, args=(sendbuf, recvbuf),
                          finish=finish)

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=None) -> None:
        """``recvcounts=None``: every rank receives as many elements as this rank's buffer
        holds (mpi4py gathers the ranks' counts; they are equal in any sane use)."""
        self._in_place(sendbuf, "Reduce_scatter")
        meta, _, n = self._setup("Reduce_scatter")
        name = reduce_name(op, "Reduce_scatter")
        recv = buffers.simple(recvbuf, "Reduce_scatter", True)
        counts = (recv.count,) * n if recvcounts is None else tuple(int(c) for c in recvcounts)
        whole = buffers.simple(sendbuf, "Reduce_scatter", False)
        send = buffers.vector([whole.view, list(counts), whole.datatype], "Reduce_scatter",
                              False, n)
        _check_reducible(recv, name, "Reduce_scatter")
        payload = None if meta else [_tensor(send.part(i), False) for i in range(n)]
        return self._coll("Reduce_scatter", Op.REDUCE_SCATTER, payload, reduce_op=name,
                          args=(sendbuf, recvbuf, recvcounts, real_op(op)),
                          finish=lambda got: recv.write(_bytes(got), "Reduce_scatter"))
