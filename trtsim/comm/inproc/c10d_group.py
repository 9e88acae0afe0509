"""trtsim's inproc backend as torch sees it: a c10d backend ("trtsim") and a store.

Inside an inproc rank that intercepts torch.distributed, ``init_process_group`` and
``new_group`` build real ``ProcessGroup`` objects through torch's own code, with this
backend: ``isinstance(pg, ProcessGroup)``, ``pg.size()``, ``pg.rank()``, group names,
``get_process_group_ranks``, device meshes and ``_get_default_store()`` all behave as under
gloo. The calls of torch.distributed's API never reach the backend (the interception guards
and computes them first, ``intercept.torch_calls``); what does is native code that calls a
group's virtual methods directly (a functional all-reduce in C++, say). Those methods are
guarded here the same way, as ``c10d.<op>`` calls on the group's communicator; an operation
torch does not let a Python group override fails in torch with "No backend type associated
with device type" (it would need a C++ backend).

``InprocStore`` is the launch's key-value store (``_get_default_store()``): one dict for all
ranks; a ``get`` or ``wait`` of a key nobody has set yet gives the turn away until it is.
"""

from __future__ import annotations

import datetime
from typing import Any, Callable

import torch
import torch.distributed as tdist
from torch._C._distributed_c10d import _create_work_from_future  # type: ignore[attr-defined]

from ..guard.rules import output_list_error
from ..ops import Op
from ..reduce_op import op_name

BACKEND = "trtsim"


def _done(result: Any):
    future: torch.futures.Future = torch.futures.Future()
    future.set_result(result)
    return _create_work_from_future(future)


class InprocProcessGroup(tdist.ProcessGroup):
    """One rank's process group of an inproc launch; collectives go through the guard."""

    def __init__(self, rank: int, size: int):
        # torch's stubs know only (store, rank, size); the (rank, size) form exists too
        super().__init__(rank, size)  # type: ignore[call-arg]
        self._rank, self._size = rank, size
        self._name: str | None = None

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return self._rank

    def getBackendName(self) -> str:
        return BACKEND

    @property
    def group_name(self) -> str:  # type: ignore[override]  # c10d's GroupName is a str
        """The name c10d gave the group in its rank's world (kept: ``destroy_process_group``
        asks for it after forgetting the group)."""
        if self._name is None:
            import torch.distributed.distributed_c10d as c10d
            self._name = c10d._world.pg_names[self]
        return self._name

    def setGroupName(self, name: str) -> None:       # torch names the group once made
        self._name = name

    def __repr__(self) -> str:
        return f"<trtsim inproc ProcessGroup rank {self._rank} of {self._size}>"

    def _state(self, api: str):
        from ..intercept.torch_groups import state
        st = state(api)
        return st, st.comm(self, api)

    def _call(self, op: str, payload, api: str, root=None, reduce_op=None):
        st, comm = self._state(api)
        return st.api.collective(comm, op, payload, api, root, reduce_op)

    # -- the virtual methods torch lets a Python group override ----------------------------
    def allreduce(self, tensors, opts=None):
        reduce_op = op_name(opts.reduceOp) if opts is not None else "sum"
        for t in tensors:
            t.copy_(self._call(Op.ALLREDUCE, t, "c10d.allreduce", reduce_op=reduce_op))
        return _done(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def allgather(self, output_tensors, input_tensors, opts=None):
        for outs, t in zip(output_tensors, input_tensors):
            why = output_list_error("c10d.allgather", "an output list", len(outs), self._size)
            if why is not None:              # the guard's list rule: gloo's own check raises
                raise ValueError(why)
            for out, got in zip(outs, self._call(Op.ALLGATHER, t, "c10d.allgather")):
                out.copy_(got)
        return _done(output_tensors)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        for out, t in zip(outputs, inputs):
            got = self._call(Op.ALLGATHER, t, "c10d.allgather_into_tensor")
            out.copy_(torch.cat([g.reshape(-1) for g in got]).view_as(out))
        return _done(outputs)

    def broadcast(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        for t in tensors:
            t.copy_(self._call(Op.BROADCAST, t, "c10d.broadcast", root=root))
        return _done(tensors)

    def barrier(self, opts=None):
        self._call(Op.BARRIER, None, "c10d.barrier")
        return _done(None)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        reduce_op = op_name(opts.reduceOp) if opts is not None else "sum"
        for out, parts in zip(output_tensors, input_tensors):
            out.copy_(self._call(Op.REDUCE_SCATTER, list(parts), "c10d.reduce_scatter",
                                 reduce_op=reduce_op))
        return _done(output_tensors)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        reduce_op = op_name(opts.reduceOp) if opts is not None else "sum"
        for out, t in zip(outputs, inputs):
            got = self._call(Op.REDUCE_SCATTER, list(t.chunk(self._size)),
                             "c10d.reduce_scatter_tensor", reduce_op=reduce_op)
            out.copy_(got.view_as(out))
        return _done(outputs)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        parts = list(input.split(list(input_split_sizes)) if input_split_sizes
                     else input.chunk(self._size))
        output.copy_(torch.cat(self._call(Op.ALLTOALL, parts, "c10d.all_to_all_single"))
                     .view_as(output))
        return _done(output)

    def send(self, tensors, dst_rank: int, tag: int):
        """Queued like an ``isend``: the receiver takes it when it posts its receive."""
        st, comm = self._state("c10d.send")
        for t in tensors:
            st.api.send(Op.ISEND_TENSOR, t, comm.ranks[dst_rank], tag, "c10d.send", False)
        return _done(tensors)

    def recv(self, tensors, src_rank: int, tag: int):
        st, comm = self._state("c10d.recv")
        for t in tensors:
            st.api.recv(Op.RECV_TENSOR, t, comm.ranks[src_rank], tag, "c10d.recv", True)
        return _done(tensors)

    def shutdown(self) -> None:
        pass


def creator(store, rank: int, size: int, timeout) -> InprocProcessGroup:
    """What torch calls to make a group of the "trtsim" backend."""
    return InprocProcessGroup(rank, size)


def register() -> None:
    """Make "trtsim" a c10d backend name (once per process; torch keeps the registry)."""
    if BACKEND.upper() not in tdist.Backend._plugins:
        tdist.Backend.register_backend(BACKEND, creator, devices=["cpu", "cuda"])


class InprocStore(tdist.Store):
    """The launch's store, shared by its ranks; ``step_aside(rank)`` gives the turn away
    while a key is missing (``wait_turn``), so the rank that sets it can run."""

    def __init__(self, wait_turn: Callable[[], None]):
        super().__init__()
        self._data: dict[str, bytes] = {}
        self._wait_turn = wait_turn
        self._timeout = datetime.timedelta(seconds=300)

    @staticmethod
    def _bytes(value) -> bytes:
        if isinstance(value, str):
            return value.encode()
        return bytes(value)

    def set(self, key, value) -> None:
        self._data[key] = self._bytes(value)

    def get(self, key) -> bytes:
        self.wait([key])
        return self._data[key]

    def add(self, key, amount: int) -> int:
        value = int(self._data.get(key, b"0")) + int(amount)
        self._data[key] = str(value).encode()
        return value

    def compare_set(self, key, expected, desired) -> bytes:
        current = self._data.get(key)
        expected = self._bytes(expected)
        if (current is None and expected == b"") or current == expected:
            self._data[key] = self._bytes(desired)
        return self._data.get(key, expected)

    def check(self, keys) -> bool:
        return all(k in self._data for k in keys)

    def wait(self, keys, timeout=None) -> None:
        while not all(k in self._data for k in keys):
            self._wait_turn()

    def delete_key(self, key) -> bool:
        return self._data.pop(key, None) is not None

    def num_keys(self) -> int:
        return len(self._data)

    def multi_get(self, keys) -> list[bytes]:
        return [self.get(k) for k in keys]

    def multi_set(self, keys, values) -> None:
        for k, v in zip(keys, values):
            self.set(k, v)

    def append(self, key, value) -> None:
        self._data[key] = self._data.get(key, b"") + self._bytes(value)

    def set_timeout(self, timeout) -> None:
        self._timeout = timeout

    @property
    def timeout(self):
        return self._timeout


__all__ = ["BACKEND", "InprocProcessGroup", "InprocStore", "creator", "register"]
