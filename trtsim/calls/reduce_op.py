"""Reduce operations: TensorRT-LLM's ``ReduceOp`` spelling, torch's enum, or a name.

TensorRT-LLM's communicator numbers its ops SUM=0, PRODUCT=1, MIN=2, MAX=3, BAND=4, BOR=5,
BXOR=6, and torch numbers them differently (its MIN is 3, TensorRT-LLM's MAX). So an op is
resolved by its *name*, never its number: a bare integer is refused.
"""

from __future__ import annotations

import enum

OPS = ("sum", "prod", "min", "max", "band", "bor", "bxor")
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
    """The canonical name (``sum``, ``prod``, ``min``, ``max``, ``band``, ``bor``, ``bxor``) of
    ``op``: a string, or any enum member with a ``name`` (trtsim's, TensorRT-LLM's, torch's)."""
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
    return name
