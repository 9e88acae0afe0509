"""What a collective computes, given every member's payload in group order (pure functions).

The inproc backend executes collectives with these; the process backend lets
torch.distributed compute them, and tests check that both agree. Receivers get their own
copies, as they would after a real transfer: a host object is pickled once and unpickled per
receiver (the object-collective path of torch.distributed); a tensor is cloned.
"""

from __future__ import annotations

import operator
import pickle
from functools import reduce
from typing import Any, Callable

import torch

from .ops import OP_TABLE, Op

# Keyed by reduce_op.OPS names.
# ``avg`` sums, then divides by the members; ``premul_sum`` sums what each member gave after
# multiplying it by its own factor (``reduce_op.premultiplied``, on the member's side).
REDUCE_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "sum": operator.add, "prod": operator.mul, "max": max, "min": min,
    "band": operator.and_, "bor": operator.or_, "bxor": operator.xor,
    "avg": operator.add, "premul_sum": operator.add,
}
_TENSOR_REDUCE: dict[str, Callable[[Any, Any], Any]] = {
    "sum": torch.add, "prod": torch.mul, "max": torch.maximum, "min": torch.minimum,
    "band": torch.bitwise_and, "bor": torch.bitwise_or, "bxor": torch.bitwise_xor,
    "avg": torch.add, "premul_sum": torch.add}
_IMMUTABLE = (int, float, bool, str, bytes, type(None), complex)
_IMMUTABLE_TYPES = frozenset(_IMMUTABLE)   # exact types: one set look-up on the hot path


def freeze(obj: Any) -> Any:
    """What travels: a tensor's copy, an immutable scalar as is, else its pickle."""
    if type(obj) in _IMMUTABLE_TYPES:       # before the tensor check, which costs more
        return obj
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, _IMMUTABLE):
        return obj
    return _Pickled(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def thaw(blob: Any) -> Any:
    """One receiver's own copy of a frozen payload."""
    if isinstance(blob, _Pickled):
        return pickle.loads(blob.data)
    if isinstance(blob, torch.Tensor):
        return blob.clone()
    return blob


def into(out: torch.Tensor, value: torch.Tensor) -> None:
    """Write a received ``value`` into the caller's tensor ``out`` as a C++ backend does:
    outside autograd, so a leaf that requires grad takes it (pipelining receives activations
    into such leaves) and the autograd version counter stays where gloo leaves it."""
    out.data.copy_(value)


class _Pickled:
    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


def nbytes(payload: Any) -> int:
    """Bytes of a tensor payload (what the clock model prices); 0 for host objects."""
    if type(payload) in _IMMUTABLE_TYPES:
        return 0
    return payload.numel() * payload.element_size() if isinstance(payload, torch.Tensor) else 0


def allgather(payloads: list[Any]) -> list[list[Any]]:
    if all(type(p) in _IMMUTABLE_TYPES for p in payloads):   # they travel as they are
        return [list(payloads) for _ in payloads]    # a copy of the list is enough
    frozen = [freeze(p) for p in payloads]
    return [[thaw(b) for b in frozen] for _ in payloads]


def broadcast(payloads: list[Any], root: int) -> list[Any]:
    frozen = freeze(payloads[root])
    return [thaw(frozen) for _ in payloads]


def gather(payloads: list[Any], root: int) -> list[Any]:
    frozen = [freeze(p) for p in payloads]
    return [[thaw(b) for b in frozen] if i == root else None for i in range(len(payloads))]


def allreduce(payloads: list[Any], op: str) -> list[Any]:
    """Reduce numbers or tensors elementwise; every member gets the result."""
    if isinstance(payloads[0], torch.Tensor):
        result = reduce(_TENSOR_REDUCE[op], [p.detach() for p in payloads])
        if op == "avg":
            # in place, as gloo divides: an integer tensor refuses the float quotient alike
            result = (result.clone() if len(payloads) == 1 else result).div_(len(payloads))
        return [result.clone() for _ in payloads]
    result = reduce(REDUCE_OPS[op], payloads)
    if op == "avg":
        result = result / len(payloads)
    return [result for _ in payloads]


def reduce_to(payloads: list[Any], root: int, op: str) -> list[Any]:
    """The reduction on the root, None elsewhere (torch's ``reduce``, MPI's ``reduce``)."""
    result = allreduce(payloads, op)[0]
    return [result if i == root else None for i in range(len(payloads))]


def scatter(payloads: list[Any], root: int) -> list[Any]:
    """Member i gets item i of the root's sequence."""
    items = [freeze(x) for x in payloads[root]]
    if len(items) != len(payloads):
        raise ValueError(f"scatter: the root gave {len(items)} items for {len(payloads)} members")
    return [thaw(b) for b in items]


def alltoall(payloads: list[Any]) -> list[Any]:
    """Member i gets item i of every member's sequence, in member order."""
    n = len(payloads)
    if any(len(p) != n for p in payloads):
        raise ValueError(f"alltoall: every member must give {n} items")
    frozen = [[freeze(x) for x in p] for p in payloads]
    return [[thaw(frozen[j][i]) for j in range(n)] for i in range(n)]


def reduce_scatter(payloads: list[Any], op: str) -> list[Any]:
    """Member i gets the reduction of item i of every member's sequence."""
    n = len(payloads)
    if any(len(p) != n for p in payloads):
        raise ValueError(f"reduce_scatter: every member must give {n} items")
    return [allreduce([p[i] for p in payloads], op)[0] for i in range(n)]


def execute(op: str, payloads: list[Any], root: int | None, reduce_op: str | None) -> list[Any]:
    """The per-member results of one collective (members in group order). ``split`` is a
    communicator split: an all-gather of every member's (color, key)."""
    run = _EXECUTE.get(op)        # an Op member or its plain string: one look-up (``ops``)
    if run is None:
        op = Op.of(op)            # an unknown op: the table's error
        raise ValueError(f"{op.value!r} is a point-to-point op, not a collective")
    info = OP_TABLE[op]
    reduce_op = (reduce_op or "sum") if info.reduces else None
    root = (root or 0) if info.rooted else None
    return run(payloads, root, reduce_op)


# How each collective computes (the arguments its op's table row says it takes).
_EXECUTE: dict[str, Callable[[list, Any, Any], list]] = {
    Op.ALLGATHER: lambda p, root, red: allgather(p),
    Op.SPLIT: lambda p, root, red: allgather(p),
    Op.BROADCAST: lambda p, root, red: broadcast(p, root),
    Op.GATHER: lambda p, root, red: gather(p, root),
    Op.ALLREDUCE: lambda p, root, red: allreduce(p, red),
    Op.REDUCE: lambda p, root, red: reduce_to(p, root, red),
    Op.SCATTER: lambda p, root, red: scatter(p, root),
    Op.ALLTOALL: lambda p, root, red: alltoall(p),
    Op.REDUCE_SCATTER: lambda p, root, red: reduce_scatter(p, red),
    Op.BARRIER: lambda p, root, red: [None for _ in p],
}
