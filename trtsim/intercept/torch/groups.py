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

from ...calls.records import kind_made_as
from ..rank_api import Comm, rank_api
from . import module_trail

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
        module_trail.attach(api)             # backward collectives name their module

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
    """The kind of a group made where trtsim did not see it (``records.kind_made_as``)."""
    return kind_made_as(getattr(group, "group_desc", "") or "")


def state(what: str) -> TorchRank:
    api = rank_api(what)
    torch_state = api.extension(TorchRank)
    if torch_state is None:
        raise RuntimeError(f"{what}: torch.distributed is not intercepted in this launch "
                           "(launch(..., intercept=('torch',)))")
    return torch_state
