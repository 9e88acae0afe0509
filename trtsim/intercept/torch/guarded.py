"""The one guarded path of torch.distributed's collectives (``guarded``), and the small
pieces each op adds to it: what travels (a ``split`` of the caller's arguments) and how the
inproc result lands in the caller's tensors and lists (a ``write``), in the shape of
PyTorch's own ``multi_threaded_pg`` (one path that starts, joins and ends every collective,
one small function per op for its result).

Each call is recorded like a Distributed call (its op, payload signature, root as a group
index, reduce op, purpose and call site) on the communicator of its ``group``, then executed:
by the real torch function on the process backends (after the guard's check), or by
trtsim's own semantics on the inproc backend, written into the caller's tensors as a C++
backend writes them (``semantics.into``). The path branches on the backend once.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from ...calls.reduce_op import op_name, premultiplied
from ...calls.semantics import into
from ...guard.rules import output_list_error
from .groups import state


class Done:
    """The handle of an async collective that already completed (inproc)."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def block_current_stream(self) -> None:
        pass

    def result(self):
        return []


DONE = Done()                       # stateless: one handle serves every completed call


class Each:
    """The handle of a coalesced async call: every single call's handle."""

    def __init__(self, handles: list):
        self.handles = handles

    def wait(self, timeout=None) -> bool:
        for h in self.handles:
            h.wait()
        return True

    def is_completed(self) -> bool:
        return all(h.is_completed() for h in self.handles)


def group_root(comm, rank, group_rank, what: str) -> int:
    """The group index of a root named by its global ``rank`` or its ``group_rank``."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{what}: give a global rank or a group rank, not both")
    if group_rank is not None:
        if not 0 <= group_rank < len(comm.ranks):
            raise ValueError(f"{what}: group rank {group_rank} out of range for "
                             f"{len(comm.ranks)} ranks")
        return group_rank
    return comm.index(0 if rank is None else rank, f"{what}:")


def guarded(name: str, group, op: str, payload: Any, real_call: Callable,
            write: Callable[[Any, Any], None] | None = None, out: Any = None, *,
            async_op: bool = False, root: tuple | None = None, reduce=None,
            lists: tuple = (), rooted_lists: tuple = (),
            split: Callable[[Any, Any, int | None, int], Any] | None = None):
    """One guarded torch collective: ``root`` is ``(rank, group_rank)`` as the caller named
    it; ``lists`` (``(what, items)``) must hold one entry per member, ``rooted_lists`` on the
    root only (the guard's list rule, before the call on every backend); ``split(payload,
    comm, root, me)`` makes what travels from the arguments when it depends on the group;
    ``reduce`` is torch's reduce op as the caller gave it;
    ``write(out, value)`` puts the inproc result into the caller's ``out``. Returns the real
    call's result, or inproc's handle (``async_op``) or None; None for a non-member."""
    reduce_op = None if reduce is None else op_name(reduce)
    st = state(name)
    comm = st.comm(group, name)
    index = None if root is None else group_root(comm, root[0], root[1], name)
    me = st.api.rank
    if me not in comm.ranks:
        return None                          # torch: a non-member's call does nothing
    for what, items in lists:
        _fits(name, what, items, len(comm.ranks))
    if rooted_lists and index is not None and comm.ranks[index] == me:
        for what, items in rooted_lists:
            _fits(name, what, items, len(comm.ranks))
    if split is not None:
        payload = split(payload, comm, index, me)
    if st.api.real:
        return st.api.collective(comm, op, payload, f"torch.{name}", index, reduce_op,
                                 real_call)
    if reduce_op == "premul_sum" or reduce_op == "avg":    # inproc: the member's own part
        payload = premultiplied(payload, reduce)
    value = st.api.collective(comm, op, payload, f"torch.{name}", index, reduce_op)
    if write is not None:
        write(out, value)
    return DONE if async_op else None


def check_lists(name: str, group, lists: tuple) -> None:
    """The list rule alone, for a call that runs as several guarded calls (coalesced)."""
    st = state(name)
    comm = st.comm(group, name)
    if st.api.rank in comm.ranks:
        for what, items in lists:
            _fits(name, what, items, len(comm.ranks))


def _fits(name: str, what: str, items, members: int) -> None:
    why = output_list_error(f"torch.distributed.{name}", what, len(items or ()), members)
    if why is not None:
        raise ValueError(why)


# -- what travels, made from the arguments and the group -----------------------------------
def chunks(tensor, comm, root, me) -> list:
    """One chunk per member (``reduce_scatter_tensor``)."""
    return list(tensor.chunk(len(comm.ranks)))


def splits(args, comm, root, me) -> list:
    """``(input, input_split_sizes)``: the parts sent to each member (``all_to_all_single``)."""
    tensor, sizes = args
    return list(tensor.split(list(sizes)) if sizes else tensor.chunk(len(comm.ranks)))


def roots_list(items, comm, root, me):
    """The root's list (a copy), nothing from the others (``scatter``)."""
    return list(items) if comm.ranks[root] == me else None


# -- how an inproc result lands in the caller's arguments ----------------------------------
def tensor(out, value) -> None:
    into(out, value)


def tensor_on_root(out, value) -> None:
    if value is not None:                    # the root's result; the others keep theirs
        into(out, value)


def each(outs, value) -> None:
    for o, got in zip(outs, value):
        into(o, got)


def each_on_root(outs, value) -> None:
    if value is not None:
        each(outs, value)


def flat(out, value) -> None:
    """Every member's tensor, concatenated flat, in ``out``'s shape (all-gather into one)."""
    into(out, torch.cat([v.reshape(-1) for v in value]).view_as(out))


def shaped(out, value) -> None:
    into(out, value.view_as(out))


def joined(out, value) -> None:
    into(out, torch.cat(value).view_as(out))


def objects(out, value) -> None:
    out[:] = value


def objects_on_root(out, value) -> None:
    if value is not None:
        out[:] = value


def first(out, value) -> None:
    out[0] = value
