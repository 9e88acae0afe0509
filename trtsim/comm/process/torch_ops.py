"""The real collectives of the process backend, on torch.distributed groups.

Host objects travel as pickles over the group's gloo communicator (what torch's
``*_object`` collectives do; TRT-LLM runs the same calls over MPI). Tensors travel over the
group's tensor communicator: NCCL when every rank has its own GPU, else gloo, with CUDA
tensors staged through host memory. Roots are indices within the group; torch wants global
ranks, so they are translated here. p2p objects use two tags per user tag (size, then bytes);
tensors use the second.
"""

from __future__ import annotations

import pickle
import types
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as _torch_dist

from .. import semantics

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


def _obj_bytes(obj: Any) -> torch.Tensor:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def _obj_from(t: torch.Tensor, n: int) -> Any:
    return pickle.loads(t[:n].numpy().tobytes())


def collective(op: str, payload: Any, group: TorchGroup, root: int | None,
               reduce_op: str | None) -> Any:
    """Execute one collective; the result follows the inproc semantics exactly."""
    is_tensor = isinstance(payload, torch.Tensor)
    if op == "allgather":
        if is_tensor:
            t = _staged(payload, group)
            out = [torch.empty_like(t) for _ in group.ranks]
            tdist.all_gather(out, t, group=group.tensor)
            return [_restore(o, payload) for o in out]
        out = [None] * len(group.ranks)
        tdist.all_gather_object(out, payload, group=group.obj)
        return out
    if op == "broadcast":
        src = group.ranks[root or 0]
        if is_tensor:
            t = _staged(payload, group)
            tdist.broadcast(t, src=src, group=group.tensor)
            return _restore(t, payload)
        box = [payload]
        tdist.broadcast_object_list(box, src=src, group=group.obj)
        return box[0]
    if op == "gather":
        dst = group.ranks[root or 0]
        me = tdist.get_rank()
        if is_tensor:
            t = _staged(payload, group)
            out = [torch.empty_like(t) for _ in group.ranks] if me == dst else None
            tdist.gather(t, out, dst=dst, group=group.tensor)
            return [_restore(o, payload) for o in out] if out is not None else None
        out = [None] * len(group.ranks) if me == dst else None
        tdist.gather_object(payload, out, dst=dst, group=group.obj)
        return out
    if op == "allreduce":
        if is_tensor:
            t = _staged(payload, group)
            tdist.all_reduce(t, op=_REDUCE[reduce_op or "sum"], group=group.tensor)
            return _restore(t, payload)
        # Host numbers may differ in kind between members (an int here, a float there), as
        # with MPI's pickled allreduce: gather them and reduce as the inproc backend does.
        out = [None] * len(group.ranks)
        tdist.all_gather_object(out, payload, group=group.obj)
        return semantics.allreduce(out, reduce_op or "sum")[0]
    if op == "barrier":
        tdist.all_reduce(torch.zeros(1, dtype=torch.int64), group=group.obj)
        return None
    raise ValueError(f"unknown collective op {op!r}")


class _Works:
    """Several in-flight sends that complete together."""

    def __init__(self, works: list, keep: list):
        self._works, self._keep = works, keep     # keep: tensors alive until completion

    def is_completed(self) -> bool:
        return all(w.is_completed() for w in self._works)

    def wait(self) -> None:
        for w in self._works:
            w.wait()


def send(payload: Any, dst: int, tag: int, as_tensor: bool, blocking: bool,
         stage_cuda: bool, clock: float = 0.0) -> _Works | None:
    """Send an object (size then bytes of (clock, object) on tags 2t and 2t+1) or a tensor
    (the sender's virtual clock on 2t, the data on 2t+1): the clock travels with the message."""
    if as_tensor:
        tensors = [torch.tensor([clock], dtype=torch.float64),
                   payload.detach().cpu() if (stage_cuda and payload.is_cuda) else payload]
        tags = [2 * tag, 2 * tag + 1]
    else:
        data = _obj_bytes((clock, payload))
        tensors = [torch.tensor([data.numel()], dtype=torch.int64), data]
        tags = [2 * tag, 2 * tag + 1]
    if blocking:
        for t, g in zip(tensors, tags):
            tdist.send(t, dst, tag=g)
        return None
    return _Works([tdist.isend(t, dst, tag=g) for t, g in zip(tensors, tags)], tensors)


class PendingRecv:
    """A posted receive: a tensor straight into its buffer, an object as size then bytes
    (the bytes are posted once the size is known)."""

    def __init__(self, src: int, tag: int, buffer: torch.Tensor | None, stage_cuda: bool):
        self.src, self.tag, self.buffer = src, tag, buffer
        self._value: Any = None
        self._done = False
        self.send_clock = 0.0
        if buffer is not None:
            self._target = buffer.new_empty(buffer.shape, device="cpu") \
                if (stage_cuda and buffer.is_cuda) else buffer
            self._clock = torch.empty(1, dtype=torch.float64)
            self._clock_work = tdist.irecv(self._clock, src, tag=2 * tag)
            self._work = tdist.irecv(self._target, src, tag=2 * tag + 1)
            self._size = None
        else:
            self._size = torch.empty(1, dtype=torch.int64)
            self._work = tdist.irecv(self._size, src, tag=2 * tag)
            self._data = None

    def is_completed(self) -> bool:
        if self._done:
            return True
        if not self._work.is_completed() or (self.buffer is not None
                                             and not self._clock_work.is_completed()):
            return False
        self._advance()
        return self._done

    def _advance(self) -> None:
        """Move on after the current piece arrived (wait() already returned or polled done)."""
        if self.buffer is not None:
            self._clock_work.wait()
            self.send_clock = float(self._clock.item())
            if self._target is not self.buffer:
                self.buffer.copy_(self._target)
            self._value, self._done = self.buffer, True
        elif self._data is None:
            self._data = torch.empty(int(self._size.item()), dtype=torch.uint8)
            self._work = tdist.irecv(self._data, self.src, tag=2 * self.tag + 1)
        else:
            self.send_clock, self._value = _obj_from(self._data, self._data.numel())
            self._done = True

    def wait(self) -> Any:
        while not self._done:
            self._work.wait()
            self._advance()
        return self._value
