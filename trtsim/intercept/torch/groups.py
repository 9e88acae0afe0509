"""torch.distributed's process groups and queries inside launched ranks.

Every group is a real torch ``ProcessGroup``, and trtsim initialised the default process
group before the rank program ran, so ``init_process_group`` joins it (a no-op, as torch code
that finds the group initialised expects: device meshes, for one) and ``new_group`` creates
a real group. Processes: a gloo or NCCL group. Inproc: torch's own ``init_process_group``
and ``new_group`` run in the rank's own c10d world (``backends.inproc.c10d_world``) with
trtsim's inproc backend (``backends.inproc.c10d_group``), whatever backend the program names;
the group remembers the name it asked for, which ``get_backend`` answers. ``new_group`` is
collective over the world (a rank that skips it hangs the others), so it is guarded as a
world barrier first (one made with ``use_local_synchronization=True``: a barrier of its
members). The guard names a group by an id every member agrees on (``GroupNames``), or by
torch's group name for groups made where trtsim does not see it (device meshes:
``torch:pgNAME``).
"""

from __future__ import annotations

import hashlib

import torch.distributed as tdist

from ..rank_api import Comm, rank_api
from ...calls.ops import Op

WORLD_ID = "torch:world"
DEFAULT_BACKEND = "gloo"       # what ``get_backend`` says of an inproc group made without one


class GroupNames:
    """The ids of the groups one rank makes with ``new_group``, the same on every member.

    A group every rank makes (``new_group`` is collective over the world) is numbered in the
    order of those calls, ``torch:N``, as torch numbers its names (``group_count``, the world
    being 0). A group made with ``use_local_synchronization=True`` is made by its
    members only, so a count of all calls would differ between ranks (and shift the ids of
    every later group); torch names it by a hash of its ranks and how many groups the rank
    knows, which members agree on only while they made the same groups. Here it is named by
    its member list and how many groups of exactly those members were made before it, which
    every member agrees on (each makes every group of that list), ``torch:local.HASH.K``;
    the hash keeps the id short for a group of any size."""

    def __init__(self):
        self.world_groups = 0
        self.local_groups: dict[tuple[int, ...], int] = {}

    def next(self, members: tuple[int, ...], local: bool) -> str:
        if not local:
            self.world_groups += 1
            return f"torch:{self.world_groups}"
        k = self.local_groups.get(members, 0)
        self.local_groups[members] = k + 1
        digest = hashlib.sha1(",".join(map(str, members)).encode()).hexdigest()[:12]
        return f"torch:local.{digest}.{k}"


class TorchRank:
    """One rank's torch.distributed state: initialised or not, the groups it knows.

    ``inproc`` is what an inproc launch provides (None on the process backends, whose
    processes have torch's own state); ``c10d`` the rank's own c10d world there."""

    def __init__(self, api, real, inproc=None):
        self.api, self.real, self.inproc = api, real, inproc
        self.initialized = api.real       # processes: trtsim initialised torch already
        self.names = GroupNames()
        self.groups: dict[int, tuple] = {}   # id(ProcessGroup) -> (group, Comm, backend asked)
        self.world = Comm(WORLD_ID, api.world)
        self.c10d = inproc.new_world() if inproc is not None else None
        self.op_label: str | None = None     # inproc: the functional op a group method serves

    def labelled(self, label: str, op, args, kwargs):
        """Run ``op`` with ``label`` naming the calls the inproc group's methods guard for it
        (a functional collective's op, so both backends record the same label)."""
        outer, self.op_label = self.op_label, label
        try:
            return op(*args, **kwargs)
        finally:
            self.op_label = outer

    def start(self) -> None:
        """Inproc: this rank's default process group, in its own c10d world (the rank's
        context must be current: the world is looked up through it)."""
        if self.inproc is not None:
            self.real.init_process_group(self.inproc.backend, store=self.inproc.store,
                                         rank=self.api.rank, world_size=len(self.world.ranks))

    def comm(self, group, what: str) -> Comm:
        """The Comm of a ``group`` argument (None: the world)."""
        if not self.initialized:
            raise ValueError(f"{what}: Default process group has not been initialized, "
                             "please make sure to call init_process_group.")
        if group is None or group is tdist.GroupMember.WORLD:
            return self.world
        known = self.groups.get(id(group))
        if known is None or known[0] is not group:      # made outside trtsim's view
            comm = Comm(f"torch:pg{group.group_name}",
                        tuple(self.real.get_process_group_ranks(group)), _made_as(group))
            known = self.groups[id(group)] = (group, comm, None)
        return known[1]

    def learn(self, group, comm: Comm, backend) -> None:
        self.groups[id(group)] = (group, comm, backend)

    def backend_asked(self, group):
        """The backend the program named for ``group`` (inproc), or None."""
        known = self.groups.get(id(group))
        return known[2] if known is not None and known[0] is group else None


def _made_as(group) -> str:
    """The kind of a group made where trtsim did not see it: a device mesh names each of its
    groups ``mesh_<dimension>`` (``mesh dp``); torch's own ``new_group`` calls, ``split``."""
    desc = getattr(group, "group_desc", "") or ""
    if desc.startswith("mesh_") and len(desc) > len("mesh_"):
        return f"mesh {desc[len('mesh_'):]}"
    return "split"


def state(what: str) -> TorchRank:
    api = rank_api(what)
    torch_state = api.extension(TorchRank)
    if torch_state is None:
        raise RuntimeError(f"{what}: torch.distributed is not intercepted in this launch "
                           "(launch(..., intercept=('torch',)))")
    return torch_state


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
