"""The stand-in's object collectives (``allgather``, ``bcast``, ``allreduce``, ...): a mixin of
``communicator.Intracomm``. Python objects travel pickled and legally differ between ranks in
value and kind, so the guard compares op, root and reduce op, not payloads."""

from __future__ import annotations

from .datatypes import real_op, reduce_name
from .core import CommCore
from ...calls.ops import Op


class ObjectCollectives(CommCore):
    """Object collectives over ``self._coll`` (see ``communicator.Intracomm``)."""

    def barrier(self) -> None:
        self._coll("barrier", Op.BARRIER, None)

    def Barrier(self) -> None:
        self._coll("Barrier", Op.BARRIER, None)

    def allgather(self, sendobj):
        return self._coll("allgather", Op.ALLGATHER, sendobj, args=(sendobj,))

    def bcast(self, obj=None, root: int = 0):
        return self._coll("bcast", Op.BROADCAST, obj, self._root(root, "bcast"), args=(obj, root))

    def gather(self, sendobj, root: int = 0):
        return self._coll("gather", Op.GATHER, sendobj, self._root(root, "gather"),
                          args=(sendobj, root))

    def scatter(self, sendobj=None, root: int = 0):
        return self._coll("scatter", Op.SCATTER, sendobj, self._root(root, "scatter"),
                          args=(sendobj, root))

    def allreduce(self, sendobj, op=None):
        return self._coll("allreduce", Op.ALLREDUCE, sendobj,
                          reduce_op=reduce_name(op, "allreduce"), args=(sendobj, real_op(op)))

    def reduce(self, sendobj, op=None, root: int = 0):
        return self._coll("reduce", Op.REDUCE, sendobj, self._root(root, "reduce"),
                          reduce_name(op, "reduce"), args=(sendobj, real_op(op), root))

    def alltoall(self, sendobj):
        return self._coll("alltoall", Op.ALLTOALL, sendobj, args=(sendobj,))
