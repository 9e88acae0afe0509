"""torch's functional collectives, guarded where every caller reaches them: the ops of
``torch.ops._c10d_functional`` (and ``_c10d_functional_autograd``).

torch 2.13's functional collectives (``torch.distributed._functional_collectives``) and their
registered autograd formulas, DTensor's redistributions and code that calls the ops itself
all go through these op namespaces, so the install wraps each communicating op there
(``GuardedOp``): one guarded call per op, labelled ``funcol.<op>``, with the payload the
group's own method sees. Forward values and gradients are torch's: the op runs as torch
runs it, so a backward pass issues the adjoint collective (all_gather <-> reduce_scatter,
all_reduce <-> all_reduce, all_to_all <-> all_to_all) through the same wrapper, as a
guarded call with its own record.

- Process backends: the guard, then the op (its group is a real gloo or NCCL group).
- Inproc: the op runs at once; its group is trtsim's inproc group (``backends.inproc.
  c10d_group``), whose method guards and computes the call under this op's label
  (``TorchRank.op_label``), so both backends record the same calls.

The coalesced ops run as their single ops one after another, on every backend, and
``batch_p2p_ops`` as its single sends and receives. ``wait_tensor`` and
``_wrap_tensor_autograd`` communicate nothing and stay as they are. A ``torch.compile``d
function's graph holds the op (dynamo traces torch's own), and its generated code looks the
overload up by name on every run: that lookup gets a guarded overload, so compiled
collectives are guarded calls too, with the same labels.
"""

from __future__ import annotations

import sys

import torch
import torch._ops

from ...calls.ops import Op
from ...calls.reduce_op import op_name
from ..rank_api import rank_api
from ...comm.current import current
from .groups import TorchRank, state

NAMESPACES = ("_c10d_functional", "_c10d_functional_autograd")
QUIET = ("wait_tensor", "_wrap_tensor_autograd")    # communicate nothing


def _group(group_name):
    if isinstance(group_name, torch.distributed.ProcessGroup):
        return group_name
    from torch._C._distributed_c10d import _resolve_process_group
    return _resolve_process_group(group_name)


def _issue(packet, args, kwargs, name: str, op: str, payload, group_name, root=None,
           reduce_op=None):
    """The one guarded path of an op: the guard then the op (processes), or the op under its
    label (inproc, where the group's method guards it)."""
    label = f"funcol.{name}"
    st = state(label)
    if not st.api.real:
        return st.labelled(label, packet, args, kwargs)
    comm = st.comm(_group(group_name), label)
    return st.api.collective(comm, op, payload, label, root, reduce_op,
                             lambda: packet(*args, **kwargs))


def _reduction(name: str) -> str:
    return op_name(name)


def _all_reduce(packet, name, args, kwargs):
    input, reduce_op, group_name = args[:3]
    return _issue(packet, args, kwargs, name, Op.ALLREDUCE, input, group_name,
                  reduce_op=_reduction(reduce_op))


def _all_gather(packet, name, args, kwargs):
    input, _size, group_name = args[:3]
    return _issue(packet, args, kwargs, name, Op.ALLGATHER, input, group_name)


def _reduce_scatter(packet, name, args, kwargs):
    input, reduce_op, size, group_name = args[:4]
    return _issue(packet, args, kwargs, name, Op.REDUCE_SCATTER, list(input.chunk(size)),
                  group_name, reduce_op=_reduction(reduce_op))


def _all_to_all(packet, name, args, kwargs):
    input, _out_sizes, in_sizes, group_name = args[:4]
    size = _group(group_name).size()
    parts = list(input.split(list(in_sizes)) if in_sizes else input.chunk(size))
    return _issue(packet, args, kwargs, name, Op.ALLTOALL, parts, group_name)


def _broadcast(packet, name, args, kwargs):
    input, src, group_name = args[:3]
    return _issue(packet, args, kwargs, name, Op.BROADCAST, input, group_name, root=src)


def _point_to_point(packet, name, args, kwargs):
    tensor, peer, tag, group_name = args[:4]
    label = f"funcol.{name}"
    st = state(label)
    if not st.api.real:
        return st.labelled(label, packet, args, kwargs)
    comm = st.comm(_group(group_name), label)
    run = lambda: packet(*args, **kwargs)    # noqa: E731 - the real op, after the guard
    if name == "isend":
        return st.api.send(Op.ISEND_TENSOR, tensor, comm.ranks[peer], tag, label, False, run)
    return st.api.recv(Op.IRECV_TENSOR, tensor, comm.ranks[peer], tag, label, False, run)


def _singles(single: str):
    """A coalesced op as its single op, one call per tensor (through the guarded single)."""
    def run(packet, name, args, kwargs):
        inputs, rest = args[0], args[1:]
        one = getattr(_namespace(packet), single)
        return [one(t, *rest, **kwargs) for t in inputs]
    return run


def _batch(packet, name, args, kwargs):
    ops, peers, tags, tensors, group_name = args[:5]
    ns = _namespace(packet)
    return [getattr(ns, op)(t, peer, tag, group_name)
            for op, peer, tag, t in zip(ops, peers, tags, tensors)]


def _namespace(packet):
    return getattr(torch.ops, packet._qualified_op_name.split("::")[0])


# How each op is guarded, by its name with an in-place ``_`` or ``_out`` taken off.
GUARDS = {
    "all_reduce": _all_reduce, "all_gather_into_tensor": _all_gather,
    "reduce_scatter_tensor": _reduce_scatter, "all_to_all_single": _all_to_all,
    "broadcast": _broadcast, "isend": _point_to_point, "irecv": _point_to_point,
    "all_reduce_coalesced": _singles("all_reduce"),
    "all_reduce_coalesced_": _singles("all_reduce_"),
    "all_gather_into_tensor_coalesced": _singles("all_gather_into_tensor"),
    "reduce_scatter_tensor_coalesced": _singles("reduce_scatter_tensor"),
    "batch_p2p_ops": _batch,
}


def guard_of(name: str):
    """The guard of op ``name`` (None for an op this module does not know)."""
    if name in GUARDS:
        return GUARDS[name]
    for tail in ("_out", "_"):
        if name.endswith(tail) and name[:-len(tail)] in GUARDS:
            return GUARDS[name[:-len(tail)]]
    return None


class GuardedOp:
    """``torch.ops.<namespace>.<name>`` as Python code calls it: guarded inside a rank that
    intercepts torch.distributed, the op itself anywhere else, and while dynamo traces it
    (the op goes into the graph, as torch's would). Its overloads and attributes are the
    op's, except where a compiled graph looks an overload up as it runs (``GuardedOverload``,
    below)."""

    def __init__(self, packet, name: str, guard):
        self._packet, self._name, self._guard = packet, name, guard
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        return _guarded_call(self._packet, self._name, self._guard, args, kwargs)

    def __getattr__(self, name):
        found = getattr(self._packet, name)
        if isinstance(found, torch._ops.OpOverload) and _from_graph_code(sys._getframe(1)):
            return GuardedOverload(found, self._name, self._guard)
        return found


class GuardedOverload:
    """One overload of an op (``.default``) as a compiled graph calls it: torch's FX code
    names it ``torch.ops._c10d_functional.all_reduce.default(...)``, looked up on every run,
    so the graph's collective is guarded as the eager one is. Only generated code gets it:
    modules that keep an overload at import (lowerings, registrations) keep torch's."""

    def __init__(self, overload, name: str, guard):
        self._overload, self._name, self._guard = overload, name, guard

    def __call__(self, *args, **kwargs):
        return _guarded_call(self._overload, self._name, self._guard, args, kwargs)

    def __getattr__(self, name):
        return getattr(self._overload, name)


def _guarded_call(op, name, guard, args, kwargs):
    if torch.compiler.is_compiling() or current() is None or \
            rank_api("torch.ops").extension(TorchRank) is None:
        return op(*args, **kwargs)
    return guard(op, name, args, kwargs)


GENERATED = ("<eval_with_key>",)       # how FX names the code it generates


def _from_graph_code(frame) -> bool:
    return frame is not None and frame.f_code.co_filename.startswith(GENERATED)


def communicating_ops() -> list[tuple[str, str]]:
    """Every (namespace, op) of the functional-collective namespaces that communicates."""
    pairs = sorted(n.partition("::")[::2] for n in torch._C._dispatch_get_all_op_names())
    return [(ns, name) for ns, name in pairs if ns in NAMESPACES and name not in QUIET]


def install() -> list[tuple[object, str, object]]:
    """Wrap every communicating op; (namespace, name, the op) of each, to restore."""
    import torch.distributed._functional_collectives  # noqa: F401 - registers the ops
    saved = []
    for ns_name, name in communicating_ops():
        guard = guard_of(name)
        if guard is None:
            continue                         # the discovery test names it
        ns = getattr(torch.ops, ns_name)
        packet = getattr(ns, name)
        saved.append((ns, name, packet))
        setattr(ns, name, GuardedOp(packet, name, guard))
    return saved


def uninstall(saved) -> None:
    for ns, name, packet in saved:
        setattr(ns, name, packet)
