"""The group arithmetic of a tp x pp x cp layout, its one home: which local ranks share a group
of each kind (TensorRT-LLM's Mapping: CP innermost, then TP, then PP), and the layers of each PP
stage. ``ParallelLayout`` and ``Mapping`` both read it."""

from __future__ import annotations

import enum


class GroupKind(str, enum.Enum):
    """The communicator groups of one rank, by kind; the values are the names reports, call
    logs and the JSON use. Every table of groups is built from this."""

    TP = "tp"
    PP = "pp"
    CP = "cp"
    TP_CP = "tp_cp"
    WORLD = "world"


GROUP_KINDS = tuple(k.value for k in GroupKind)


def group_of(kind: str, rank: int, tp: int, pp: int, cp: int) -> tuple[int, ...]:
    """The group of ``kind`` that holds local ``rank`` in a tp x pp x cp layout, ascending
    (CP innermost, then TP, then PP: the invariants above). The one home of the group
    arithmetic: ``ParallelLayout.groups`` and ``Mapping``'s groups read it."""
    stage = tp * cp
    if kind == "tp":
        base = rank // stage * stage + rank % cp
        return tuple(base + i * cp for i in range(tp))
    if kind == "pp":
        return tuple(rank % stage + i * stage for i in range(pp))
    if kind == "cp":
        base = rank - rank % cp
        return tuple(range(base, base + cp))
    if kind == "tp_cp":
        base = rank // stage * stage
        return tuple(range(base, base + stage))
    if kind == "world":
        return tuple(range(stage * pp))
    raise ValueError(f"unknown group kind {kind!r}; expected one of {', '.join(GROUP_KINDS)}")


def all_groups(kind: str, tp: int, pp: int, cp: int) -> list[tuple[int, ...]]:
    """Every group of ``kind``, as ascending local ranks, each once: O(world)."""
    stage, world = tp * cp, tp * pp * cp
    firsts = {"world": [0], "tp_cp": range(0, world, stage), "pp": range(stage),
              "tp": [s + c for s in range(0, world, stage) for c in range(cp)],
              "cp": range(0, world, cp)}.get(kind, [0])
    return [group_of(kind, r, tp, pp, cp) for r in firsts]


def pp_layer_split(num_layers: int, pp_size: int) -> list[list[int]]:
    """Layer indices of every PP stage, split like ``torch.tensor_split``."""
    base, extra = divmod(num_layers, pp_size)
    out, start = [], 0
    for stage in range(pp_size):
        count = base + (1 if stage < extra else 0)
        out.append(list(range(start, start + count)))
        start += count
    return out
