"""Call records: what one rank says about the collective it is entering.

A record carries the call's *purpose* (label, executor iteration, and for unlabelled calls
the purpose key of ``origin``) beside its mechanics (op, payload signature, root, reduce op),
because op, shape and per-group sequence alone cannot tell a skipped call from a matching one:
a rank that skips one call pairs its next call with its peers' pending one, silently. The call
site (file:line) is kept for reports.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np


class CallRecord(NamedTuple):
    """One rank's entry into one communication call.

    ``seq`` counts this rank's calls on ``(group_kind, group_ranks)`` from 1. ``rank`` and
    ``group_ranks`` are global ranks of the launch; ``local_rank`` is the rank inside the
    instance (what the instance's Mapping calls ``rank``).

    A named tuple: immutable, and made by one tuple construction. Every guarded call makes
    one, and a
    frozen dataclass's ``__init__`` (a ``object.__setattr__`` per field) cost 2.5 us of a
    10 us call. ``rec._replace(seq=2)`` makes a changed copy, ``CallRecord._fields`` lists
    the fields.
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
    purpose: str = ""                # the call stack at function granularity (comm.origin)
    comm: str = ""                   # the communicator, when not trtsim's own for the kind
    api: str = ""                    # the intercepted API call (``torch.all_reduce``, ...)

    @property
    def is_p2p(self) -> bool:
        return self.group_kind == "p2p"

    @property
    def route(self) -> tuple[int, int]:
        """A p2p record's (peer, tag): set on every p2p record, None only on collectives."""
        if self.peer is None or self.tag is None:
            raise TypeError(f"{self.op}: a point-to-point record without peer or tag")
        return self.peer, self.tag

    @property
    def group_key(self) -> tuple[str, tuple[int, ...], str]:
        """What identifies the communicator: two communicators over the same ranks (a
        ``Dup``, a second ``new_group``) order their calls independently."""
        return (self.group_kind, self.group_ranks, self.comm)

    @property
    def call_name(self) -> str:
        """``pp_allgather``: the Distributed method a person would have called, or the
        intercepted API's own name with its communicator (``torch.all_reduce on tp``)."""
        if self.api:
            where = "" if self.is_p2p else f" on {self.comm_name}"
            return f"{self.api}{where}"
        return self.op if self.is_p2p or self.group_kind == "world" else f"{self.group_kind}_{self.op}"

    @property
    def comm_name(self) -> str:
        """The communicator as a report names it: its kind (``tp``), or its ranks when its rank
        set is no group of the layout, with the communicator's id."""
        kind = self.group_kind
        if kind in ("group", "split") or kind.startswith("mesh "):   # no group of the layout
            kind = f"{kind} {list(self.group_ranks)}"
        return f"{kind} ({self.comm})" if self.comm else kind

    def short(self) -> str:
        """``pp_allgather #3 'gen_consensus' iter 2`` -- the call as a person names it."""
        if self.group_kind == "p2p":         # ``is_p2p``: the inproc clocks call this per call
            text = f"{self.call_name}(peer={self.peer}, tag={self.tag})"
        else:
            text = f"{self.call_name} #{self.seq}"
        if self.label:
            return f"{text} {self.label!r} iter {self.iteration}"
        return f"{text} iter {self.iteration}"

    def to_dict(self) -> dict[str, Any]:
        out = self._asdict()
        out["group_ranks"] = list(self.group_ranks)
        return out


# A record from every one of its fields, in ``CallRecord._fields`` order, in one C call (the
# inproc hot path's constructor: ``CallRecord(...)`` runs a generated Python function first).
record_of = functools.partial(tuple.__new__, CallRecord)


def kind_made_as(group_desc: str) -> str:
    """The kind a report gives a torch process group that is no group of the layout, from the
    description torch keeps for it (``group_desc``, also in Flight Recorder dumps as
    ``pg_desc``): a device mesh names each of its groups ``mesh_<dimension>`` (``mesh dp``);
    a group of ``new_group`` (or MPI's ``Split``) is a ``split``."""
    if group_desc.startswith("mesh_") and len(group_desc) > len("mesh_"):
        return f"mesh {group_desc[len('mesh_'):]}"
    return "split"


_HOST = frozenset((int, float, bool, str, bytes, type(None), list, tuple, dict))


def signature_of(payload: Any) -> str:
    """The payload's signature: dtype and shape for tensors, ``object`` for host objects.

    Host objects legally differ between ranks, in value and in kind (a gather of each rank's
    own list; a broadcast where only the root passes the object and the others pass None; a
    number that is an int here and a float there), so they all share one signature. Tensors
    must agree in dtype and shape, as torch.distributed requires.
    """
    if type(payload) in _HOST:            # the common case, without attribute probes
        return "object"
    if isinstance(payload, np.ndarray):   # a host object (numpy 2 gives it a device too)
        return "object"
    shape = getattr(payload, "shape", None)
    dtype = getattr(payload, "dtype", None)
    if shape is not None and dtype is not None and hasattr(payload, "device"):
        return f"tensor[{str(dtype).replace('torch.', '')}, {tuple(shape)}]"
    return "object"
