"""The MPI stand-in's calls underneath the guard: real collectives on the process backends.

Every MPI communicator gets a gloo process group over its members, opened at its first use
by its members only (``use_local_synchronization``), and the world's is torch's default
group. Object collectives are torch's object collectives. Buffer payloads (typed tensors)
travel as their bytes, so every element type moves alike; reduce, scatter and all-to-all are
all-gathers reduced or picked locally with trtsim's semantics, as the inproc backend computes
them.

Point-to-point messages go through the launch's rendezvous store (the TCP store every rank
reaches), one key per message: ``(source, destination, tag, n)`` for the n-th message of that
channel, which the n-th receive posted on it takes (MPI's order per source and tag). So a
message is there or not for anyone who asks -- a probe, a request's test -- which gloo's
point-to-point cannot tell before it is waited for. A send completes when its key is taken.

Under mpirun (``MPIRank.real``: the real ``mpi4py.MPI``) none of this runs: each guarded call
runs the real mpi4py method instead (``real``).
"""

from __future__ import annotations

import pickle
import time
from collections import Counter
from typing import Any

import numpy as np
import torch
from torch.distributed import distributed_c10d

from ...calls import semantics
from ...comm import real_collectives
from ...calls.ops import Op, Payload
from ..rank_api import Comm


class MPIRank:
    """One rank's MPI state: creation counts per parent, the real groups opened, the messages
    probed but not yet received, and (under mpirun) the real mpi4py module."""

    def __init__(self, api, real=None):
        self.api, self.real = api, real
        self._created: Counter = Counter()
        self._groups: dict[str, real_collectives.TorchGroup] = {}
        self.probed: dict[tuple[int, int], Any] = {}   # (peer, tag) -> receive handle
        self.sent: Counter = Counter()       # (peer, tag) -> messages sent on that channel
        self.posted: Counter = Counter()     # (peer, tag) -> receives posted on it
        self._store = None

    def next_creation(self, parent: str) -> int:
        """How many communicators this rank derived from ``parent`` before (the same count on
        every member: creation is collective over the parent)."""
        self._created[parent] += 1
        return self._created[parent]

    def store(self):
        """The launch's rendezvous store (torch's default group's)."""
        if self._store is None:
            self._store = distributed_c10d._get_default_store()  # noqa: SLF001
        return self._store

    def group(self, comm: Comm) -> real_collectives.TorchGroup:
        found = self._groups.get(comm.id)
        if found is None:
            if comm.ranks == self.api.world:
                pg = None                       # torch's default group: the launch's world
            else:
                pg = real_collectives.tdist.new_group(list(comm.ranks), backend="gloo",
                                               use_local_synchronization=True)
            found = self._groups[comm.id] = real_collectives.TorchGroup(comm.ranks, pg, pg,
                                                                          False)
        return found


def _bytes_of(t: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(t.numpy().reshape(-1).view(np.uint8).copy())


def _typed(b: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(b.numpy().view(like.numpy().dtype).reshape(like.shape).copy())


def run_collective(state: MPIRank, comm: Comm, op: str, payload, root, reduce_op):
    """One member's real collective; the result follows trtsim's semantics exactly."""
    group = state.group(comm)
    op = Op.of(op)
    if isinstance(payload, torch.Tensor):
        return _tensor_collective(state, group, comm, op, payload, root, reduce_op)
    if op in real_collectives.ISSUED_OPS:
        return real_collectives.collective(op, payload, group, root, reduce_op)
    gathered = real_collectives.collective(Op.ALLGATHER, payload, group, None, None)
    if op is Op.SPLIT:
        return gathered
    return semantics.execute(op, gathered, root, reduce_op)[comm.ranks.index(state.api.rank)]


def _tensor_collective(state, group, comm, op: Op, payload, root, reduce_op):
    raw = _bytes_of(payload)
    if op.payload in (Payload.ROOT, Payload.ROOT_LIST):     # only the root's payload counts
        got = _typed(real_collectives.collective(Op.BROADCAST, raw, group, root, None), payload)
        return got if op.payload is Payload.ROOT else \
            got[comm.ranks.index(state.api.rank)].clone()
    gathered = [_typed(b, payload) for b in
                real_collectives.collective(Op.ALLGATHER, raw, group, None, None)]
    return semantics.execute(op, gathered, root, reduce_op)[comm.ranks.index(state.api.rank)]


POLL_S = 5e-4      # how often a waiting send looks whether its message was taken


def _key(src: int, dst: int, tag: int, n: int) -> str:
    return f"trtsim/mpi/msg/{src}/{dst}/{tag}/{n}"


class StoreSend:
    """A message in the store: complete once its receiver took it."""

    def __init__(self, store, key: str):
        self._store, self._key = store, key

    def is_completed(self) -> bool:
        return not self._store.check([self._key])

    def wait(self) -> None:
        while not self.is_completed():
            time.sleep(POLL_S)


class StoreRecv:
    """A posted receive: complete once its message is in the store; ``wait`` takes it."""

    def __init__(self, store, key: str):
        self._store, self._key = store, key
        self._done, self._value = False, None

    def is_completed(self) -> bool:
        return self._done or self._store.check([self._key])

    def wait(self):
        if not self._done:
            blob = self._store.get(self._key)            # blocks until the message is there
            self._store.delete_key(self._key)
            self._value, self._done = pickle.loads(blob), True
        return self._value


def run_send(state: MPIRank, obj, peer: int, tag: int, blocking: bool):
    """Post a message; ``blocking``: wait until it is taken (a synchronous send)."""
    state.sent[(peer, tag)] += 1
    key = _key(state.api.rank, peer, tag, state.sent[(peer, tag)])
    store = state.store()
    store.set(key, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
    sent = StoreSend(store, key)
    return sent.wait() if blocking else sent


def run_recv(state: MPIRank, peer: int, tag: int, blocking: bool):
    state.posted[(peer, tag)] += 1
    pending = StoreRecv(state.store(), _key(peer, state.api.rank, tag, state.posted[(peer, tag)]))
    return pending.wait() if blocking else pending
