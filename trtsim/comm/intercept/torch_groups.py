"""torch.distributed's process groups and queries inside launched ranks.

Inproc: every rank lives in this process, so groups are trtsim's own handles (``Group``) and
the queries answer for the current rank. Processes: trtsim initialised the default process
group before the rank program ran, so ``init_process_group`` joins it (a no-op) and
``new_group`` creates a real group, which the guard learns by its creation order (the same on
every rank: torch creates groups collectively over the world).
"""

from __future__ import annotations

import torch.distributed as tdist

from .comms import Comm, rank_api

WORLD_ID = "torch:world"


class Group:
    """A process group of the inproc backend: its ranks, its id, torch's ProcessGroup API."""

    def __init__(self, comm: Comm):
        self.comm = comm

    def rank(self) -> int:
        api = rank_api("ProcessGroup.rank")
        return self.comm.ranks.index(api.rank) if api.rank in self.comm.ranks else -1

    def size(self) -> int:
        return len(self.comm.ranks)

    def __repr__(self) -> str:
        return f"<trtsim process group {self.comm.id} ranks={list(self.comm.ranks)}>"


class TorchRank:
    """One rank's torch.distributed state: initialised or not, the groups it created."""

    def __init__(self, api, real):
        self.api, self.real = api, real
        self.initialized = api.real       # processes: trtsim initialised torch already
        self.created = 0
        self.real_groups: dict[int, Comm] = {}      # id(ProcessGroup) -> Comm (processes)
        self.world = Comm(WORLD_ID, api.world)

    def comm(self, group, what: str) -> Comm:
        """The Comm of a ``group`` argument (None: the world)."""
        if not self.initialized:
            raise ValueError(f"{what}: Default process group has not been initialized, "
                             "please make sure to call init_process_group.")
        if group is None or group is tdist.GroupMember.WORLD:
            return self.world
        if isinstance(group, Group):
            return group.comm
        found = self.real_groups.get(id(group))
        if found is None:                 # made outside trtsim's view: known by its ranks
            ranks = tuple(self.real.get_process_group_ranks(group))
            found = self.real_groups[id(group)] = Comm(f"torch:pg{ranks}", ranks)
        return found

    def handle(self, comm: Comm):
        return tdist.GroupMember.WORLD if comm.id == WORLD_ID and self.api.real else Group(comm)


def state(what: str) -> TorchRank:
    api = rank_api(what)
    torch_state = api.state.get("torch")
    if torch_state is None:
        raise RuntimeError(f"{what}: torch.distributed is not intercepted in this launch "
                           "(launch(..., intercept=('torch',)))")
    return torch_state


def make_group_functions(real):
    """The group and query functions, bound to the real torch.distributed ``real``."""

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
        st.initialized = True             # joins the launch's world (torchrun's env:// too)

    def is_initialized():
        return state("is_initialized").initialized

    def destroy_process_group(group=None):
        st = state("destroy_process_group")
        if group is not None and st.api.real and not isinstance(group, Group) \
                and group is not tdist.GroupMember.WORLD:
            st.real_groups.pop(id(group), None)
            real.destroy_process_group(group)
        elif group is None:
            st.initialized = False        # trtsim's own default group stays for its teardown

    def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
                  use_local_synchronization=False, group_desc=None, device_id=None,
                  sort_ranks=True):
        st = state("new_group")
        members = tuple(st.world.ranks if ranks is None else
                        (sorted(ranks) if sort_ranks else ranks))
        for r in members:
            st.world.index(r, "new_group: rank")
        st.created += 1
        comm = Comm(f"torch:{st.created}", members)
        def real_group():
            return real.new_group(list(members), timeout=timeout, backend=backend,
                                  pg_options=pg_options,
                                  use_local_synchronization=use_local_synchronization,
                                  group_desc=group_desc)
        run = real_group if st.api.real else None
        # new_group is collective over the world: a rank that skips it hangs the others
        where = comm if use_local_synchronization else st.world
        if st.api.rank not in where.ranks:
            return run() if run else tdist.GroupMember.NON_GROUP_MEMBER
        made = st.api.collective(where, "barrier", None, "torch.new_group", run=run)
        if st.api.real:
            if st.api.rank in members:
                st.real_groups[id(made)] = comm
            return made
        return Group(comm) if st.api.rank in members else tdist.GroupMember.NON_GROUP_MEMBER

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
            return real.get_backend(None if isinstance(group, Group) else group)
        st.comm(group, "get_backend")
        return tdist.Backend("gloo")

    return {f.__name__: f for f in (init_process_group, is_initialized, destroy_process_group,
                                     new_group, get_rank, get_world_size,
                                     get_process_group_ranks, get_group_rank, get_global_rank,
                                     get_backend)}
