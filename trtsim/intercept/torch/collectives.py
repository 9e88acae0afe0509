"""torch.distributed's collectives and point-to-point calls inside launched ranks, guarded.

Each call is recorded like a Distributed call (its op, payload signature, root as a group
index, reduce op, purpose and call site) on the communicator of its ``group``, then executed:
by the real torch function on the process backends (after the guard's check), or by trtsim's
own semantics on the inproc backend, written into the caller's tensors and lists as torch
would. ``src``/``dst`` are global ranks, ``group_src``/``group_dst`` group indices, as in
torch. ``async_op=True`` returns a handle with ``wait()``.
"""

from __future__ import annotations

import torch

from ...guard.rules import output_list_error
from ...calls.ops import Op
from ...calls.reduce_op import op_name
from .groups import state


class Done:
    """The handle of an async collective that already completed (inproc)."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def block_current_stream(self) -> None:
        pass

    def result(self):
        return []


class Each:
    """The handle of a coalesced async call: every single call's handle."""

    def __init__(self, handles: list):
        self.handles = handles

    def wait(self, timeout=None) -> bool:
        for h in self.handles:
            h.wait()
        return True

    def is_completed(self) -> bool:
        return all(h.is_completed() for h in self.handles)


def _root(comm, rank, group_rank, what: str) -> int:
    if rank is not None and group_rank is not None:
        raise ValueError(f"{what}: give a global rank or a group rank, not both")
    if group_rank is not None:
        if not 0 <= group_rank < len(comm.ranks):
            raise ValueError(f"{what}: group rank {group_rank} out of range for "
                             f"{len(comm.ranks)} ranks")
        return group_rank
    return comm.index(0 if rank is None else rank, f"{what}:")


def _fits(name: str, group, what: str, items, root: int | None = None) -> None:
    """The guard's list-length rule, on every backend before the call: ``items`` (a list
    argument) must have one entry per member (on the root only, when ``root`` is given)."""
    st = state(name)
    comm = st.comm(group, name)
    if st.api.rank not in comm.ranks or (root is not None and comm.ranks[root] != st.api.rank):
        return
    why = output_list_error(f"torch.distributed.{name}", what, len(items), len(comm.ranks))
    if why is not None:
        raise ValueError(why)


def make_collective_functions(real):
    """The collectives, bound to the real torch.distributed ``real``."""

    def call(name, group, op, payload, root=None, reduce_op=None, real_call=None):
        """(state, result): result is the inproc semantics' value, or the real call's."""
        st = state(name)
        comm = st.comm(group, name)
        if st.api.rank not in comm.ranks:
            return st, None, False            # torch: a non-member's call does nothing
        run = real_call if st.api.real else None
        value = st.api.collective(comm, op, payload, f"torch.{name}", root, reduce_op, run)
        return st, value, True

    def done(st, handle, async_op):
        if st.api.real:
            return handle
        return Done() if async_op else None

    def all_reduce(tensor, op=real.ReduceOp.SUM, group=None, async_op=False):
        st, value, member = call("all_reduce", group, Op.ALLREDUCE, tensor, reduce_op=op_name(op),
                                 real_call=lambda: real.all_reduce(tensor, op, group, async_op))
        if member and not st.api.real:
            tensor.copy_(value)
        return done(st, value, async_op) if member else None

    def all_gather(tensor_list, tensor, group=None, async_op=False):
        _fits("all_gather", group, "tensor_list", tensor_list)
        st, value, member = call("all_gather", group, Op.ALLGATHER, tensor, real_call=lambda:
                                 real.all_gather(tensor_list, tensor, group, async_op))
        if member and not st.api.real:
            for out, got in zip(tensor_list, value):
                out.copy_(got)
        return done(st, value, async_op) if member else None

    # torch 2.13 names these two twice (``*_single`` is the new spelling): one stand-in each
    def gather_into(name):
        def gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
            st, value, member = call(name, group, Op.ALLGATHER, input_tensor,
                                     real_call=lambda: getattr(real, name)(
                                         output_tensor, input_tensor, group, async_op))
            if member and not st.api.real:
                output_tensor.copy_(torch.cat([v.reshape(-1) for v in value])
                                    .view_as(output_tensor))
            return done(st, value, async_op) if member else None
        gather_into_tensor.__name__ = name
        return gather_into_tensor

    def scatter_from(name):
        def reduce_scatter_tensor(output, input, op=real.ReduceOp.SUM, group=None,
                                  async_op=False):
            st = state(name)
            n = len(st.comm(group, name).ranks)
            st, value, member = call(name, group, Op.REDUCE_SCATTER, list(input.chunk(n)),
                                     reduce_op=op_name(op), real_call=lambda: getattr(real, name)(
                                         output, input, op, group, async_op))
            if member and not st.api.real:
                output.copy_(value.view_as(output))
            return done(st, value, async_op) if member else None
        reduce_scatter_tensor.__name__ = name
        return reduce_scatter_tensor

    all_gather_into_tensor = gather_into("all_gather_into_tensor")
    reduce_scatter_tensor = scatter_from("reduce_scatter_tensor")
    singles = tuple(f(name) for f, name in ((gather_into, "all_gather_single"),
                                            (scatter_from, "reduce_scatter_single"))
                    if hasattr(real, name))

    def reduce_scatter(output, input_list, op=real.ReduceOp.SUM, group=None, async_op=False):
        _fits("reduce_scatter", group, "input_list", input_list)
        st, value, member = call("reduce_scatter", group, Op.REDUCE_SCATTER, list(input_list),
                                 reduce_op=op_name(op), real_call=lambda: real.reduce_scatter(
                                     output, input_list, op, group, async_op))
        if member and not st.api.real:
            output.copy_(value)
        return done(st, value, async_op) if member else None

    def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                          group=None, async_op=False):
        st = state("all_to_all_single")
        n = len(st.comm(group, "all_to_all_single").ranks)
        parts = list(input.split(input_split_sizes) if input_split_sizes else input.chunk(n))
        st, value, member = call("all_to_all_single", group, Op.ALLTOALL, parts,
                                 real_call=lambda: real.all_to_all_single(
                                     output, input, output_split_sizes, input_split_sizes,
                                     group, async_op))
        if member and not st.api.real:
            output.copy_(torch.cat(value).view_as(output))
        return done(st, value, async_op) if member else None

    def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
        _fits("all_to_all", group, "output_tensor_list", output_tensor_list)
        _fits("all_to_all", group, "input_tensor_list", input_tensor_list)
        st, value, member = call("all_to_all", group, Op.ALLTOALL, list(input_tensor_list),
                                 real_call=lambda: real.all_to_all(
                                     output_tensor_list, input_tensor_list, group, async_op))
        if member and not st.api.real:
            for out, got in zip(output_tensor_list, value):
                out.copy_(got)
        return done(st, value, async_op) if member else None

    def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
        st = state("broadcast")
        root = _root(st.comm(group, "broadcast"), src, group_src, "broadcast")
        st, value, member = call("broadcast", group, Op.BROADCAST, tensor, root=root,
                                 real_call=lambda: real.broadcast(tensor, src, group, async_op,
                                                                  group_src))
        if member and not st.api.real:
            tensor.copy_(value)
        return done(st, value, async_op) if member else None

    def reduce(tensor, dst=None, op=real.ReduceOp.SUM, group=None, async_op=False,
               group_dst=None):
        st = state("reduce")
        root = _root(st.comm(group, "reduce"), dst, group_dst, "reduce")
        st, value, member = call("reduce", group, Op.REDUCE, tensor, root, op_name(op),
                                 lambda: real.reduce(tensor, dst, op, group, async_op, group_dst))
        if member and not st.api.real and value is not None:
            tensor.copy_(value)
        return done(st, value, async_op) if member else None

    def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
        st = state("gather")
        root = _root(st.comm(group, "gather"), dst, group_dst, "gather")
        _fits("gather", group, "gather_list", gather_list or [], root)
        st, value, member = call("gather", group, Op.GATHER, tensor, root, real_call=lambda:
                                 real.gather(tensor, gather_list, dst, group, async_op,
                                             group_dst))
        if member and not st.api.real and value is not None:
            for out, got in zip(gather_list, value):
                out.copy_(got)
        return done(st, value, async_op) if member else None

    def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False,
                group_src=None):
        st = state("scatter")
        comm = st.comm(group, "scatter")
        root = _root(comm, src, group_src, "scatter")
        _fits("scatter", group, "scatter_list", scatter_list or [], root)
        mine = list(scatter_list) if comm.ranks.index(st.api.rank) == root else None
        st, value, member = call("scatter", group, Op.SCATTER, mine, root, real_call=lambda:
                                 real.scatter(tensor, scatter_list, src, group, async_op,
                                              group_src))
        if member and not st.api.real:
            tensor.copy_(value)
        return done(st, value, async_op) if member else None

    def barrier(group=None, async_op=False, device_ids=None, timeout=None):
        st, value, member = call("barrier", group, Op.BARRIER, None, real_call=lambda:
                                 real.barrier(group, async_op, device_ids))
        return done(st, value, async_op) if member else None

    def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
        call("monitored_barrier", group, Op.BARRIER, None, real_call=lambda:
             real.monitored_barrier(group, timeout, wait_all_ranks))

    def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
        st = state("broadcast_object_list")
        root = _root(st.comm(group, "broadcast_object_list"), src, group_src,
                     "broadcast_object_list")
        st, value, member = call("broadcast_object_list", group, Op.BROADCAST, list(object_list),
                                 root, real_call=lambda: real.broadcast_object_list(
                                     object_list, src, group, device, group_src))
        if member and not st.api.real:
            object_list[:] = value

    def all_gather_object(object_list, obj, group=None):
        _fits("all_gather_object", group, "object_list", object_list)
        st, value, member = call("all_gather_object", group, Op.ALLGATHER, obj, real_call=lambda:
                                 real.all_gather_object(object_list, obj, group))
        if member and not st.api.real:
            object_list[:] = value

    def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
        st = state("gather_object")
        root = _root(st.comm(group, "gather_object"), dst, group_dst, "gather_object")
        _fits("gather_object", group, "object_gather_list", object_gather_list or [], root)
        st, value, member = call("gather_object", group, Op.GATHER, obj, root, real_call=lambda:
                                 real.gather_object(obj, object_gather_list, dst, group,
                                                    group_dst))
        if member and not st.api.real and value is not None:
            object_gather_list[:] = value

    def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None,
                            src=None, group=None, group_src=None):
        st = state("scatter_object_list")
        comm = st.comm(group, "scatter_object_list")
        root = _root(comm, src, group_src, "scatter_object_list")
        mine = list(scatter_object_input_list) if comm.ranks.index(st.api.rank) == root else None
        st, value, member = call("scatter_object_list", group, Op.SCATTER, mine, root,
                                 real_call=lambda: real.scatter_object_list(
                                     scatter_object_output_list, scatter_object_input_list, src,
                                     group, group_src))
        if member and not st.api.real:
            scatter_object_output_list[0] = value

    # The coalesced forms run as their single calls, one after another, on every backend: the
    # guard sees the same calls everywhere, and the results are the same.
    def all_reduce_coalesced(tensors, op=real.ReduceOp.SUM, group=None, async_op=False):
        handles = [all_reduce(t, op, group, async_op) for t in tensors]
        return Each(handles) if async_op else None

    def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None,
                             async_op=False):
        """``output_tensor_lists[i][j]`` receives rank i's ``input_tensor_list[j]``."""
        _fits("all_gather_coalesced", group, "output_tensor_lists", output_tensor_lists)
        handles = [all_gather([outs[j] for outs in output_tensor_lists], t, group, async_op)
                   for j, t in enumerate(input_tensor_list)]
        return Each(handles) if async_op else None

    return {f.__name__: f for f in (
        *singles, all_reduce_coalesced, all_gather_coalesced,
        all_reduce, all_gather, all_gather_into_tensor, reduce_scatter_tensor, reduce_scatter,
        all_to_all_single, all_to_all, broadcast, reduce, gather, scatter, barrier,
        monitored_barrier, broadcast_object_list, all_gather_object, gather_object,
        scatter_object_list)}
