"""Reduce operations: TensorRT-LLM's ``ReduceOp`` spelling, torch's enum, or a name.

TensorRT-LLM's communicator numbers its ops SUM=0, PRODUCT=1, MIN=2, MAX=3, BAND=4, BOR=5,
BXOR=6, and torch numbers them differently (its MIN is 3, TensorRT-LLM's MAX). So an op is
resolved by its *name*, never its number: a bare integer is refused.

torch adds two ops no other API here has: ``AVG`` (the sum divided by the group's size) and
``PREMUL_SUM`` (each member multiplies its input by its own factor, a scalar or a tensor,
before the sum: ``ReduceOp.PREMUL_SUM(factor)``, which FSDP2's
``set_gradient_divide_factor`` uses). A premultiplied sum is only ever made with its factor.
"""

from __future__ import annotations

import enum

OPS = ("sum", "prod", "min", "max", "band", "bor", "bxor", "avg", "premul_sum")
PREMUL_SUM = "premul_sum"
_ALIASES = {"product": "prod"}


class ReduceOp(enum.IntEnum):
    """TensorRT-LLM's reduce ops (``tensorrt_llm._torch.distributed.communicator.ReduceOp``)."""

    SUM = 0
    PRODUCT = 1
    MIN = 2
    MAX = 3
    BAND = 4
    BOR = 5
    BXOR = 6


def op_name(op) -> str:
    """The canonical name (``sum``, ``prod``, ``min``, ``max``, ``band``, ``bor``, ``bxor``,
    ``avg``, ``premul_sum``) of ``op``: a string, any enum member with a ``name`` (trtsim's,
    TensorRT-LLM's, torch's), or torch's ``ReduceOp`` object (``PREMUL_SUM(factor)``)."""
    if type(op).__name__ == "ReduceOp" and hasattr(op, "op"):   # torch's object, not its enum
        name = str(op.op.name).lower()
        name = _ALIASES.get(name, name)
        if name == PREMUL_SUM and premul_factor(op) is None:
            raise ValueError(f"op={op!r}: PREMUL_SUM needs its factor: "
                             "ReduceOp.PREMUL_SUM(factor)")
        return name
    if isinstance(op, str):
        name = op.lower()
    elif hasattr(op, "name") and not isinstance(op, (bool, int)) or isinstance(op, enum.Enum):
        name = str(op.name).lower()
    else:
        raise TypeError(f"op={op!r}: pass a ReduceOp member or a name (sum, max, ...), not a "
                        "number: TensorRT-LLM's and torch's enums number the ops differently")
    name = _ALIASES.get(name, name)
    if name not in OPS:
        raise ValueError(f"op={op!r}; expected one of {', '.join(OPS)}")
    if name == PREMUL_SUM:
        raise ValueError(f"op={op!r}: PREMUL_SUM needs its factor: ReduceOp.PREMUL_SUM(factor)")
    return name


def premul_factor(op):
    """The factor of torch's ``ReduceOp.PREMUL_SUM(factor)`` (a number or a tensor), else
    None."""
    if type(op).__name__ != "ReduceOp" or getattr(getattr(op, "op", None), "name", "") != \
            "PREMUL_SUM":
        return None                 # torch refuses ``factor`` on every other op
    return op.factor


def premultiplied(payload, op):
    """What a member puts into a reduction on the inproc backend: for a premultiplied sum its
    input times its factor (a tensor, or each tensor of a list), applied on the member's side
    as torch applies it before the sum; for an average of integer tensors, the refusal gloo
    gives (the in-place division of an integer tensor by the group's size, torch's own
    error); ``payload`` as it is otherwise."""
    factor = premul_factor(op)
    if factor is None:
        if op_name(op) == "avg":
            for t in payload if isinstance(payload, (list, tuple)) else (payload,):
                if hasattr(t, "is_floating_point") and not t.is_floating_point() \
                        and not t.is_complex():
                    t.new_empty(0).div_(2)       # raises torch's own RuntimeError
        return payload
    if isinstance(payload, (list, tuple)):
        return [p * factor for p in payload]
    return payload * factor
