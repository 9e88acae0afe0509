"""Call records: what one rank says about the collective it is entering.

A record carries the call's *purpose* (label, executor iteration, call site) beside its
mechanics (op, payload signature, root, reduce op), because DESIGN 4 shows that op, shape and
per-group sequence alone cannot tell a skipped call from a matching one.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any

# Frames in these files are plumbing; the call site is the first frame outside them.
_COMM_DIR = os.path.dirname(os.path.abspath(__file__))
_LAUNCH_FILE = os.path.join(os.path.dirname(_COMM_DIR), "launch.py")


@dataclass(frozen=True)
class CallRecord:
    """One rank's entry into one communication call.

    ``seq`` counts this rank's calls on ``(group_kind, group_ranks)`` from 1. ``rank`` and
    ``group_ranks`` are global ranks of the launch; ``local_rank`` is the rank inside the
    instance (what the instance's Mapping calls ``rank``).
    """

    op: str
    seq: int
    label: str | None
    iteration: int
    callsite: str
    signature: str
    rank: int = -1
    local_rank: int = -1
    instance: str = ""
    group_kind: str = ""
    group_ranks: tuple[int, ...] = ()
    root: int | None = None          # index within the group (broadcast, gather)
    reduce_op: str | None = None     # allreduce: sum | max | min | prod
    peer: int | None = None          # p2p: the other side's global rank
    tag: int | None = None           # p2p tag
    clock: float = 0.0               # the rank's virtual clock when it entered (seconds)

    @property
    def is_p2p(self) -> bool:
        return self.group_kind == "p2p"

    @property
    def group_key(self) -> tuple[str, tuple[int, ...]]:
        return (self.group_kind, self.group_ranks)

    @property
    def call_name(self) -> str:
        """``pp_allgather``: the Distributed method a person would have called."""
        return self.op if self.is_p2p or self.group_kind == "world" else f"{self.group_kind}_{self.op}"

    def short(self) -> str:
        """``pp_allgather #3 'gen_consensus' iter 2`` -- the call as a person names it."""
        name = self.call_name
        if self.is_p2p:
            text = f"{name}(peer={self.peer}, tag={self.tag})"
        else:
            text = f"{name} #{self.seq}"
        if self.label:
            text += f" {self.label!r}"
        return f"{text} iter {self.iteration}"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["group_ranks"] = list(self.group_ranks)
        return out


def signature_of(payload: Any) -> str:
    """The payload's signature: dtype and shape for tensors, the kind for host objects.

    Host objects of a gather legally differ between ranks (each rank sends its own list), so
    only their kind enters the signature; tensors must agree in dtype and shape as they do for
    torch.distributed.
    """
    shape = getattr(payload, "shape", None)
    dtype = getattr(payload, "dtype", None)
    if shape is not None and dtype is not None and hasattr(payload, "device"):
        return f"tensor[{str(dtype).replace('torch.', '')}, {tuple(shape)}]"
    if isinstance(payload, bool):
        return "object"
    if isinstance(payload, int):
        return "int"
    if isinstance(payload, float):
        return "float"
    return "object"


def find_callsite(skip_files: tuple[str, ...] = ()) -> str:
    """``file:line in function`` of the first frame outside trtsim's communication layer.

    Executor and transceiver code inside trtsim counts as a call site (its call sites are
    the interesting ones); only ``trtsim/comm`` and the launcher are skipped.
    """
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith(_COMM_DIR) or filename == _LAUNCH_FILE
                or filename in skip_files):
            return f"{_short_path(filename)}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return "<unknown>"


@functools.lru_cache(maxsize=4096)
def _short_path(filename: str) -> str:
    """A path relative to the current directory when it lies below it, else as is."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel
