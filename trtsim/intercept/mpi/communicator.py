"""The MPI stand-in's communicator (``MPI.Intracomm``): identity, object collectives and the
making of communicators; buffer collectives and point-to-point come from their mixins.

Ranks are communicator ranks (``comm.Get_rank()``), as in MPI. Every call goes through
``_coll`` (or the p2p mixin's ``_send``/``_recv``): the rank's Distributed records and guards
it, then the call is computed by trtsim (inproc), run on the backend's real transport (gloo,
nccl, torchrun), or -- under mpirun -- run as the real mpi4py method with the program's own
arguments. ``Split``, ``Dup`` and ``Create`` are collective over their parent and guarded like
any call; the new communicator's id is derived from its parent's and the creation order, the
same on every member. A name of mpi4py's Intracomm that the stand-in does not cover is a
callable raising NotImplementedError naming itself (``names``).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from ..rank_api import Comm, rank_api
from .collectives import BufferCollectives
from .datatypes import ERR_COMM, Exception as MPIException
from .names import MPIObject
from .objects import ObjectCollectives
from .p2p import PointToPoint
from .real import real_runner
from .requests import UNDEFINED
from .run import MPIRank, run_collective
from ...calls.ops import Op


class Intracomm(ObjectCollectives, BufferCollectives, PointToPoint, MPIObject):
    """A communicator of the stand-in (COMM_WORLD, and what Split and Dup return)."""

    _mpi_names = "Intracomm"

    def __init__(self, comm: Comm | None, name: str = "", real=None):
        self._comm = comm  # type: ignore[assignment]  # None: COMM_NULL (see CommCore)
        self._name = name
        self._real = real                 # under mpirun: the real communicator

    # -- identity ------------------------------------------------------------------------
    def _me(self, what: str) -> tuple[MPIRank, int]:
        if self._comm is None:
            raise MPIException(ERR_COMM, f"MPI {what} on MPI.COMM_NULL")
        api = rank_api(f"MPI {what}")
        state = api.extension(MPIRank)
        if state is None:
            raise RuntimeError(f"MPI {what}: mpi4py is not intercepted in this launch "
                               "(launch(..., intercept=('mpi',)))")
        if api.rank not in self._comm.ranks:
            raise ValueError(f"MPI {what}: rank {api.rank} is not in {self.Get_name()}")
        return state, self._comm.ranks.index(api.rank)

    def _real_comm(self, state: MPIRank):
        return self._real

    def Get_rank(self) -> int:
        return self._me("Get_rank")[1]

    def Get_size(self) -> int:
        if self._comm is None:
            raise MPIException(ERR_COMM, "MPI Get_size on MPI.COMM_NULL")
        return len(self._comm.ranks)

    rank = property(Get_rank)
    size = property(Get_size)

    def Get_name(self) -> str:
        return self._name or (self._comm.id if self._comm else "MPI_COMM_NULL")

    def Set_name(self, name: str) -> None:
        self._name = name

    name = property(Get_name, Set_name)

    def Is_inter(self) -> bool:
        return False

    def Is_intra(self) -> bool:
        return True

    is_inter, is_intra, is_topo, topology = False, True, False, UNDEFINED

    def __bool__(self) -> bool:
        return self._comm is not None

    def __eq__(self, other) -> bool:
        return isinstance(other, Intracomm) and other._comm == self._comm

    def __hash__(self) -> int:
        return hash(self._comm)

    def __repr__(self) -> str:
        ranks = list(self._comm.ranks) if self._comm else []
        return f"<trtsim MPI.Intracomm {self.Get_name()} ranks={ranks}>"

    # -- the one path of every collective --------------------------------------------------
    def _coll(self, what: str, op: str, payload, root: int | None = None,
              reduce_op: str | None = None, args: tuple = (),
              finish: Callable[[Any], Any] | None = None, target=None):
        """One guarded collective. ``args``: the method's own arguments, for the real call
        under mpirun (on ``target``, this communicator's real one by default);
        ``finish`` turns trtsim's result into the method's (fills receive buffers)."""
        state, _ = self._me(what)
        api = state.api
        run: Callable[[], Any] | None
        if state.real is not None:
            real_target = target if target is not None else self._real_comm(state)
            run = real_runner(state.real, real_target, what, args)
            return api.collective(self._comm, op, payload, f"MPI.{what}", root, reduce_op, run)
        run = (lambda: run_collective(state, self._comm, op, payload, root, reduce_op)) \
            if api.real else None
        got = api.collective(self._comm, op, payload, f"MPI.{what}", root, reduce_op, run)
        return got if finish is None else finish(got)

    def _root(self, root, what: str) -> int:
        """A rank of this communicator given as anything with ``__index__`` (``np.int64(0)``),
        as mpi4py takes it."""
        try:
            rank = operator.index(root)
        except TypeError:
            raise TypeError(f"MPI {what}: rank {root!r} is not an integer") from None
        if not 0 <= rank < self.Get_size():
            raise ValueError(f"MPI {what}: rank {rank} out of range for {self.Get_size()} ranks")
        return rank

    # -- communicators -------------------------------------------------------------------
    def _derive(self, what: str, mine, suffix: str, members_of, args: tuple = (),
                target=None, on: "Intracomm | None" = None) -> "Intracomm":
        """A collective creation over ``on`` (this communicator by default): every member
        posts ``mine``; ``members_of(posts, me)`` gives the new communicator's global ranks
        (None: this member gets COMM_NULL). Its id is ``on``'s with the creation's number on
        ``on`` (the same on every member: creation is collective over it). Under mpirun the
        real call makes it, and its members are read from the real communicator."""
        on = on or self
        state, me = on._me(what)
        n = state.next_creation(on._comm.id)
        if state.real is not None:
            real = on._coll(what, Op.SPLIT, mine, args=args, target=target)
            if real == state.real.COMM_NULL:
                return COMM_NULL
            ranks = _world_ranks(state.real, real)
        else:
            real, ranks = None, members_of(on._coll(what, Op.SPLIT, mine), me)
            if ranks is None:
                return COMM_NULL
        return Intracomm(Comm(f"{on._comm.id}/{what.lower()}{n}{suffix}", tuple(ranks),
                              "split"), real=real)

    def Split(self, color: int = 0, key: int = 0) -> "Intracomm":
        def members(posts, me):
            if posts[me][0] == UNDEFINED:
                return None
            picked = sorted((k, i) for i, (c, k) in enumerate(posts) if c == color)
            return [self._comm.ranks[i] for _, i in picked]
        return self._derive("Split", (color, key), f"c{color}", members, (color, key))

    def Split_type(self, split_type: int, key: int = 0, info=None) -> "Intracomm":
        """Every rank of a launch shares one host: one communicator, ordered by ``key``.
        Under mpirun the real Split_type decides."""
        state, _ = self._me("Split_type")
        if state.real is None:
            return self.Split(0 if split_type != UNDEFINED else UNDEFINED, key)
        return self._derive("Split_type", (split_type, key), f"t{split_type}", None,
                            (split_type, key))

    def Dup(self, info=None) -> "Intracomm":
        return self._derive("Dup", None, "", lambda posts, me: self._comm.ranks)

    Clone = Dup

    def Get_group(self) -> "Group":
        return Group(self._comm.ranks if self._comm else ())

    group = property(Get_group)

    def Create(self, group: "Group") -> "Intracomm":
        """Collective over this communicator; ranks outside ``group`` get COMM_NULL."""
        wanted = tuple(group.ranks)
        state, _ = self._me("Create")
        args = (group.real(state.real),) if state.real is not None else ()
        return self._derive("Create", wanted, _digest(wanted), lambda posts, me: (
            wanted if self._comm.ranks[me] in wanted else None), args)

    def Create_group(self, group: "Group", tag: int = 0) -> "Intracomm":
        """Collective over the members of ``group`` only (TensorRT-LLM's TP/PP/CP comms)."""
        state, _ = self._me("Create_group")
        wanted = tuple(group.ranks)
        if state.api.rank not in wanted:
            raise ValueError(f"MPI Create_group: rank {state.api.rank} is not in the group")
        # recorded on the members' own communicator: only they take part
        over = Intracomm(Comm(f"{self._comm.id}/group{_digest(wanted)}t{tag}", wanted))
        args = (group.real(state.real), tag) if state.real is not None else ()
        return self._derive("Create_group", None, "", lambda posts, me: wanted, args,
                            target=self._real_comm(state) if state.real is not None else None,
                            on=over)

    def Free(self) -> None:
        state, _ = self._me("Free")
        if self._comm.id in ("mpi:world",) or self._comm.id.startswith("mpi:self"):
            raise MPIException(ERR_COMM, f"MPI Free of {self.Get_name()}")
        if state.real is not None and self._real is not None:
            self._real.Free()
        self._comm = None  # type: ignore[assignment]  # now COMM_NULL
        self._real = None

    free = Free

    def Abort(self, errorcode: int = 0):
        state, _ = self._me("Abort")
        if state.real is not None:
            self._real_comm(state).Abort(errorcode)
        raise SystemExit(f"MPI.Abort({errorcode}) on {self.Get_name()}")


class Group(MPIObject):
    """A rank set (``comm.Get_group()``, ``group.Incl([...])``), in global ranks."""

    _mpi_names = "Group"

    def __init__(self, ranks):
        self.ranks = tuple(ranks)

    def Incl(self, ranks) -> "Group":
        return Group(self.ranks[int(r)] for r in ranks)

    def Excl(self, ranks) -> "Group":
        drop = {int(r) for r in ranks}
        return Group(r for i, r in enumerate(self.ranks) if i not in drop)

    def Get_size(self) -> int:
        return len(self.ranks)

    size = property(Get_size)

    def Free(self) -> None:
        pass

    def real(self, real_mpi):
        """This group in the real library (under mpirun: global ranks are COMM_WORLD's)."""
        return real_mpi.COMM_WORLD.Get_group().Incl(list(self.ranks))


def _world_ranks(real_mpi, comm) -> list[int]:
    """The COMM_WORLD ranks of a real communicator's members, in its rank order."""
    return list(real_mpi.Group.Translate_ranks(comm.Get_group(), list(range(comm.Get_size())),
                                               real_mpi.COMM_WORLD.Get_group()))


def _digest(ranks: tuple[int, ...]) -> str:
    return "-".join(map(str, ranks))


COMM_NULL = Intracomm(None)
