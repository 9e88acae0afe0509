"""Interception: unmodified code that calls torch.distributed or mpi4py runs guarded.

``launch(..., intercept=("torch", "mpi"))`` installs, for the length of the launch (inproc:
in this process; processes: in every rank before it imports the rank program), guarded
stand-ins for torch.distributed's functions (``torch/``) and a stand-in ``mpi4py.MPI``
module (``mpi/``). Every call is recorded and checked like a Distributed call, on the
communicator it names (``rank_api``: the seam to the rank's Distributed): a torch process
group, an MPI communicator. On the process backends the real collective runs underneath,
after the guard; on inproc trtsim computes it. May import ``comm``, ``guard`` and ``calls``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable

from .rank_api import RankAPI


@dataclass(frozen=True)
class InprocTorch:
    """What an inproc launch gives intercepted torch.distributed: the c10d backend its
    groups are made with, the launch's store, and a fresh c10d world for each rank."""

    backend: str
    store: Any
    new_world: Callable[[], Any]


class Interception:
    """What a launch intercepts; ``attach`` gives one rank its per-API state."""

    def __init__(self, names: tuple[str, ...], real_torch=None,
                 inproc: InprocTorch | None = None):
        self.names, self.real_torch, self.inproc = names, real_torch, inproc

    def standins(self) -> dict[int, object]:
        """id(real function) -> stand-in, for names bound before the launch."""
        if "torch" not in self.names:
            return {}
        from .torch.shim import standins
        return standins()

    def attach(self, dist) -> None:
        api = RankAPI.of(dist)
        if "torch" in self.names:
            from .torch.groups import TorchRank
            torch_rank = TorchRank(api, self.real_torch, self.inproc)
            api.attach(torch_rank)
            torch_rank.start()
        if "mpi" in self.names:
            from .mpi.standin import MPIRank
            api.attach(MPIRank(api))


@contextlib.contextmanager
def installed(names: tuple[str, ...], inproc: InprocTorch | None = None):
    """The stand-ins of ``names`` installed inside the block; yields the Interception."""
    with contextlib.ExitStack() as stack:
        real = None
        if "torch" in names:
            from .torch.shim import installed as torch_installed
            real = stack.enter_context(torch_installed())
        if "mpi" in names:
            from .mpi.standin import installed as mpi_installed
            stack.enter_context(mpi_installed())
        yield Interception(tuple(names), real, inproc)


