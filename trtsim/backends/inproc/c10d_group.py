"""trtsim's inproc backend as torch sees it: a c10d backend ("trtsim") whose groups are real
``ProcessGroup`` objects.

Inside an inproc rank that intercepts torch.distributed, ``init_process_group`` and
``new_group`` build real ``ProcessGroup`` objects through torch's own code, with this
backend: ``isinstance(pg, ProcessGroup)``, ``pg.size()``, ``pg.rank()``, group names,
``get_process_group_ranks``, device meshes and ``_get_default_store()`` all behave as under
gloo. The calls of torch.distributed's API never reach the backend (the interception guards
and computes them first, ``intercept.torch.collectives``); what does is code that calls a group's
methods itself: torch's own ``distributed_c10d`` functions reached past the interception,
and native code (functional collectives in C++, ``torch.ops._c10d_functional``), which calls
the virtual methods torch lets a Python group override. Every collective and point-to-point
method ``distributed_c10d`` calls is here, guarded the same way, as a ``c10d.<method>`` call
on the group's communicator, with torch's option objects (roots are group ranks, as torch
passes them). The group declares the device types the backend was registered for, as gloo's
does; it has no C++ backend behind it, so ``pg._get_backend(device)`` fails as torch says.
Coalescing is refused as gloo refuses it, a receive from any source as the interception
refuses it.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as tdist
from torch._C._distributed_c10d import _create_work_from_future  # type: ignore[attr-defined]

from ...guard.rules import output_list_error
from ...calls.ops import Op
from ...calls.reduce_op import op_name, premultiplied
from ...calls.semantics import into

BACKEND = "trtsim"
DEVICES = ("cpu", "cuda")          # what the backend is registered for (gloo's pair)


def _done(result: Any):
    future: torch.futures.Future = torch.futures.Future()
    future.set_result(result)
    return _create_work_from_future(future)


def _reduction(opts) -> str:
    """The reduce op of torch's options (a ``ReduceOp`` object wrapping the enum member)."""
    if opts is None:
        return "sum"
    return op_name(opts.reduceOp)


def _mine(payload, opts):
    """What this member gives a reduction: its input, times its factor for PREMUL_SUM."""
    return payload if opts is None else premultiplied(payload, opts.reduceOp)


def _root(opts) -> int:
    return opts.rootRank if opts is not None else 0


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
    def _device_types(self) -> list[torch.device]:
        return [torch.device(d) for d in DEVICES]

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
        from ...intercept.torch.groups import state
        st = state(api)
        return st, st.comm(self, api)

    def _call(self, op: str, payload, api: str, root=None, reduce_op=None):
        st, comm = self._state(api)
        return st.api.collective(comm, op, payload, st.op_label or api, root, reduce_op)

    def _fits(self, api: str, what: str, items) -> None:
        why = output_list_error(api, what, len(items), self._size)
        if why is not None:                  # the guard's list rule: gloo's own check raises
            raise ValueError(why)

    # -- reductions ------------------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        reduce_op = _reduction(opts)
        for t in tensors:
            into(t, self._call(Op.ALLREDUCE, _mine(t, opts), "c10d.allreduce",
                               reduce_op=reduce_op))
        return _done(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def reduce(self, tensors, opts=None):
        reduce_op, root = _reduction(opts), _root(opts)
        for t in tensors:
            got = self._call(Op.REDUCE, _mine(t, opts), "c10d.reduce", root=root,
                             reduce_op=reduce_op)
            if got is not None:              # the root's result
                into(t, got)
        return _done(tensors)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        reduce_op = _reduction(opts)
        for out, parts in zip(output_tensors, input_tensors):
            self._fits("c10d.reduce_scatter", "an input list", parts)
            into(out, self._call(Op.REDUCE_SCATTER, _mine(list(parts), opts),
                                 "c10d.reduce_scatter", reduce_op=reduce_op))
        return _done(output_tensors)

    def reduce_scatter_single(self, output, input, opts=None):
        return self.reduce_scatter_single_coalesced([output], [input], opts)

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        reduce_op = _reduction(opts)
        for out, t in zip(outputs, inputs):
            got = self._call(Op.REDUCE_SCATTER, _mine(list(t.chunk(self._size)), opts),
                             "c10d.reduce_scatter_tensor", reduce_op=reduce_op)
            into(out, got.view_as(out))
        return _done(outputs)

    # -- gathers and scatters --------------------------------------------------------------
    def allgather(self, output_tensors, input_tensors, opts=None):
        for outs, t in zip(output_tensors, input_tensors):
            self._fits("c10d.allgather", "an output list", outs)
            for out, got in zip(outs, self._call(Op.ALLGATHER, t, "c10d.allgather")):
                into(out, got)
        return _done(output_tensors)

    def allgather_coalesced(self, output_lists, input_tensors, opts=None):
        """``output_lists[i][j]``: rank i's ``input_tensors[j]`` (torch's layout)."""
        self._fits("c10d.allgather_coalesced", "an output list", output_lists)
        for j, t in enumerate(input_tensors):
            for outs, got in zip(output_lists, self._call(Op.ALLGATHER, t, "c10d.allgather")):
                into(outs[j], got)
        return _done(output_lists)

    def all_gather_single(self, output, input, opts=None):
        return self.all_gather_single_coalesced([output], [input], opts)

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        for out, t in zip(outputs, inputs):
            got = self._call(Op.ALLGATHER, t, "c10d.allgather_into_tensor")
            into(out, torch.cat([g.reshape(-1) for g in got]).view_as(out))
        return _done(outputs)

    def gather(self, output_tensors, input_tensors, opts=None):
        root = _root(opts)
        for i, t in enumerate(input_tensors):
            got = self._call(Op.GATHER, t, "c10d.gather", root=root)
            if got is not None:              # the root: one output list per input
                self._fits("c10d.gather", "a gather list", output_tensors[i])
                for out, g in zip(output_tensors[i], got):
                    into(out, g)
        return _done(output_tensors)

    def scatter(self, output_tensors, input_tensors, opts=None):
        root = _root(opts)
        for i, out in enumerate(output_tensors):
            parts = list(input_tensors[i]) if self._rank == root else None
            if parts is not None:
                self._fits("c10d.scatter", "a scatter list", parts)
            into(out, self._call(Op.SCATTER, parts, "c10d.scatter", root=root))
        return _done(output_tensors)

    def broadcast(self, tensors, opts=None):
        root = _root(opts)
        for t in tensors:
            into(t, self._call(Op.BROADCAST, t, "c10d.broadcast", root=root))
        return _done(tensors)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        self._fits("c10d.alltoall", "an output list", output_tensors)
        self._fits("c10d.alltoall", "an input list", input_tensors)
        for out, got in zip(output_tensors, self._call(Op.ALLTOALL, list(input_tensors),
                                                       "c10d.alltoall")):
            into(out, got)
        return _done(output_tensors)

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes,
                          opts=None):
        parts = list(input.split(list(input_split_sizes)) if input_split_sizes
                     else input.chunk(self._size))
        into(output, torch.cat(self._call(Op.ALLTOALL, parts, "c10d.all_to_all_single"))
                     .view_as(output))
        return _done(output)

    def barrier(self, opts=None):
        self._call(Op.BARRIER, None, "c10d.barrier")
        return _done(None)

    # the names torch used before 2.13 (its C++ still falls back to some of them)
    _allgather_base = all_gather_single
    allgather_into_tensor_coalesced = all_gather_single_coalesced
    _reduce_scatter_base = reduce_scatter_single
    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced
    alltoall_base = all_to_all_single

    # -- point to point --------------------------------------------------------------------
    def send(self, tensors, dst_rank: int, tag: int):
        """Queued like an ``isend``: the receiver takes it when it posts its receive."""
        st, comm = self._state("c10d.send")
        for t in tensors:
            st.api.send(Op.ISEND_TENSOR, t, comm.ranks[dst_rank], tag,
                        st.op_label or "c10d.send", False)
        return _done(tensors)

    def recv(self, tensors, src_rank: int, tag: int):
        st, comm = self._state("c10d.recv")
        for t in tensors:
            st.api.recv(Op.RECV_TENSOR, t, comm.ranks[src_rank], tag,
                        st.op_label or "c10d.recv", True)
        return _done(tensors)

    def recv_anysource(self, tensors, tag: int):
        """Refused as the interception refuses ``recv(src=None)``: the mailbox matches a
        receive to its named source."""
        raise NotImplementedError("c10d.recv_anysource: a receive from any source is not "
                                  "covered by trtsim's inproc backend: name the source rank")

    # -- what gloo refuses, refused alike --------------------------------------------------
    def _start_coalescing(self, device) -> None:
        raise RuntimeError(f"Backend {BACKEND} does not implement startCoalescing")

    def _end_coalescing(self, device):
        raise RuntimeError(f"Backend {BACKEND} does not implement endCoalescing")

    def shutdown(self) -> None:
        pass


def creator(store, rank: int, size: int, timeout) -> InprocProcessGroup:
    """What torch calls to make a group of the "trtsim" backend."""
    return InprocProcessGroup(rank, size)


def register() -> None:
    """Make "trtsim" a c10d backend name (once per process; torch keeps the registry)."""
    if BACKEND.upper() not in tdist.Backend._plugins:
        tdist.Backend.register_backend(BACKEND, creator, devices=list(DEVICES))


__all__ = ["BACKEND", "DEVICES", "InprocProcessGroup", "creator", "register"]
