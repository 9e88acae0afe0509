"""The rank a piece of code runs for: one Distributed per rank, bound in the rank's context.

Inproc ranks are greenlets or threads of one process, each with its own ``contextvars``
context, so a context variable tells them apart; a process rank binds it once. Code that has
no ``dist`` in hand (an iteration marker, intercepted torch.distributed or MPI calls) asks
``current()``.

A thread that no Python code started with the rank's context -- autograd's device threads on
CUDA, which run a backward collective, or a thread the program starts -- has an empty
context. In a process that is one rank (spawned, torchrun, mpirun) that thread still works for
the rank: the process's rank is its answer. Inproc ranks share a process, so there a thread of
no context stays no rank's (its calls are not guarded).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .distributed import Distributed

_RANK: ContextVar[Distributed | None] = ContextVar("trtsim_rank", default=None)
# The process's one rank, for threads of an empty context: [] unless this process is one rank.
_PROCESS_RANK: list[Distributed] = []


def bind(dist: Distributed, whole_process: bool = False) -> None:
    """Make ``dist`` the current rank's communicator for the rest of this context, and with
    ``whole_process`` (a process that is this one rank) for every thread of no rank."""
    _RANK.set(dist)
    if whole_process:
        _PROCESS_RANK[:] = [dist]


def unbind() -> None:
    """No rank is current in this context, nor in this process (its rank has left): nothing
    here holds the rank's Distributed, so what it holds (a torchrun rank's process groups)
    can be freed before the interpreter ends."""
    _RANK.set(None)
    _PROCESS_RANK.clear()


def current() -> Distributed | None:
    """The current rank's Distributed, or None outside a launched rank."""
    dist = _RANK.get()
    if dist is None and _PROCESS_RANK:
        return _PROCESS_RANK[0]
    return dist
