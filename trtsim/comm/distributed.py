"""Distributed: TensorRT-LLM's communicator for one rank, over a backend, guarded.

Every public call form of TensorRT-LLM's ``Distributed`` / ``MPIDist`` / ``TorchDist``
(``tensorrt_llm/_torch/distributed/communicator.py``) is accepted, so code written against it
runs unchanged; trtsim adds ``label=`` (the call's purpose, keyword only) and
``set_iteration``. Every call builds a CallRecord (group, per-group sequence, op, payload
signature, root, reduce op, label, purpose, iteration, call site) and hands it with the payload
to the rank's transport, which checks it with the guard before the real collective runs.

Arguments follow TensorRT-LLM's MPI communicators: roots are indices within the group (the
``dst=`` spelling of TorchDist's gathers means the same here); p2p peers are ranks of this
instance, or a ``Peer`` for a rank of another instance (the KV data plane). Keywords that
change nothing here are accepted and ignored: ``chunk_size=`` (MPI's pickle chunking),
``small_payload=`` and ``prefer_cpu=`` (transport choices), and the ``**kwargs`` TensorRT-LLM's
broadcasts pass on to their communicator.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Protocol

from ..layout.places import Peer, RankPlace
from ..timeline.clock import RankClock
from .arrays import ArrayCalls
from ..calls.ops import OP_TABLE, Op
from .origin import OriginFinder
from ..calls.records import CallRecord, record_of, signature_of
from ..calls.reduce_op import ReduceOp, op_name


class Transport(Protocol):
    """What a backend provides to one rank's Distributed."""

    clock: RankClock          # the rank's modelled time; its calls advance it
    def collective(self, rec: CallRecord, payload: Any, run=None) -> Any: ...
    def send(self, rec: CallRecord, payload: Any, blocking: bool, run=None) -> Any: ...
    def recv(self, rec: CallRecord, buffer: Any, blocking: bool, run=None) -> Any: ...
    def set_iteration(self, iteration: int) -> None: ...
    def delay(self, seconds: float) -> None: ...

    @property
    def runs_real_calls(self) -> bool:
        """An intercepted API's real call runs underneath the guard (processes)."""


# The ops this class enters, as the plain strings a record carries: an ``Op`` member formats
# and pickles through Python code, its value does not (``ops``).
_ALLGATHER, _GATHER, _BROADCAST, _ALLREDUCE, _BARRIER = (
    o.value for o in (Op.ALLGATHER, Op.GATHER, Op.BROADCAST, Op.ALLREDUCE, Op.BARRIER))
_SEND_OBJECT, _ISEND_OBJECT, _RECV_OBJECT, _IRECV_OBJECT = (
    o.value for o in (Op.SEND_OBJECT, Op.ISEND_OBJECT, Op.RECV_OBJECT, Op.IRECV_OBJECT))
_SEND_TENSOR, _ISEND_TENSOR, _RECV_TENSOR, _IRECV_TENSOR = (
    o.value for o in (Op.SEND_TENSOR, Op.ISEND_TENSOR, Op.RECV_TENSOR, Op.IRECV_TENSOR))


def _forward(mapping_method: str):
    return property(lambda self: getattr(self.mapping, mapping_method)())


class Distributed(ArrayCalls):
    """One rank's communicator: TRT-LLM's method names, every collective recorded and guarded."""

    supports_single_round_broadcast = False

    def __init__(self, place: RankPlace, transport: Transport,
                 origins: OriginFinder | None = None):
        self.place = place
        self.mapping = place.mapping
        self._transport = transport
        self._origins = origins or OriginFinder()
        self._iteration = 0
        self._seq: Counter = Counter()
        self._groups = place.groups()
        self._global_rank = place.global_rank
        # What every call record repeats, read once (the place is frozen): the hot path
        # reads locals' attributes, not properties.
        self._local_rank, self._instance, self._delay = (place.mapping.rank, place.instance,
                                                         place.delay)
        self.census: Counter = Counter()   # (iteration, group kind, label or op) -> calls
        self.notes: list[str] = []         # what this rank's backend chose and why (results.notes)
        # What interception keeps for this rank (``intercept.rank_api.RankAPI.of`` makes it
        # on first use, and is the one place that sets it): comm knows nothing of its type.
        self.intercepted: object | None = None

    def wrap_transport(self, wrap: Callable[[Transport], Transport]) -> None:
        """Route this rank's calls through ``wrap(transport)`` from now on: how a launch
        that asks for gates puts its observer on the call's path (``gate_transport``),
        leaving the path of every other launch without it."""
        self._transport = wrap(self._transport)

    # -- identity (TensorRT-LLM's properties) --------------------------------------------
    rank = property(lambda self: self.mapping.rank)
    world_size = property(lambda self: self.mapping.world_size)
    tp_size = property(lambda self: self.mapping.tp_size)
    pp_size = property(lambda self: self.mapping.pp_size)
    cp_size = property(lambda self: self.mapping.cp_size)
    tp_rank = property(lambda self: self.mapping.tp_rank)
    pp_rank = property(lambda self: self.mapping.pp_rank)
    cp_rank = property(lambda self: self.mapping.cp_rank)
    dp_rank = property(lambda self: self.mapping.dp_rank)
    dp_size = property(lambda self: self.mapping.dp_size)
    cp_config = property(lambda self: self.mapping.cp_config)
    has_tp = _forward("has_tp")
    has_pp = _forward("has_pp")
    has_cp_ulysses = _forward("has_cp_ulysses")
    has_cp_helix = _forward("has_cp_helix")
    is_first_pp_rank = _forward("is_first_pp_rank")
    is_last_pp_rank = _forward("is_last_pp_rank")
    is_second_last_pp_rank = _forward("is_second_last_pp_rank")
    next_pp_rank = _forward("next_pp_rank")
    prev_pp_rank = _forward("prev_pp_rank")
    global_rank = property(lambda self: self.place.global_rank)
    instance = property(lambda self: self.place.instance)
    role = property(lambda self: self.place.role)

    @property
    def origins(self) -> OriginFinder:
        """How this rank finds its calls' sites and purposes (an intercepted API may add to
        the site: ``OriginFinder.annotate``)."""
        return self._origins

    @property
    def local_world_size(self) -> int:
        """Ranks of this instance on one node (``gpus_per_node`` of them at most)."""
        return min(self.mapping.world_size, self.mapping.gpus_per_node)

    @property
    def clock(self):
        """This rank's virtual clock (``clock.now`` seconds, ``clock.events`` its timeline)."""
        return self._transport.clock

    def advance(self, seconds: float, label: str = "compute") -> None:
        """Modelled work: move this rank's virtual clock forward by ``seconds``."""
        self._transport.clock.advance(seconds, label)

    @property
    def device(self):
        """The torch device this rank computes on (its GPU on the process backend with CUDA)."""
        import torch
        return getattr(self._transport, "device", None) or torch.device("cpu")

    @property
    def runs_real_calls(self) -> bool:
        """Whether the backend runs real collectives (processes), so an intercepted API's real
        call runs underneath the guard; on inproc trtsim computes the results itself."""
        return self._transport.runs_real_calls

    def pause(self, seconds: float) -> None:
        """Wait ``seconds`` without a call: real time on the process backends; on inproc,
        scheduling steps in which every other runnable rank may move first."""
        self._transport.delay(seconds)

    def note(self, text: str) -> None:
        """Tell the launch's ``results.notes`` what this rank's backend chose (once per text)."""
        if text not in self.notes:
            self.notes.append(text)

    @property
    def iteration(self) -> int:
        return self._iteration

    def set_iteration(self, iteration: int) -> None:
        """The executor's iteration counter; every later call record carries it."""
        self._iteration = int(iteration)
        self._transport.set_iteration(self._iteration)

    # -- gathers -------------------------------------------------------------------------
    def allgather(self, obj, *, label: str | None = None) -> list:
        return self.issue_collective("world", _ALLGATHER, obj, label)

    def tp_allgather(self, obj, chunk_size=None, *, small_payload=False, label=None) -> list:
        return self.issue_collective("tp", _ALLGATHER, obj, label)

    def cp_allgather(self, obj, chunk_size=None, *, small_payload=False, label=None) -> list:
        return self.issue_collective("cp", _ALLGATHER, obj, label)

    def pp_allgather(self, obj, chunk_size=None, *, label: str | None = None) -> list:
        return self.issue_collective("pp", _ALLGATHER, obj, label)

    def tp_cp_allgather(self, obj, *, small_payload=False, label: str | None = None) -> list:
        """Every TP x CP rank's object, TP-major: CP gather first, then TP, each only when its
        size exceeds 1 (no collective at all when both are 1), as TensorRT-LLM does."""
        out = self.cp_allgather(obj, label=label) if self.cp_size > 1 else [obj]
        if self.tp_size > 1:
            out = [x for part in self.tp_allgather(out, label=label) for x in part]
        return out

    def tp_gather(self, obj, root: int = 0, chunk_size=None, *, dst: int | None = None,
                  label: str | None = None) -> list | None:
        """Every TP rank's object on the root (index in the group, or ``dst=``); None elsewhere."""
        return self.issue_collective("tp", _GATHER, obj, label, root=root if dst is None else dst)

    def pp_gather(self, obj, root: int = 0, chunk_size=None, *, dst: int | None = None,
                  label: str | None = None) -> list | None:
        return self.issue_collective("pp", _GATHER, obj, label, root=root if dst is None else dst)

    # -- broadcasts ----------------------------------------------------------------------
    def broadcast(self, obj, root: int = 0, chunk_size=None, prefer_cpu=False, *,
                  label: str | None = None):
        return self.issue_collective("world", _BROADCAST, obj, label, root=root)

    def broadcast_or_none(self, obj, root: int = 0, *, label: str | None = None):
        """The root's object on every rank, or None everywhere when the root passed None."""
        return self.issue_collective("world", _BROADCAST, obj, label, root=root)

    def tp_broadcast(self, obj, root: int = 0, chunk_size=None, *, label=None, **kwargs):
        return self.issue_collective("tp", _BROADCAST, obj, label, root=root)

    def cp_broadcast(self, obj, root: int = 0, chunk_size=None, *, label=None, **kwargs):
        return self.issue_collective("cp", _BROADCAST, obj, label, root=root)

    def pp_broadcast(self, obj, root: int = 0, *, label: str | None = None):
        return self.issue_collective("pp", _BROADCAST, obj, label, root=root)

    def tp_cp_broadcast(self, obj, root: int = 0, *, label: str | None = None, **kwargs):
        """Broadcast over TP, then over CP, each only when its size exceeds 1."""
        if self.tp_size > 1:
            obj = self.tp_broadcast(obj, root, label=label)
        if self.cp_size > 1:
            obj = self.cp_broadcast(obj, root, label=label)
        return obj

    # -- reductions and barriers ---------------------------------------------------------
    def allreduce(self, obj, op=ReduceOp.SUM, *, label: str | None = None):
        """Numbers or tensors, reduced with ``op`` (a ReduceOp of TRT-LLM's or torch's, or a
        name); every rank gets the result."""
        return self.issue_collective("world", _ALLREDUCE, obj, label, reduce_op=op_name(op))

    def tp_allreduce(self, obj, op=ReduceOp.SUM, *, label: str | None = None):
        return self.issue_collective("tp", _ALLREDUCE, obj, label, reduce_op=op_name(op))

    def barrier(self, *, label: str | None = None) -> None:
        self.issue_collective("world", _BARRIER, None, label)

    def tp_barrier(self, *, label: str | None = None) -> None:
        self.issue_collective("tp", _BARRIER, None, label)

    # -- point to point (objects and tensors) --------------------------------------------
    def send_object(self, obj, dest, tag: int = 0, *, label: str | None = None) -> None:
        self.issue_p2p(_SEND_OBJECT, obj, dest, tag, label, blocking=True)

    def isend_object(self, obj, dest, tag: int = 0, *, label: str | None = None):
        """Send without waiting; the returned handle's ``wait()`` blocks until received."""
        return self.issue_p2p(_ISEND_OBJECT, obj, dest, tag, label, blocking=False)

    def recv_object(self, src, tag: int = 0, *, label: str | None = None):
        return self.issue_p2p(_RECV_OBJECT, None, src, tag, label)

    recv_object_from_isend = recv_object        # the older TorchDist spelling

    def irecv_object(self, src, tag: int = 0, *, label: str | None = None):
        """Post a receive without waiting; the handle's ``is_completed()`` polls and
        ``wait()`` returns the object."""
        return self.issue_p2p(_IRECV_OBJECT, None, src, tag, label, blocking=False)

    def send_tensor(self, t, dest, tag: int = 0, *, label: str | None = None) -> None:
        self.issue_p2p(_SEND_TENSOR, t, dest, tag, label, blocking=True)

    def isend_tensor(self, t, dest, tag: int = 0, *, label: str | None = None):
        return self.issue_p2p(_ISEND_TENSOR, t, dest, tag, label, blocking=False)

    def recv_tensor(self, t, src, tag: int = 0, *, label: str | None = None):
        """Receive into ``t`` (same dtype and shape as the sent tensor) and return it."""
        return self.issue_p2p(_RECV_TENSOR, t, src, tag, label)

    def irecv_tensor(self, t, src, tag: int = 0, *, label: str | None = None):
        """Post a receive into ``t`` without waiting; ``wait()`` returns ``t`` filled."""
        return self.issue_p2p(_IRECV_TENSOR, t, src, tag, label, blocking=False)

    # -- plumbing ------------------------------------------------------------------------
    def group_ranks(self, kind: str) -> tuple[int, ...]:
        """Global ranks of this rank's group of ``kind`` (tp, pp, cp, tp_cp, world)."""
        return self._groups[kind]

    def resume_at(self, rec: CallRecord) -> None:
        """Make ``rec``'s sequence this rank's next on its communicator (a replay re-issues
        recorded calls at their recorded sequences)."""
        if rec.is_p2p:
            self._seq[("p2p", rec.group_ranks, rec.tag)] = rec.seq - 1
        else:
            self._seq[(rec.group_kind, rec.group_ranks, rec.comm)] = rec.seq - 1

    def issue_collective(self, kind: str, op: str, payload: object, label: str | None,
                         root: int | None = None, reduce_op: str | None = None,
                         group: tuple[int, ...] | None = None, comm: str = "", api: str = "",
                         run: Callable[[], object] | None = None) -> Any:
        """Record and guard one collective of ``op`` on this rank's group of ``kind``, and
        return its result. ``group``/``comm``/``api`` name an intercepted communicator; ``run``
        executes the real call where a backend runs real collectives (the inproc backend
        computes the result itself). The call site is found from here, two frames up."""
        group = group or self._groups[kind]
        if root is not None and not (isinstance(root, int) and 0 <= root < len(group)):
            raise ValueError(f"{kind}_{op}: root={root!r} is not an index of the {kind} "
                             f"group of {len(group)} ranks")
        if self._delay:
            self._transport.delay(self._delay)
        key = (kind, group, comm)          # each communicator numbers its own calls
        seq = self._seq.get(key, 0) + 1  # get: Counter's __missing__ is a Python call
        self._seq[key] = seq
        origin = self._origins.find(2)
        iteration = self._iteration
        rec = record_of((op, seq, label, iteration, origin.callsite,
                         "none" if op == _BARRIER else signature_of(payload),
                         self._global_rank, self._local_rank, self._instance, kind, group, root,
                         reduce_op, None, None, self._transport.clock.now, origin.purpose, comm,
                         api))
        census = (iteration, kind, label or api or op)
        self.census[census] = self.census.get(census, 0) + 1
        if run is None:
            return self._transport.collective(rec, payload)
        return self._transport.collective(rec, payload, run)

    def issue_p2p(self, op: str, payload: object, peer: int | Peer, tag: int,
                  label: str | None, blocking: bool = True, global_peer: bool = False,
                  api: str = "", run: Callable[[], object] | None = None) -> Any:
        """Record and guard one point-to-point call; ``global_peer``: ``peer`` is a global rank
        of the launch (torch's and MPI's spelling) rather than a rank of this instance."""
        other = peer if global_peer and isinstance(peer, int) else self.place.peer_global(peer)
        me = self._global_rank
        if self._delay:
            self._transport.delay(self._delay)
        if other == me:
            raise ValueError(f"{op}: peer {peer!r} is this rank itself")
        info = OP_TABLE[op]
        sending = info.sends
        channel = ("p2p", (me, other) if sending else (other, me), tag)
        self._seq[channel] += 1
        origin = self._origins.find(2)
        signature = signature_of(payload) if info.tensor else "object"
        rec = CallRecord(op, self._seq[channel], label, self._iteration, origin.callsite,
                         signature, me, self._local_rank, self._instance, "p2p",
                         channel[1], peer=other, tag=tag, clock=self._transport.clock.now,
                         purpose=origin.purpose, api=api)
        self.census[(self._iteration, "p2p", label or api or op)] += 1
        extra = () if run is None else (run,)
        if sending:
            return self._transport.send(rec, payload, blocking, *extra)
        return self._transport.recv(rec, payload, blocking, *extra)
