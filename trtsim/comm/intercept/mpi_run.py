"""The MPI stand-in's calls on the process backends: real collectives underneath the guard.

Every MPI communicator gets a gloo process group over its members, opened at its first use
by its members only (``use_local_synchronization``), and the world's is torch's default
group. Object collectives are torch's object collectives; reduce, scatter and all-to-all are
all-gathers reduced or picked locally, with trtsim's semantics (so every backend computes them
alike). Point-to-point moves pickled objects on tags above trtsim's own.
"""

from __future__ import annotations

from collections import Counter

from .. import semantics
from ..process import torch_ops
from .comms import Comm


class MPIRank:
    """One rank's MPI state: creation counts per parent, the real groups opened."""

    def __init__(self, api):
        self.api = api
        self._created: Counter = Counter()
        self._groups: dict[str, torch_ops.TorchGroup] = {}

    def next_creation(self, parent: str) -> int:
        """How many communicators this rank derived from ``parent`` before (the same count on
        every member: creation is collective over the parent)."""
        self._created[parent] += 1
        return self._created[parent]

    def group(self, comm: Comm) -> torch_ops.TorchGroup:
        found = self._groups.get(comm.id)
        if found is None:
            if comm.ranks == self.api.world:
                pg = None                       # torch's default group: the launch's world
            else:
                pg = torch_ops.tdist.new_group(list(comm.ranks), backend="gloo",
                                               use_local_synchronization=True)
            found = self._groups[comm.id] = torch_ops.TorchGroup(comm.ranks, pg, pg, False)
        return found


def run_collective(state: MPIRank, comm: Comm, op: str, payload, root, reduce_op):
    """One member's real collective; the result follows trtsim's semantics exactly."""
    group = state.group(comm)
    if op in ("allgather", "broadcast", "gather", "allreduce", "barrier"):
        return torch_ops.collective(op, payload, group, root, reduce_op)
    gathered = torch_ops.collective("allgather", payload, group, None, None)
    if op == "split":
        return gathered
    return semantics.execute(op, gathered, root, reduce_op)[comm.ranks.index(state.api.rank)]


def run_send(state: MPIRank, obj, peer: int, tag: int, blocking: bool):
    return torch_ops.send(obj, peer, tag, False, blocking, False)


def run_recv(state: MPIRank, peer: int, tag: int, blocking: bool):
    pending = torch_ops.PendingRecv(peer, tag, None, False)
    return pending.wait() if blocking else pending
