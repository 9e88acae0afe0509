"""torch.distributed's group and query functions inside launched ranks: ``init_process_group``
joins the launch's world, ``new_group`` makes a real group after a guarded world barrier (a
rank that skips it hangs the others), ``new_subgroups`` makes each through ``new_group``, and
the queries answer from the rank's ``TorchRank`` (``groups``)."""

from __future__ import annotations

import torch.distributed as tdist

from ..rank_api import Comm
from ...calls.ops import Op
from .groups import DEFAULT_BACKEND, state


def make_group_functions(real):
    """The group and query functions, bound to the real torch.distributed ``real``."""
    new_group = _new_group_function(real)
    return {f.__name__: f for f in (*_init_functions(real), new_group,
                                     _new_subgroups_function(new_group), *_queries(real))}


def _init_functions(real):
    def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1,
                           rank=-1, store=None, group_name="", pg_options=None, device_id=None,
                           **_):
        st = state("init_process_group")
        world = len(st.world.ranks)
        if world_size not in (-1, world):
            raise ValueError(f"init_process_group(world_size={world_size}): this launch has "
                             f"{world} ranks")
        if rank not in (-1, st.api.rank):
            raise ValueError(f"init_process_group(rank={rank}): this process is rank "
                             f"{st.api.rank} of the launch")
        st.learn(tdist.GroupMember.WORLD, st.world, backend)
        st.initialized = True             # joins the launch's world (torchrun's env:// too)

    def is_initialized():
        return state("is_initialized").initialized

    def destroy_process_group(group=None):
        st = state("destroy_process_group")
        if group is not None and group is not tdist.GroupMember.WORLD:
            st.groups.pop(id(group), None)
            real.destroy_process_group(group)
        elif group is None:
            st.initialized = False        # trtsim's default group stays for its teardown

    return init_process_group, is_initialized, destroy_process_group


def _new_group_function(real):
    def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
                  use_local_synchronization=False, group_desc=None, device_id=None,
                  sort_ranks=True):
        st = state("new_group")
        members = tuple(st.world.ranks if ranks is None else
                        (sorted(ranks) if sort_ranks else ranks))
        for r in members:
            st.world.index(r, "new_group: rank")
        comm = Comm(st.names.next(members, use_local_synchronization), members, "split")
        inproc = st.inproc
        if inproc is None:
            backend = _usable(backend, st.api.dist)

        def real_group():
            return real.new_group(list(members), timeout=timeout,
                                  backend=backend if inproc is None else inproc.backend,
                                  pg_options=pg_options if inproc is None else None,
                                  use_local_synchronization=use_local_synchronization,
                                  group_desc=group_desc)
        # new_group is collective over the world: a rank that skips it hangs the others
        where = comm if use_local_synchronization else st.world
        if st.api.rank in where.ranks:
            if st.api.real:
                made = st.api.collective(where, Op.BARRIER, None, "torch.new_group",
                                         run=real_group)
            else:                          # inproc: the guard first, then this rank's group
                st.api.collective(where, Op.BARRIER, None, "torch.new_group")
                made = real_group()
        else:
            made = real_group()
        if made is not None and made is not tdist.GroupMember.NON_GROUP_MEMBER:
            st.learn(made, comm, backend)
        return made

    return new_group


def _new_subgroups_function(new_group):
    def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                      group_desc=None):
        """Every rank's subgroup of ``group_size`` consecutive ranks, made with ``new_group``
        (torch's own calls ``new_group`` by its module name, past the interception)."""
        st = state("new_subgroups")
        world = st.comm(group, "new_subgroups").ranks
        size = group_size if group_size is not None else _local_size()
        if size <= 0 or len(world) % size:
            raise ValueError(f"new_subgroups(group_size={group_size}): the group of "
                             f"{len(world)} ranks does not divide into groups of {size}")
        mine, made = None, []
        for start in range(0, len(world), size):
            ranks = list(world[start:start + size])
            sub = new_group(ranks, timeout=timeout, backend=backend, pg_options=pg_options,
                            group_desc=group_desc)
            made.append(sub)
            if st.api.rank in ranks:
                mine = sub
        return mine, made

    return new_subgroups


def _queries(real):
    def get_rank(group=None):
        st = state("get_rank")
        comm = st.comm(group, "get_rank")
        return comm.ranks.index(st.api.rank) if st.api.rank in comm.ranks else -1

    def get_world_size(group=None):
        return len(state("get_world_size").comm(group, "get_world_size").ranks)

    def get_process_group_ranks(group):
        return list(state("get_process_group_ranks").comm(group, "get_process_group_ranks").ranks)

    def get_group_rank(group, global_rank):
        return state("get_group_rank").comm(group, "get_group_rank").index(global_rank)

    def get_global_rank(group, group_rank):
        return state("get_global_rank").comm(group, "get_global_rank").ranks[group_rank]

    def get_backend(group=None):
        st = state("get_backend")
        if st.api.real:
            return real.get_backend(group)
        st.comm(group, "get_backend")
        asked = st.backend_asked(tdist.GroupMember.WORLD if group is None else group)
        return tdist.Backend(_cpu_part(asked or DEFAULT_BACKEND))

    return (get_rank, get_world_size, get_process_group_ranks, get_group_rank,
            get_global_rank, get_backend)


def _cpu_part(backend) -> str:
    """``cuda:nccl,cpu:gloo`` -> ``gloo``: what an inproc group computes on is the host."""
    text = str(backend)
    for part in text.split(","):
        device, sep, name = part.partition(":")
        if sep and device.strip() == "cpu":
            return name.strip()
    return text.split(":")[-1] if ":" in text else text


def _local_size() -> int:
    import torch
    return torch.cuda.device_count() if torch.cuda.is_available() else 1


def _usable(backend, dist):
    """``backend`` as this machine can make it: a ``cuda:nccl,cpu:gloo`` pair where NCCL or
    CUDA is missing becomes its CPU part, with a note in the launch's results."""
    import torch
    text = str(backend) if backend is not None else ""
    if "nccl" not in text or "," not in text:
        return backend
    if tdist.is_nccl_available() and torch.cuda.is_available():
        return backend
    cpu = _cpu_part(text)
    dist.note(f"new_group(backend={text!r}): no NCCL or CUDA here, so its CPU part "
              f"({cpu}) made the group")
    return cpu
