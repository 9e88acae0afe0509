"""torch.distributed's collectives inside launched ranks, guarded: one stand-in per function,
with torch's signature, each naming its op, what travels and how the result lands
(``guarded``: the one path they share). ``src``/``dst`` are global ranks,
``group_src``/``group_dst`` group indices, as in torch. ``async_op=True`` returns a handle
with ``wait()``.
"""

from __future__ import annotations

from ...calls.ops import Op
from . import guarded as g
from .guarded import Each, guarded


def _reductions(real):
    sum_ = real.ReduceOp.SUM

    def all_reduce(tensor, op=sum_, group=None, async_op=False):
        return guarded("all_reduce", group, Op.ALLREDUCE, tensor,
                       lambda: real.all_reduce(tensor, op, group, async_op), g.tensor, tensor,
                       async_op=async_op, reduce=op)

    def reduce(tensor, dst=None, op=sum_, group=None, async_op=False, group_dst=None):
        return guarded("reduce", group, Op.REDUCE, tensor,
                       lambda: real.reduce(tensor, dst, op, group, async_op, group_dst),
                       g.tensor_on_root, tensor, async_op=async_op, root=(dst, group_dst),
                       reduce=op)

    def reduce_scatter(output, input_list, op=sum_, group=None, async_op=False):
        return guarded("reduce_scatter", group, Op.REDUCE_SCATTER, list(input_list),
                       lambda: real.reduce_scatter(output, input_list, op, group, async_op),
                       g.tensor, output, async_op=async_op, reduce=op,
                       lists=(("input_list", input_list),))

    # torch 2.13 names this twice (``reduce_scatter_single`` is the new spelling)
    def scatter_from(name):
        def reduce_scatter_tensor(output, input, op=sum_, group=None, async_op=False):
            return guarded(name, group, Op.REDUCE_SCATTER, input,
                           lambda: getattr(real, name)(output, input, op, group, async_op),
                           g.shaped, output, async_op=async_op, reduce=op,
                           split=g.chunks)
        reduce_scatter_tensor.__name__ = name
        return reduce_scatter_tensor

    def all_reduce_coalesced(tensors, op=sum_, group=None, async_op=False):
        # run as its single calls on every backend: the guard sees the same calls everywhere
        handles = [all_reduce(t, op, group, async_op) for t in tensors]
        return Each(handles) if async_op else None

    return (all_reduce, reduce, reduce_scatter, all_reduce_coalesced,
            *(scatter_from(n) for n in ("reduce_scatter_tensor", "reduce_scatter_single")
              if hasattr(real, n)))


def _gathers(real):
    def all_gather(tensor_list, tensor, group=None, async_op=False):
        return guarded("all_gather", group, Op.ALLGATHER, tensor,
                       lambda: real.all_gather(tensor_list, tensor, group, async_op),
                       g.each, tensor_list, async_op=async_op,
                       lists=(("tensor_list", tensor_list),))

    # torch 2.13 names this twice (``all_gather_single`` is the new spelling)
    def gather_into(name):
        def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
            return guarded(name, group, Op.ALLGATHER, input_tensor,
                           lambda: getattr(real, name)(output_tensor, input_tensor, group,
                                                       async_op),
                           g.flat, output_tensor, async_op=async_op)
        all_gather_into_tensor.__name__ = name
        return all_gather_into_tensor

    def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
        return guarded("gather", group, Op.GATHER, tensor,
                       lambda: real.gather(tensor, gather_list, dst, group, async_op, group_dst),
                       g.each_on_root, gather_list, async_op=async_op, root=(dst, group_dst),
                       rooted_lists=(("gather_list", gather_list),))

    def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None,
                             async_op=False):
        """``output_tensor_lists[i][j]`` receives rank i's ``input_tensor_list[j]``."""
        g.check_lists("all_gather_coalesced", group,
                      (("output_tensor_lists", output_tensor_lists),))
        handles = [all_gather([outs[j] for outs in output_tensor_lists], t, group, async_op)
                   for j, t in enumerate(input_tensor_list)]
        return Each(handles) if async_op else None

    return (all_gather, gather, all_gather_coalesced,
            *(gather_into(n) for n in ("all_gather_into_tensor", "all_gather_single")
              if hasattr(real, n)))


def _scatters(real):
    def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
        return guarded("broadcast", group, Op.BROADCAST, tensor,
                       lambda: real.broadcast(tensor, src, group, async_op, group_src),
                       g.tensor, tensor, async_op=async_op, root=(src, group_src))

    def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False,
                group_src=None):
        return guarded("scatter", group, Op.SCATTER, scatter_list,
                       lambda: real.scatter(tensor, scatter_list, src, group, async_op,
                                            group_src),
                       g.tensor, tensor, async_op=async_op, root=(src, group_src),
                       rooted_lists=(("scatter_list", scatter_list),), split=g.roots_list)

    def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                          group=None, async_op=False):
        return guarded("all_to_all_single", group, Op.ALLTOALL, (input, input_split_sizes),
                       lambda: real.all_to_all_single(output, input, output_split_sizes,
                                                      input_split_sizes, group, async_op),
                       g.joined, output, async_op=async_op, split=g.splits)

    def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
        return guarded("all_to_all", group, Op.ALLTOALL, list(input_tensor_list),
                       lambda: real.all_to_all(output_tensor_list, input_tensor_list, group,
                                               async_op),
                       g.each, output_tensor_list, async_op=async_op,
                       lists=(("output_tensor_list", output_tensor_list),
                              ("input_tensor_list", input_tensor_list)))

    def barrier(group=None, async_op=False, device_ids=None, timeout=None):
        return guarded("barrier", group, Op.BARRIER, None,
                       lambda: real.barrier(group, async_op, device_ids), async_op=async_op)

    def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
        guarded("monitored_barrier", group, Op.BARRIER, None,
                lambda: real.monitored_barrier(group, timeout, wait_all_ranks))

    return broadcast, scatter, all_to_all_single, all_to_all, barrier, monitored_barrier


def _objects(real):
    def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
        guarded("broadcast_object_list", group, Op.BROADCAST, list(object_list),
                lambda: real.broadcast_object_list(object_list, src, group, device, group_src),
                g.objects, object_list, root=(src, group_src))

    def all_gather_object(object_list, obj, group=None):
        guarded("all_gather_object", group, Op.ALLGATHER, obj,
                lambda: real.all_gather_object(object_list, obj, group),
                g.objects, object_list, lists=(("object_list", object_list),))

    def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
        guarded("gather_object", group, Op.GATHER, obj,
                lambda: real.gather_object(obj, object_gather_list, dst, group, group_dst),
                g.objects_on_root, object_gather_list, root=(dst, group_dst),
                rooted_lists=(("object_gather_list", object_gather_list),))

    def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None,
                            src=None, group=None, group_src=None):
        guarded("scatter_object_list", group, Op.SCATTER, scatter_object_input_list,
                lambda: real.scatter_object_list(scatter_object_output_list,
                                                 scatter_object_input_list, src, group,
                                                 group_src),
                g.first, scatter_object_output_list, root=(src, group_src),
                split=g.roots_list)

    return broadcast_object_list, all_gather_object, gather_object, scatter_object_list


def make_collective_functions(real):
    """The collectives, bound to the real torch.distributed ``real``: name -> stand-in."""
    return {f.__name__: f for part in (_reductions, _gathers, _scatters, _objects)
            for f in part(real)}
