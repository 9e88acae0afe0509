"""The real collectives trtsim issues itself, on torch.distributed groups: the process
backend's own calls and the MPI stand-in's underneath the guard.

Host objects travel as pickles over the group's gloo communicator (what torch's
``*_object`` collectives do; TRT-LLM runs the same calls over MPI). Tensors travel over the
group's tensor communicator: NCCL when every rank has its own GPU, else gloo, with CUDA
tensors staged through host memory. Roots are indices within the group; torch wants global
ranks, so they are translated here. Which op does what comes from the op table (``ops``).
"""

from __future__ import annotations

import pickle
import types
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as _torch_dist

from ..calls import semantics
from ..calls.ops import Op

# The real functions, bound once: inside a rank whose torch.distributed is intercepted, the
# module's names are trtsim's guarded stand-ins, and trtsim's own traffic must not go
# through them.
tdist = types.SimpleNamespace(**{name: getattr(_torch_dist, name) for name in (
    "ReduceOp", "all_gather", "all_gather_object", "broadcast", "broadcast_object_list",
    "get_rank", "gather", "gather_object", "all_reduce", "send", "isend", "irecv",
    "new_group")})

_REDUCE = {"sum": tdist.ReduceOp.SUM, "prod": tdist.ReduceOp.PRODUCT,
           "max": tdist.ReduceOp.MAX, "min": tdist.ReduceOp.MIN, "band": tdist.ReduceOp.BAND,
           "bor": tdist.ReduceOp.BOR, "bxor": tdist.ReduceOp.BXOR}


@dataclass(frozen=True)
class TorchGroup:
    """One group's communicators: ``obj`` for host objects (gloo), ``tensor`` for tensors."""

    ranks: tuple[int, ...]
    obj: Any
    tensor: Any
    stage_cuda: bool        # tensor communicator cannot take CUDA tensors: stage via host


def _staged(t: torch.Tensor, group: TorchGroup) -> torch.Tensor:
    return t.detach().cpu().clone() if (group.stage_cuda and t.is_cuda) else t.detach().clone()


def _restore(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return t.to(like.device) if t.device != like.device else t


def obj_bytes(obj: Any) -> torch.Tensor:
    """``obj``'s pickle as a uint8 tensor (what a host object travels as)."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def obj_from(t: torch.Tensor, n: int) -> Any:
    """The object of the first ``n`` bytes of a uint8 tensor."""
    return pickle.loads(t[:n].numpy().tobytes())


# The ops this module runs for trtsim's own calls (the intercepted APIs run theirs).
ISSUED_OPS = (Op.ALLGATHER, Op.BROADCAST, Op.GATHER, Op.ALLREDUCE, Op.BARRIER)


def collective(op: str, payload: Any, group: TorchGroup, root: int | None,
               reduce_op: str | None) -> Any:
    """Execute one collective (one of ``ISSUED_OPS``); the result follows the inproc
    semantics exactly."""
    is_tensor = isinstance(payload, torch.Tensor)
    op = Op.of(op)
    if op is Op.ALLGATHER:
        if is_tensor:
            t = _staged(payload, group)
            out = [torch.empty_like(t) for _ in group.ranks]
            tdist.all_gather(out, t, group=group.tensor)
            return [_restore(o, payload) for o in out]
        objs: list[Any] = [None] * len(group.ranks)
        tdist.all_gather_object(objs, payload, group=group.obj)
        return objs
    if op is Op.BROADCAST:
        src = group.ranks[root or 0]
        if is_tensor:
            t = _staged(payload, group)
            tdist.broadcast(t, src=src, group=group.tensor)
            return _restore(t, payload)
        box = [payload]
        tdist.broadcast_object_list(box, src=src, group=group.obj)
        return box[0]
    if op is Op.GATHER:
        dst = group.ranks[root or 0]
        me = tdist.get_rank()
        if is_tensor:
            t = _staged(payload, group)
            outs = [torch.empty_like(t) for _ in group.ranks] if me == dst else None
            tdist.gather(t, outs, dst=dst, group=group.tensor)
            return [_restore(o, payload) for o in outs] if outs is not None else None
        got: list[Any] | None = [None] * len(group.ranks) if me == dst else None
        tdist.gather_object(payload, got, dst=dst, group=group.obj)
        return got
    if op is Op.ALLREDUCE:
        if is_tensor:
            t = _staged(payload, group)
            tdist.all_reduce(t, op=_REDUCE[reduce_op or "sum"], group=group.tensor)
            return _restore(t, payload)
        # Host numbers may differ in kind between members (an int here, a float there), as
        # with MPI's pickled allreduce: gather them and reduce as the inproc backend does.
        nums: list[Any] = [None] * len(group.ranks)
        tdist.all_gather_object(nums, payload, group=group.obj)
        return semantics.allreduce(nums, reduce_op or "sum")[0]
    if op is Op.BARRIER:
        tdist.all_reduce(torch.zeros(1, dtype=torch.int64), group=group.obj)
        return None
    raise ValueError(f"the process backend runs no {op.value!r} of its own")
